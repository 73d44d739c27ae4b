import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import Bulwark

/// The HTTP/2 connection's write gathering on an `EmbeddedChannel`, whose event loop runs queued tasks only when the
/// test says so: what is written between two flushes leaves in one buffer, in order, and a flush leaves at once,
/// without a task on the event loop.
@Suite("Write coalescing: one buffer per flush, and every flush at once")
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

    @Test func theWritesBeforeAFlushLeaveAsOneBuffer() throws {
        let channel = try self.channel()
        let succeeded = NIOLockedValueBox(0)
        for text in ["HEADERS", "DATA", "WINDOW_UPDATE"] {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenSuccess { succeeded.withLockedValue { $0 += 1 } }
            channel.write(ByteBuffer(string: text), promise: promise)
        }
        #expect(try self.outbound(channel).isEmpty, "nothing leaves before the flush")
        channel.flush()
        #expect(try self.outbound(channel) == ["HEADERSDATAWINDOW_UPDATE"])
        #expect(succeeded.withLockedValue { $0 } == 3, "every write's promise completes")
        _ = try channel.finish()
    }

    /// The requests of many streams on one connection: each flush leaves when it is made, not at the end of the event
    /// loop's turn. Deferring them made client and server take turns (see the handler's description).
    @Test func everyFlushLeavesAtOnceWithoutATask() throws {
        let channel = try self.channel()
        for text in ["stream-1", "stream-3", "stream-5"] {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            let succeeded = NIOLockedValueBox(false)
            promise.futureResult.whenSuccess { succeeded.withLockedValue { $0 = true } }
            channel.writeAndFlush(ByteBuffer(string: text), promise: promise)
            #expect(try self.outbound(channel) == [text], "written before the event loop runs any task")
            #expect(succeeded.withLockedValue { $0 })
        }
        _ = try channel.finish()
    }

    @Test func aLargeBufferIsNotCopiedAndKeepsItsPlace() throws {
        let channel = try self.channel()
        let large = String(repeating: "d", count: WriteCoalescingHandler.maximumCopiedBytes + 1)
        channel.write(ByteBuffer(string: "a"), promise: nil)
        channel.write(ByteBuffer(string: "b"), promise: nil)
        channel.write(ByteBuffer(string: large), promise: nil)
        channel.writeAndFlush(ByteBuffer(string: "c"), promise: nil)
        #expect(try self.outbound(channel) == ["ab", large, "c"])
        _ = try channel.finish()
    }

    @Test func gatheringStopsAtOneRecordsWorth() throws {
        let channel = try self.channel()
        let chunk = String(repeating: "x", count: 4000)
        for _ in 0..<5 { channel.write(ByteBuffer(string: chunk), promise: nil) }
        channel.flush()
        let sizes = try self.outbound(channel).map(\.utf8.count)
        #expect(sizes == [16000, 4000])
        _ = try channel.finish()
    }

    @Test func aCloseWritesWhatWasGatheredFirst() throws {
        let channel = try self.channel()
        let written = channel.eventLoop.makePromise(of: Void.self)
        let succeeded = NIOLockedValueBox(false)
        written.futureResult.whenSuccess { succeeded.withLockedValue { $0 = true } }
        channel.write(ByteBuffer(string: "GOAWAY"), promise: written)
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["GOAWAY"])
        #expect(succeeded.withLockedValue { $0 })
    }
}
