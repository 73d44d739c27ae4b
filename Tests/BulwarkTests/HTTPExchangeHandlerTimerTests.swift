import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Bulwark

/// The exchange handler's idle-read timer on an `EmbeddedChannel`, whose event loop has a clock the test moves: the
/// timer's rules are checked to the millisecond without waiting and without depending on the machine's load. (These
/// replace a wall-clock test of the timing process that slept 3 s and raced a 1.4 s response against a 2 s timer.)
@Suite("HTTP exchange handler: the idle-read timer on the event loop's clock")
struct HTTPExchangeHandlerTimerTests {
    static let host = "api.bulwark.test"

    /// One exchange on `handler`, and what became of its response head.
    final class Started: Sendable {
        let outcome = NIOLockedValueBox<Result<HTTPResponseStatus, BulwarkError>?>(nil)
        let reusable = NIOLockedValueBox<Bool?>(nil)
        let written: Bool

        init(_ handler: HTTPExchangeHandler, on channel: EmbeddedChannel) {
            let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
            let reusable = self.reusable
            let exchange = Exchange(
                host: HTTPExchangeHandlerTimerTests.host,
                headPromise: promise,
                requestKeepAlive: true
            ) {
                value in reusable.withLockedValue { $0 = value }
            }
            var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/slow")
            head.headers.add(name: "host", value: HTTPExchangeHandlerTimerTests.host)
            self.written = handler.start(exchange, head: head, body: nil, endsRequest: true, deadline: nil)
            let outcome = self.outcome
            promise.futureResult.whenComplete { result in
                outcome.withLockedValue {
                    $0 = result.map { $0.0.status }.mapError {
                        ($0 as? BulwarkError)
                            ?? BulwarkError(.invalidResponse, host: HTTPExchangeHandlerTimerTests.host)
                    }
                }
            }
        }

        var status: HTTPResponseStatus? { try? self.outcome.withLockedValue { $0 }?.get() }
        var errorCode: BulwarkError.Code? {
            guard case .failure(let error) = self.outcome.withLockedValue({ $0 }) else { return nil }
            return error.code
        }
        var isPending: Bool { self.outcome.withLockedValue { $0 } == nil }
    }

    func channel(idleRead: TimeAmount) throws -> (EmbeddedChannel, HTTPExchangeHandler) {
        let channel = EmbeddedChannel()
        let handler = HTTPExchangeHandler(host: Self.host, idleRead: idleRead)
        try channel.pipeline.syncOperations.addHandler(handler)
        return (channel, handler)
    }

    func drainRequest(_ channel: EmbeddedChannel) throws {
        while try channel.readOutbound(as: HTTPClientRequestPart.self) != nil {}
    }

    @Test func aHeadSlowerThanTheIdleReadPeriodEndsInReadTimeout() throws {
        let (channel, handler) = try self.channel(idleRead: .seconds(2))
        let exchange = Started(handler, on: channel)
        #expect(exchange.written)
        try self.drainRequest(channel)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(exchange.isPending, "no read timeout before the period has passed")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(exchange.errorCode == .readTimeout)
        #expect(exchange.reusable.withLockedValue { $0 } == false)
        _ = try? channel.finish()
    }

