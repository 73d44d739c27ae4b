import NIOCore
import NIOEmbedded
import Testing

@testable import Bulwark

/// The flushes of the handshake's last read, held to its end on an `EmbeddedChannel`: what the TLS handler (here a
/// stand-in above the coalescer) flushes while it reads leaves with one flush when the read ends, and nothing else is
/// held or lost.
@Suite("Handshake flush coalescing: the Finished and the first request in one write")
struct HandshakeFlushCoalescerTests {
    /// Counts the flushes that reach the socket's side.
    final class FlushCounter: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var flushes = 0

        func flush(context: ChannelHandlerContext) {
            self.flushes += 1
            context.flush()
        }
    }

    /// Writes and flushes each of `replies` when it reads, as NIOSSL writes the Finished and the handshake's
    /// completion callback the request.
    final class ReplyOnRead: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let replies: [String]

        init(_ replies: [String]) { self.replies = replies }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            for reply in self.replies {
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: reply)), promise: nil)
            }
        }
    }

    struct Pipeline {
        let channel = EmbeddedChannel()
        let counter = FlushCounter()
        let coalescer = HandshakeFlushCoalescer()

        init(replies: [String]) throws {
            try self.channel.pipeline.syncOperations.addHandler(self.counter)
            try self.channel.pipeline.syncOperations.addHandler(self.coalescer)
            try self.channel.pipeline.syncOperations.addHandler(ReplyOnRead(replies))
        }

        func outbound() throws -> [String] {
            var strings: [String] = []
            while let buffer = try self.channel.readOutbound(as: ByteBuffer.self) {
                strings.append(String(buffer: buffer))
            }
            return strings
        }

        func hasCoalescer() -> Bool {
            (try? self.channel.pipeline.syncOperations.context(handlerType: HandshakeFlushCoalescer.self)) != nil
        }
    }

    @Test func whatIsFlushedDuringAReadLeavesWithOneFlushAtItsEnd() throws {
        let pipeline = try Pipeline(replies: ["finished", "request"])
        pipeline.channel.pipeline.fireChannelRead(ByteBuffer(string: "server flight, part 1"))
        pipeline.channel.pipeline.fireChannelRead(ByteBuffer(string: "server flight, part 2"))
        #expect(try pipeline.outbound().isEmpty, "nothing leaves during the read")
        #expect(pipeline.counter.flushes == 0)
        pipeline.coalescer.handshakeCompleted()
        pipeline.channel.pipeline.fireChannelReadComplete()
        #expect(try pipeline.outbound() == ["finished", "request", "finished", "request"])
        #expect(pipeline.counter.flushes == 1)
        #expect(!pipeline.hasCoalescer(), "removed at the end of the read in which the handshake completed")
        _ = try pipeline.channel.finish()
    }

    @Test func aFlushOutsideAReadLeavesAtOnce() throws {
        let pipeline = try Pipeline(replies: [])
        pipeline.channel.writeAndFlush(ByteBuffer(string: "client hello"), promise: nil)
        #expect(try pipeline.outbound() == ["client hello"])
        #expect(pipeline.counter.flushes == 1)
        // A read before the handshake completes ends with the coalescer still there.
        pipeline.channel.pipeline.fireChannelRead(ByteBuffer(string: "hello retry request"))
        pipeline.channel.pipeline.fireChannelReadComplete()
        #expect(pipeline.hasCoalescer())
        pipeline.channel.writeAndFlush(ByteBuffer(string: "second hello"), promise: nil)
        #expect(try pipeline.outbound() == ["second hello"])
        _ = try pipeline.channel.finish()
    }

    /// A TLS handler that fails the handshake writes an alert and closes the channel within the read: the alert is
    /// flushed before the close, so the server learns why.
    @Test func aCloseDuringAReadFlushesWhatIsHeldFirst() throws {
        let pipeline = try Pipeline(replies: ["alert"])
        pipeline.channel.pipeline.fireChannelRead(ByteBuffer(string: "bad certificate"))
        #expect(try pipeline.outbound().isEmpty)
        pipeline.channel.close(promise: nil)
        #expect(try pipeline.outbound() == ["alert"])
        #expect(pipeline.counter.flushes == 1)
    }

    /// Once removed, an established connection's flushes during reads (HTTP/2 acknowledgements) leave at once.
    @Test func afterTheHandshakeFlushesDuringReadsLeaveAtOnce() throws {
        let pipeline = try Pipeline(replies: ["ack"])
        pipeline.coalescer.handshakeCompleted()
        pipeline.channel.pipeline.fireChannelRead(ByteBuffer(string: "last flight"))
        pipeline.channel.pipeline.fireChannelReadComplete()
        #expect(try pipeline.outbound() == ["ack"])
        pipeline.channel.pipeline.fireChannelRead(ByteBuffer(string: "settings"))
        #expect(try pipeline.outbound() == ["ack"], "flushed during the read, not held to its end")
        #expect(pipeline.counter.flushes == 2)
        _ = try pipeline.channel.finish()
    }

    /// NIOSSL resumes the handshake in a task of its own once verification completed: the Finished and the request
    /// flushed in that task leave with one flush when the handshake's callbacks have run.
    @Test func afterVerificationTheFinishedAndTheRequestLeaveTogether() throws {
        let pipeline = try Pipeline(replies: [])
        pipeline.coalescer.verificationCompleted()
        pipeline.channel.writeAndFlush(ByteBuffer(string: "finished"), promise: nil)
        pipeline.channel.writeAndFlush(ByteBuffer(string: "request"), promise: nil)
        #expect(try pipeline.outbound().isEmpty, "held until the handshake's callbacks ran")
        pipeline.coalescer.handshakeCompleted()
        #expect(try pipeline.outbound() == ["finished", "request"])
        #expect(pipeline.counter.flushes == 1)
        #expect(!pipeline.hasCoalescer())
        pipeline.channel.embeddedEventLoop.run()
        #expect(pipeline.counter.flushes == 1)
        _ = try pipeline.channel.finish()
    }

    /// A handshake that does not complete after verification (TLS 1.2: the client's flight comes first, the server's
    /// Finished after it) is not held beyond the task scheduled when verification completed.
    @Test func aFlightAfterVerificationIsNotHeldPastTheEventLoopsTurn() throws {
        let pipeline = try Pipeline(replies: [])
        pipeline.coalescer.verificationCompleted()
        pipeline.channel.writeAndFlush(ByteBuffer(string: "client key exchange, finished"), promise: nil)
        #expect(try pipeline.outbound().isEmpty)
        pipeline.channel.embeddedEventLoop.run()
        #expect(try pipeline.outbound() == ["client key exchange, finished"])
        #expect(pipeline.hasCoalescer(), "the handshake has not completed")
        pipeline.channel.writeAndFlush(ByteBuffer(string: "later"), promise: nil)
        #expect(try pipeline.outbound() == ["later"])
        _ = try pipeline.channel.finish()
    }
}
