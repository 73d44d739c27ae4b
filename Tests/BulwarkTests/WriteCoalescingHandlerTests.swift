import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import Bulwark

/// The HTTP/2 connection's write gathering on an `EmbeddedChannel`, whose event loop runs queued tasks only when the
/// test says so: while several streams are open, what one turn of the loop writes leaves in one buffer and one flush,
/// in order; with one stream (or none) a flush leaves at once.
@Suite("Write coalescing: one buffer and one flush per event-loop turn")
struct WriteCoalescingHandlerTests {
    /// A channel with the handler, `streams` streams counted open on it (two by default: writes are gathered).
    func channel(streams: Int = 2) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let handler = WriteCoalescingHandler()
        try channel.pipeline.syncOperations.addHandler(handler)
        for _ in 0..<streams { handler.streamOpened() }
        return channel
    }

    func handler(_ channel: EmbeddedChannel) throws -> WriteCoalescingHandler {
        try channel.pipeline.syncOperations.handler(type: WriteCoalescingHandler.self)
    }

    func outbound(_ channel: EmbeddedChannel) throws -> [String] {
        var strings: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            strings.append(String(buffer: buffer))
        }
        return strings
    }

    @Test func theWritesOfOneTurnLeaveAsOneBufferAtTheEndOfTheTurn() throws {
        let channel = try self.channel()
        let succeeded = NIOLockedValueBox(0)
        for text in ["HEADERS-1", "HEADERS-2", "HEADERS-3"] {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenSuccess { succeeded.withLockedValue { $0 += 1 } }
            channel.writeAndFlush(ByteBuffer(string: text), promise: promise)
        }
        #expect(try self.outbound(channel).isEmpty, "nothing leaves before the turn ends")
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["HEADERS-1HEADERS-2HEADERS-3"])
        #expect(succeeded.withLockedValue { $0 } == 3, "every write's promise completes")
        _ = try channel.finish()
    }

    @Test func eachTurnFlushesWhatItWrote() throws {
        let channel = try self.channel()
        channel.writeAndFlush(ByteBuffer(string: "first"), promise: nil)
        channel.embeddedEventLoop.run()
        channel.writeAndFlush(ByteBuffer(string: "second"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["first", "second"])
        _ = try channel.finish()
    }

    @Test func aLargeBufferIsNotCopiedAndKeepsItsPlace() throws {
        let channel = try self.channel()
        let large = String(repeating: "d", count: WriteCoalescingHandler.maximumCopiedBytes + 1)
        channel.write(ByteBuffer(string: "a"), promise: nil)
        channel.write(ByteBuffer(string: "b"), promise: nil)
        channel.write(ByteBuffer(string: large), promise: nil)
        channel.writeAndFlush(ByteBuffer(string: "c"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["ab", large, "c"])
        _ = try channel.finish()
    }

    @Test func gatheringStopsAtOneRecordsWorth() throws {
        let channel = try self.channel()
        let chunk = String(repeating: "x", count: 4000)
        for _ in 0..<5 { channel.write(ByteBuffer(string: chunk), promise: nil) }
        channel.flush()
        channel.embeddedEventLoop.run()
        let sizes = try self.outbound(channel).map(\.utf8.count)
        #expect(sizes == [16000, 4000])
        _ = try channel.finish()
    }

    @Test func aCloseWritesWhatWasGatheredFirst() throws {
        let channel = try self.channel()
        let written = channel.eventLoop.makePromise(of: Void.self)
        let succeeded = NIOLockedValueBox(false)
        written.futureResult.whenSuccess { succeeded.withLockedValue { $0 = true } }
        channel.writeAndFlush(ByteBuffer(string: "GOAWAY"), promise: written)
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["GOAWAY"])
        #expect(succeeded.withLockedValue { $0 })
    }

    /// One request at a time (h2-c1): nothing else can join the flush, so it leaves at once, without a task on the
    /// event loop and the extra turn that costs.
    @Test func withOneStreamAFlushLeavesAtOnce() throws {
        let channel = try self.channel(streams: 1)
        let succeeded = NIOLockedValueBox(false)
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenSuccess { succeeded.withLockedValue { $0 = true } }
        channel.writeAndFlush(ByteBuffer(string: "HEADERS-1"), promise: promise)
        #expect(try self.outbound(channel) == ["HEADERS-1"], "the flush is not deferred")
        #expect(succeeded.withLockedValue { $0 })
        _ = try channel.finish()
    }

    @Test func withNoStreamTheConnectionsOwnFramesLeaveAtOnce() throws {
        let channel = try self.channel(streams: 0)
        channel.write(ByteBuffer(string: "PREFACE"), promise: nil)
        channel.writeAndFlush(ByteBuffer(string: "SETTINGS"), promise: nil)
        #expect(try self.outbound(channel) == ["PREFACESETTINGS"], "gathered up to the flush, then written at once")
        _ = try channel.finish()
    }

    /// The rule follows the count: a second stream starts the gathering, its close ends it.
    @Test func gatheringFollowsTheNumberOfOpenStreams() throws {
        let channel = try self.channel(streams: 1)
        let handler = try self.handler(channel)
        channel.writeAndFlush(ByteBuffer(string: "one"), promise: nil)
        #expect(try self.outbound(channel) == ["one"])
        handler.streamOpened()
        #expect(handler.openStreams == 2)
        channel.writeAndFlush(ByteBuffer(string: "two-a"), promise: nil)
        channel.writeAndFlush(ByteBuffer(string: "two-b"), promise: nil)
        #expect(try self.outbound(channel).isEmpty, "two streams: deferred to the end of the turn")
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["two-atwo-b"])
        handler.streamClosed()
        channel.writeAndFlush(ByteBuffer(string: "three"), promise: nil)
        #expect(try self.outbound(channel) == ["three"], "one stream again: at once")
        _ = try channel.finish()
    }

    /// A flush already deferred stays the one that writes, even when a stream closes before the turn ends: the order
    /// of the bytes is kept.
    @Test func aDeferredFlushKeepsTheOrderWhenTheCountDrops() throws {
        let channel = try self.channel(streams: 2)
        let handler = try self.handler(channel)
        channel.writeAndFlush(ByteBuffer(string: "a"), promise: nil)
        handler.streamClosed()
        channel.writeAndFlush(ByteBuffer(string: "b"), promise: nil)
        #expect(try self.outbound(channel).isEmpty)
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["ab"])
        _ = try channel.finish()
    }

    /// h2-c32 when the server answered every open request at once: all streams ended together, and the first new
    /// request finds no other stream open. More than one stream ended since the last flush, so it waits for the requests
    /// the other tasks are about to start; with one ended (one request at a time) it does not.
    @Test func aBatchOfEndedStreamsDefersTheNextFlush() throws {
        let channel = try self.channel(streams: 3)
        let handler = try self.handler(channel)
        for _ in 0..<3 { handler.streamClosed() }
        handler.streamOpened()
        #expect(handler.openStreams == 1)
        channel.writeAndFlush(ByteBuffer(string: "first"), promise: nil)
        handler.streamOpened()
        channel.writeAndFlush(ByteBuffer(string: "second"), promise: nil)
        #expect(try self.outbound(channel).isEmpty, "deferred: three streams ended since the last flush")
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["firstsecond"])
        #expect(handler.streamsEndedSinceFlush == 0)
        handler.streamClosed()
        handler.streamClosed()
        handler.streamOpened()
        channel.writeAndFlush(ByteBuffer(string: "third"), promise: nil)
        #expect(try self.outbound(channel).isEmpty, "two ended since the last flush")
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["third"])
        handler.streamClosed()
        handler.streamOpened()
        channel.writeAndFlush(ByteBuffer(string: "fourth"), promise: nil)
        #expect(try self.outbound(channel) == ["fourth"], "one request at a time: at once")
        _ = try channel.finish()
    }
}