    @Test func dataWithinThePeriodMovesTheTimer() throws {
        let (channel, handler) = try self.channel(idleRead: .seconds(2))
        let exchange = Started(handler, on: channel)
        try self.drainRequest(channel)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1500))
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        #expect(exchange.status == .ok)
        // The head moved the last activity to 1.5 s: the body may take until 3.5 s.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1900))
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: "slow")))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1900))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(exchange.reusable.withLockedValue { $0 } == true, "the exchange ended in time and reusable")
        _ = try? channel.finish()
    }

    /// Issue 16, defect 9 (first shown with a 3 s sleep on a real server): a connection idle in the pool for longer
    /// than one period kept the timer of its last read, which then fired 1 s into the next request. The period counts
    /// from the request.
    @Test func theReadTimeoutCountsFromTheRequestNotFromTheLastRead() throws {
        let (channel, handler) = try self.channel(idleRead: .seconds(2))
        let first = Started(handler, on: channel)
        try self.drainRequest(channel)
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(first.reusable.withLockedValue { $0 } == true)
        // Idle in the pool past one period: the timer fires while idle and must change nothing.
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        let second = Started(handler, on: channel)
        #expect(second.written, "the idle connection is still usable")
        try self.drainRequest(channel)
        // 1.4 s into the second request: under the old rule the timer had fired at 4 s (2 s after the last read).
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1400))
        #expect(second.isPending, "\(String(describing: second.errorCode))")
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(second.status == .ok)
        #expect(second.reusable.withLockedValue { $0 } == true)
        _ = try? channel.finish()
    }

    /// A keep-alive request schedules no timer of its own: the previous exchange's timer, still pending, serves it,
    /// and its period still counts from the request.
    @Test func aRequestStartedWhileThePreviousTimerIsPendingGetsTheWholePeriod() throws {
        let (channel, handler) = try self.channel(idleRead: .seconds(2))
        let first = Started(handler, on: channel)
        try self.drainRequest(channel)
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(first.reusable.withLockedValue { $0 } == true)
        // 1 s later, the first exchange's timer (due at 2 s) still pending.
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        let second = Started(handler, on: channel)
        try self.drainRequest(channel)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(second.isPending, "the old timer fired at 2 s and moved itself to 3 s")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(second.errorCode == .readTimeout)
        _ = try? channel.finish()
    }

    /// The timer left running after an exchange holds its handler only as long as the channel: closing it cancels the
    /// timer, so an HTTP/2 stream's handler does not outlive its stream for a whole read period.
    @Test func closingTheChannelReleasesTheHandlerAndItsTimer() throws {
        weak var released: HTTPExchangeHandler?
        let channel: EmbeddedChannel
        do {
            let (made, handler) = try self.channel(idleRead: .seconds(30))
            channel = made
            released = handler
            let exchange = Started(handler, on: channel)
            try self.drainRequest(channel)
            try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
            try channel.writeInbound(HTTPClientResponsePart.end(nil))
            #expect(exchange.reusable.withLockedValue { $0 } == true)
        }
        // Closed, and only the tasks due now run (`finish()` would run or drop the timer too).
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        #expect(released == nil, "the closed channel's handler is still referenced (by its read timer)")
        _ = try? channel.finish()
    }

    /// The body of a finished exchange tells the handler, one event-loop task later, that its reader went away. By
    /// then the connection may be serving the next request: that news must not end the next exchange's body.
    @Test func aFinishedBodysReaderGoingAwayDoesNotEndTheNextExchange() throws {
        let (channel, handler) = try self.channel(idleRead: .seconds(30))
        let body = NIOLockedValueBox<ResponseBodyProducer?>(nil)
        // In a scope of its own: afterwards only `body` holds the first response's body.
        do {
            let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
            promise.futureResult.whenSuccess { _, content in
                // The head came in a read of its own: the body streams.
                if case .stream(let producer) = content { body.withLockedValue { $0 = producer } }
            }
            let first = Exchange(host: Self.host, headPromise: promise, requestKeepAlive: true) { _ in }
            #expect(
                handler.start(
                    first,
                    head: HTTPRequestHead(version: .http1_1, method: .GET, uri: "/1"),
                    body: nil,
                    endsRequest: true,
                    deadline: nil
                )
            )
            try self.drainRequest(channel)
            try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
            try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: "one")))
            try channel.writeInbound(HTTPClientResponsePart.end(nil))
            #expect(body.withLockedValue { $0 } != nil, "the first body streams")
        }
        // The connection serves the next request, whose body starts streaming.
        let second = Started(handler, on: channel)
        try self.drainRequest(channel)
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        #expect(second.status == .ok)
        // Only now the first body's reader goes away (its sequence is released), and its news reaches the loop.
        body.withLockedValue { $0 = nil }
        channel.embeddedEventLoop.run()
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: "two")))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(second.reusable.withLockedValue { $0 } == true, "the second exchange was ended by the first's reader")
        _ = try? channel.finish()
    }
}
