import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Bulwark

/// A streamed body's writer belongs to one exchange. On a kept-alive HTTP/1.1 connection the next exchange may start
/// while an earlier body's producer still runs (a body of declared length ends on the wire with its last byte, and its
/// producer may return later), so what that writer does later must never reach the connection: not an end, not a
/// chunk, not a failure. Found by the attack review of the request head check (helper-25); each test failed before
/// (notes/i43-bodywriter-before.log).
@Suite("Request body writers touch only their own exchange")
struct RequestBodyWriterIdentityTests {
    static let host = "api.bulwark.test"

    final class Harness {
        let channel = EmbeddedChannel()
        let handler = HTTPExchangeHandler(host: RequestBodyWriterIdentityTests.host, idleRead: .seconds(30))
        var failures: [BulwarkError.Code] = []

        init() throws {
            try self.channel.pipeline.syncOperations.addHandler(self.handler)
            try self.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        }

        /// Starts a POST whose body streams (of `length`, or chunked), and returns its writer.
        func start(length: Int?) -> RequestBodyWriter {
            let promise = self.channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
            promise.futureResult.whenFailure { error in
                self.failures.append((error as? BulwarkError)?.code ?? .invalidResponse)
            }
            let exchange = Exchange(
                host: RequestBodyWriterIdentityTests.host,
                headPromise: promise,
                requestKeepAlive: true
            ) {
                _ in
            }
            var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/upload")
            head.headers.add(name: "host", value: RequestBodyWriterIdentityTests.host)
            if let length {
                head.headers.add(name: "content-length", value: String(length))
            } else {
                head.headers.add(name: "transfer-encoding", value: "chunked")
            }
            let started = self.handler.start(
                exchange,
                head: head,
                body: nil,
                endsRequest: false,
                declaredBodyLength: length,
                deadline: nil
            )
            #expect(started)
            return RequestBodyWriter(
                handler: NIOLoopBound(self.handler, eventLoop: self.channel.eventLoop),
                exchange: self.handler.exchangeNumber
            )
        }

        /// The server's whole answer, kept alive.
        func answer() throws {
            var head = HTTPResponseHead(version: .http1_1, status: .ok)
            head.headers.add(name: "content-length", value: "0")
            try self.channel.writeInbound(HTTPClientResponsePart.head(head))
            try self.channel.writeInbound(HTTPClientResponsePart.end(nil))
        }

        /// The request parts written since the last call (flushed first: a chunk may wait for the next one's flush).
        func written() throws -> [HTTPClientRequestPart] {
            self.channel.flush()
            var parts: [HTTPClientRequestPart] = []
            while let part = try self.channel.readOutbound(as: HTTPClientRequestPart.self) { parts.append(part) }
            return parts
        }

        /// Whether `writer`'s end succeeded at once.
        func ends(_ writer: RequestBodyWriter) -> Bool {
            if case .success = self.end(writer) { return true }
            return false
        }

        func end(_ writer: RequestBodyWriter) -> Result<Void, any Error>? {
            let promise = self.channel.eventLoop.makePromise(of: Void.self)
            var outcome: Result<Void, any Error>?
            promise.futureResult.whenComplete { outcome = $0 }
            self.handler.endBody(writer: writer, promise: promise)
            return outcome
        }
    }

    /// helper-25, 1: A's body (4 bytes) ended with its last byte; B's (2 bytes) too, and B's own end cleared the one
    /// slot that remembered a body ended by length; while C's chunked body streams, A's producer ends: that end went
    /// out as C's last chunk (`0\r\n\r\n`), cutting C's body short.
    @Test func anEarlierBodysEndDoesNotEndTheCurrentOne() throws {
        let harness = try Harness()
        defer { _ = try? harness.channel.finish() }
        let a = harness.start(length: 4)
        harness.handler.writeBodyChunk(ByteBuffer(string: "abcd"), writer: a)
        try harness.answer()
        let b = harness.start(length: 2)
        harness.handler.writeBodyChunk(ByteBuffer(string: "xy"), writer: b)
        #expect(harness.ends(b))
        try harness.answer()
        let c = harness.start(length: nil)
        harness.handler.writeBodyChunk(ByteBuffer(string: "123"), writer: c)
        _ = try harness.written()
        let endOfA = harness.end(a)
        #expect(try harness.written().isEmpty, "A's end reached the connection while C's body streams")
        if case .failure(let error) = endOfA { Issue.record("A's body was sent whole, yet its end failed: \(error)") }
        // C's body goes on and ends as its own.
        harness.handler.writeBodyChunk(ByteBuffer(string: "456"), writer: c)
        #expect(harness.ends(c))
        #expect(try harness.written().count == 2)
        #expect(harness.failures.isEmpty)
    }

    /// helper-25, 1 and 2: a chunk from the writer of an exchange that is over (its producer wrote after its end, from
    /// a task of its own) went into the body of the exchange now on the connection.
    @Test func aChunkFromAnEarlierBodyNeverReachesTheCurrentExchange() throws {
        let harness = try Harness()
        defer { _ = try? harness.channel.finish() }
        let a = harness.start(length: nil)
        harness.handler.writeBodyChunk(ByteBuffer(string: "abc"), writer: a)
        #expect(harness.ends(a))
        try harness.answer()
        let c = harness.start(length: nil)
        harness.handler.writeBodyChunk(ByteBuffer(string: "123"), writer: c)
        _ = try harness.written()
        harness.handler.writeBodyChunk(ByteBuffer(string: "GET /smuggled HTTP/1.1\r\n\r\n"), writer: a)
        #expect(try harness.written().isEmpty, "a chunk of A's went into C's body")
        harness.handler.failBody(BulwarkError(.requestBodyFailed, host: Self.host), writer: a)
        #expect(harness.failures.isEmpty, "A's producer failing failed C")
        #expect(harness.channel.isActive)
    }

    /// helper-25, 2: a chunk written after the body's own end (while its exchange still waits for the answer) went
    /// out after the last chunk, where the server reads the start of a new request.
    @Test func aChunkAfterTheBodysEndIsRefused() throws {
        let harness = try Harness()
        defer { _ = try? harness.channel.finish() }
        let c = harness.start(length: nil)
        harness.handler.writeBodyChunk(ByteBuffer(string: "123"), writer: c)
        #expect(harness.ends(c))
        _ = try harness.written()
        harness.handler.writeBodyChunk(ByteBuffer(string: "GET /smuggled HTTP/1.1\r\n\r\n"), writer: c)
        #expect(try harness.written().isEmpty, "a chunk went out after the body's end")
    }

    /// helper-25, 3: a cancellation that arrives once the connection serves the next exchange must not fail that one.
    @Test func aLateCancellationLeavesTheNextExchangeAlone() throws {
        let harness = try Harness()
        defer { _ = try? harness.channel.finish() }
        let a = harness.start(length: 1)
        let first = harness.handler.exchangeNumber
        harness.handler.writeBodyChunk(ByteBuffer(string: "a"), writer: a)
        try harness.answer()
        _ = harness.start(length: nil)
        harness.handler.fail(BulwarkError(.cancelled, host: Self.host), exchange: first)
        #expect(harness.failures.isEmpty)
        #expect(harness.channel.isActive)
        harness.handler.fail(BulwarkError(.cancelled, host: Self.host), exchange: harness.handler.exchangeNumber)
        #expect(harness.failures == [.cancelled])
    }
}
