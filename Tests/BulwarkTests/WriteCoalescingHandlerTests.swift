import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import Bulwark

/// The HTTP/2 connection's write gathering on an `EmbeddedChannel`, whose event loop runs queued tasks only when the
/// test says so: what one turn of the loop writes leaves in one buffer and one flush, in order.
@Suite("Write coalescing: one buffer and one flush per event-loop turn")
struct WriteCoalescingHandlerTests {
    func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WriteCoalescingHandler())
        return channel
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
}
