import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Bulwark

/// The exchange's rules, as ``HTTPExchangeStateMachine`` decides them: no channel, no clock (times are given).
@Suite("HTTP exchange state machine")
struct HTTPExchangeStateMachineTests {
    static let host = "api.bulwark.test"
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    func machine(maximumInflatedSize: Int = .max) -> HTTPExchangeStateMachine {
        HTTPExchangeStateMachine(host: Self.host, idleRead: .seconds(30), maximumInflatedSize: maximumInflatedSize)
    }

    func head(_ status: HTTPResponseStatus, keepAlive: Bool = true) -> HTTPResponseHead {
        var head = HTTPResponseHead(version: .http1_1, status: status)
        if !keepAlive { head.headers.add(name: "connection", value: "close") }
        return head
    }

    func isWrite(_ action: HTTPExchangeStateMachine.StartAction) -> Bool {
        if case .write = action { return true }
        return false
    }

    func code(_ error: BulwarkError?) -> BulwarkError.Code? { error?.code }

    @Test func aKeepAliveExchangeEndsReusableAndTheNextMayStart() {
        var machine = self.machine()
        let step1 = machine.startExchange(requestKeepAlive: true, now: self.start)
        #expect(self.isWrite(step1))
        guard case .hold = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start) else {
            Issue.record("expected the head to be held")
            return
        }
        let held1 = machine.readCompleted()
        #expect(held1, "the read ends: the head is handed out")
        guard case .yield = machine.receivedBody(count: 10, now: self.start) else {
            Issue.record("a handed-out head's body streams")
            return
        }
        let step2 = machine.receivedEnd(now: self.start)
        #expect(step2 == .complete(keepAlive: true, readNow: false))
        let step3 = machine.startExchange(requestKeepAlive: true, now: self.start)
        #expect(self.isWrite(step3))
    }

    @Test func connectionCloseAndSwitchingProtocolsAreNotReusable() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        _ = machine.receivedHead(self.head(.ok, keepAlive: false), isCompressed: false, now: self.start)
        let step4 = machine.receivedEnd(now: self.start)
        #expect(step4 == .complete(keepAlive: false, readNow: false))
        // A 101 is final and ends the connection's HTTP life, whatever its headers say.
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        guard case .hold = machine.receivedHead(self.head(.switchingProtocols), isCompressed: false, now: self.start)
        else {
            Issue.record("a 101 is the final head")
            return
        }
        let step5 = machine.receivedEnd(now: self.start)
        #expect(step5 == .complete(keepAlive: false, readNow: false))
        // A request that asked to close is not reused either.
        _ = machine.startExchange(requestKeepAlive: false, now: self.start)
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let step6 = machine.receivedEnd(now: self.start)
        #expect(step6 == .complete(keepAlive: false, readNow: false))
    }

    /// A response that ends while a streamed body is still being written ends the exchange with the response standing,
    /// but the connection carries the body: it is not reusable, and the rest of the body is refused.
    @Test func aResponseThatEndsBeforeTheStreamedBodyClosesTheConnection() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, requestEnds: false, now: self.start)
        _ = machine.receivedHead(self.head(.payloadTooLarge), isCompressed: false, now: self.start)
        let ended = machine.receivedEnd(now: self.start)
        guard case .completeBeforeRequestEnded(let error) = ended else {
            Issue.record("expected the exchange to end before its request, got \(ended)")
            return
        }
        #expect(error.code == .requestBodyFailed)
        #expect(error.description.contains("answered before the whole request body was sent"))
        #expect(machine.answeredBeforeRequestEnded)
        guard case .closed = machine.state else {
            Issue.record("the connection must not serve another request")
            return
        }
        let next = machine.startExchange(requestKeepAlive: true, now: self.start)
        #expect(!self.isWrite(next))
    }

    /// Once the streamed body's end is written, an answer ends the exchange as any other: reusable when kept alive.
    @Test func aResponseAfterTheStreamedBodyEndedIsReusable() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, requestEnds: false, now: self.start)
        machine.requestBodyEnded()
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let ended = machine.receivedEnd(now: self.start)
        #expect(ended == .complete(keepAlive: true, readNow: false))
        #expect(!machine.answeredBeforeRequestEnded)
        // The next exchange, with its body in memory, is not taken for a streamed one.
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let again = machine.receivedEnd(now: self.start)
        #expect(again == .complete(keepAlive: true, readNow: false))
    }

    /// A streamed body with a declared length ends with the chunk that completes that length: the server, which frames
    /// the body by it, may answer at once, and that answer is no early one (the connection stays reusable) even when
    /// it comes before the producer has said that it is done.
    @Test func aStreamedBodyEndsWithItsDeclaredLength() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, requestEnds: false, declaredBodyLength: 10, now: self.start)
        let first = machine.requestBodyWritten(4)
        let last = machine.requestBodyWritten(6)
        // Written: nothing more ends it a second time.
        let after = machine.requestBodyWritten(0)
        #expect(!first && last && !after)
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let ended = machine.receivedEnd(now: self.start)
        #expect(ended == .complete(keepAlive: true, readNow: false))
        #expect(!machine.answeredBeforeRequestEnded)
    }

    /// Short of its declared length, or without one (chunked), the body has not ended: an answer before its end is
    /// still an early one.
    @Test func aStreamedBodyShortOfItsLengthOrWithoutOneHasNotEnded() {
        for declared in [Int?.some(10), nil] {
            var machine = self.machine()
            _ = machine.startExchange(
                requestKeepAlive: true,
                requestEnds: false,
                declaredBodyLength: declared,
                now: self.start
            )
            let short = machine.requestBodyWritten(9)
            #expect(!short)
            _ = machine.receivedHead(self.head(.payloadTooLarge), isCompressed: false, now: self.start)
            let ended = machine.receivedEnd(now: self.start)
            guard case .completeBeforeRequestEnded = ended else {
                Issue.record("declared \(String(describing: declared)): an answer before the body's end is early")
                continue
            }
        }
        // A body in memory is never counted.
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, declaredBodyLength: 10, now: self.start)
        let inMemory = machine.requestBodyWritten(10)
        #expect(!inMemory)
    }

    @Test func informationalHeadsAreSkippedAndUnexpectedHeadsFail() {
        var machine = self.machine()
        guard case .fail(let early) = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start) else {
            Issue.record("a head before any request must fail")
            return
        }
        #expect(early.code == .invalidResponse)
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        guard case .ignore = machine.receivedHead(self.head(.continue), isCompressed: false, now: self.start) else {
            Issue.record("100 Continue is informational")
            return
        }
        guard case .hold = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start) else { return }
        guard case .fail = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start) else {
            Issue.record("a second final head must fail")
            return
        }
    }

    @Test func theReadTimerCountsFromTheRequestNotTheConnectionsLastRead() {
        var machine = self.machine()
        // An hour idle, then a request: the whole period is the request's.
        let later = self.start + .hours(1)
        #expect(machine.readTimerFired(now: later).isNone)
        _ = machine.startExchange(requestKeepAlive: true, now: later)
        guard case .reschedule(let next) = machine.readTimerFired(now: later + .seconds(29)) else {
            Issue.record("29 s after the request the timer must wait on")
            return
        }
        #expect(next == later + .seconds(30))
        guard case .fail(let error) = machine.readTimerFired(now: later + .seconds(30)) else {
            Issue.record("30 s of silence must fail")
            return
        }
        #expect(error.code == .readTimeout)
    }

    @Test func readsAndDemandMoveTheTimerAndAHeldBackBodyDoesNotTimeOut() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start + .seconds(20))
        let held2 = machine.readCompleted()
        #expect(held2)
        guard case .reschedule(let next) = machine.readTimerFired(now: self.start + .seconds(30)) else { return }
        #expect(next == self.start + .seconds(50))
        // The reader's buffer is full: the server is not waited for, so no timeout, and reads are held back.
        machine.bodyYielded(wantsMore: false)
        let step7 = machine.readRequested()
        #expect(!step7)
        guard case .reschedule = machine.readTimerFired(now: self.start + .seconds(100)) else {
            Issue.record("a reader holding the body back is not the server's silence")
            return
        }
        // The reader asks again: the held read happens now, and the period restarts.
        let step8 = machine.demandResumed(now: self.start + .seconds(100))
        #expect(step8)
        let step9 = machine.readRequested()
        #expect(step9)
        guard case .reschedule(let resumed) = machine.readTimerFired(now: self.start + .seconds(110)) else { return }
        #expect(resumed == self.start + .seconds(130))
    }

    @Test func aHeldReadHappensWhenTheResponseEnds() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let held3 = machine.readCompleted()
        #expect(held3)
        machine.bodyYielded(wantsMore: false)
        let step10 = machine.readRequested()
        #expect(!step10)
        let step11 = machine.receivedEnd(now: self.start)
        #expect(step11 == .complete(keepAlive: true, readNow: true))
        let step12 = machine.readRequested()
        #expect(step12)
    }

    @Test func anInflatedBodyIsCappedAndAPlainOneIsNot() {
        var machine = self.machine(maximumInflatedSize: 100)
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        _ = machine.receivedHead(self.head(.ok), isCompressed: true, now: self.start)
        // Held with the head, the bytes count against the limit as streamed ones do.
        guard case .hold = machine.receivedBody(count: 100, now: self.start) else {
            Issue.record("100 inflated bytes are within a 100-byte limit")
            return
        }
        guard case .fail(let error) = machine.receivedBody(count: 1, now: self.start) else {
            Issue.record("101 inflated bytes must break a 100-byte limit")
            return
        }
        #expect(error.code == .decompressionLimitExceeded)
        var plain = self.machine(maximumInflatedSize: 100)
        _ = plain.startExchange(requestKeepAlive: true, now: self.start)
        _ = plain.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let held4 = plain.readCompleted()
        #expect(held4)
        guard case .yield = plain.receivedBody(count: 1_000, now: self.start) else {
            Issue.record("an uncompressed body is not inflated")
            return
        }
    }

    @Test func aFailureEndsWhatRunsOnceAndKeepsTheConnectionClosed() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        guard case .failHead(let error) = machine.fail(BulwarkError(.cancelled, host: Self.host)) else {
            Issue.record("a failure while waiting fails the head")
            return
        }
        #expect(error.code == .cancelled)
        guard case .none = machine.fail(BulwarkError(.readTimeout, host: Self.host)) else {
            Issue.record("a second failure does nothing")
            return
        }
        guard case .refuse(let refused) = machine.startExchange(requestKeepAlive: true, now: self.start) else {
            Issue.record("a closed connection takes no request")
            return
        }
        // The next request learns why the connection closed.
        #expect(refused.code == .cancelled)
        var streaming = self.machine()
        _ = streaming.startExchange(requestKeepAlive: true, now: self.start)
        _ = streaming.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let held5 = streaming.readCompleted()
        #expect(held5)
        #expect(self.code(streaming.consumerTerminated()) == .cancelled)
        guard case .failBody = streaming.fail(BulwarkError(.cancelled, host: Self.host)) else {
            Issue.record("a failure while streaming fails the body")
            return
        }
        guard case .ignore = streaming.receivedBody(count: 1, now: self.start) else { return }
        var idle = self.machine()
        guard case .close = idle.fail(BulwarkError(.remoteConnectionClosed, host: Self.host)) else { return }
        #expect(idle.consumerTerminated() == nil)
    }

    /// A final head is held until the end of the read that brought it, with the body bytes read after it: a response
    /// that ends in that read is handed out whole (no body stream); otherwise the head goes out when the read ends.
    @Test func aHeadIsHeldUntilTheEndOfItsReadOrOfTheResponse() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        let held6 = machine.readCompleted()
        #expect(!held6, "no head yet: nothing to hand out")
        guard case .hold = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start) else {
            Issue.record("a final head is held")
            return
        }
        #expect(!machine.headDelivered)
        guard case .hold = machine.receivedBody(count: 5, now: self.start) else {
            Issue.record("body bytes read with a held head are kept with it")
            return
        }
        let held7 = machine.receivedEnd(now: self.start)
        #expect(held7 == .complete(keepAlive: true, readNow: false))
        let held8 = machine.readCompleted()
        #expect(!held8, "the end handed the head out whole: nothing is left for the end of the read")
        // The next response is longer than its first read.
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        let held9 = machine.readCompleted()
        #expect(held9)
        #expect(machine.headDelivered)
        let held10 = machine.readCompleted()
        #expect(!held10, "a head is handed out once")
        guard case .yield = machine.receivedBody(count: 5, now: self.start) else {
            Issue.record("after the head went out, the body streams")
            return
        }
        let held11 = machine.receivedEnd(now: self.start)
        #expect(held11 == .complete(keepAlive: true, readNow: false))
    }

    @Test func aFailureWhileTheHeadIsHeldFailsTheHead() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        _ = machine.receivedHead(self.head(.ok), isCompressed: false, now: self.start)
        guard case .failHead(let error) = machine.fail(BulwarkError(.remoteConnectionClosed, host: Self.host)) else {
            Issue.record("nobody has the head yet: its promise is what fails")
            return
        }
        #expect(error.code == .remoteConnectionClosed)
        let held12 = machine.readCompleted()
        #expect(!held12, "a closed connection hands nothing out")
    }

    @Test func aSecondRequestWhileOneRunsIsRefused() {
        var machine = self.machine()
        _ = machine.startExchange(requestKeepAlive: true, now: self.start)
        guard case .refuse(let error) = machine.startExchange(requestKeepAlive: true, now: self.start) else {
            Issue.record("one exchange at a time")
            return
        }
        #expect(error.code == .remoteConnectionClosed)
    }

    /// The handler over an `EmbeddedChannel`: the request is written, the head and body reach the caller, and the
    /// connection is given back reusable.
    @Test func theHandlerRunsAnExchangeOverAnEmbeddedChannel() async throws {
        let channel = EmbeddedChannel()
        let handler = HTTPExchangeHandler(host: Self.host, idleRead: .seconds(30))
        try channel.pipeline.syncOperations.addHandler(handler)
        let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
        let completed = NIOLockedValueBox<Bool?>(nil)
        let exchange = Exchange(host: Self.host, headPromise: promise, requestKeepAlive: true) { reusable in
            completed.withLockedValue { $0 = reusable }
        }
        var requestHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/hello")
        requestHead.headers.add(name: "host", value: Self.host)
        #expect(handler.start(exchange, head: requestHead, body: nil, endsRequest: true, deadline: nil))
        guard case .head(let written) = try channel.readOutbound(as: HTTPClientRequestPart.self) else {
            Issue.record("expected the request head")
            return
        }
        #expect(written.uri == "/hello")
        guard case .end = try channel.readOutbound(as: HTTPClientRequestPart.self) else {
            Issue.record("expected the request end")
            return
        }
        try channel.writeInbound(HTTPClientResponsePart.head(self.head(.ok)))
        let (head, body) = try await promise.futureResult.get()
        #expect(head.status == .ok)
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: "hello")))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(completed.withLockedValue { $0 } == true)
        var received = ""
        for try await part in BulwarkResponse.Body(body, host: Self.host) { received += String(buffer: part) }
        #expect(received == "hello")
        // The server closing the idle connection fails the next request with the reason.
        channel.pipeline.fireChannelInactive()
        let next = channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
        let refused = Exchange(host: Self.host, headPromise: next, requestKeepAlive: true) { _ in }
        #expect(!handler.start(refused, head: requestHead, body: nil, endsRequest: true, deadline: nil))
        await #expect(throws: BulwarkError.self) { _ = try await next.futureResult.get() }
        _ = try? channel.finish()
    }

    /// An exchange started on a handler over an `EmbeddedChannel`, its request read back; what became of it.
    final class EmbeddedExchange: Sendable {
        let promise: EventLoopPromise<(HTTPResponseHead, ResponseBodyContent)>
        let reusable = NIOLockedValueBox<Bool?>(nil)
        let settled = NIOLockedValueBox(false)

        init(on channel: EmbeddedChannel, host: String) throws {
            let handler = HTTPExchangeHandler(host: host, idleRead: .seconds(30))
            try channel.pipeline.syncOperations.addHandler(handler)
            self.promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
            let reusable = self.reusable
            let exchange = Exchange(host: host, headPromise: self.promise, requestKeepAlive: true) { value in
                reusable.withLockedValue { $0 = value }
            }
            let settled = self.settled
            self.promise.futureResult.whenComplete { _ in settled.withLockedValue { $0 = true } }
            var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/hello")
            head.headers.add(name: "host", value: host)
            #expect(handler.start(exchange, head: head, body: nil, endsRequest: true, deadline: nil))
            while try channel.readOutbound(as: HTTPClientRequestPart.self) != nil {}
        }
    }

    func read(_ parts: [HTTPClientResponsePart], into channel: EmbeddedChannel) {
        for part in parts { channel.pipeline.fireChannelRead(NIOAny(part)) }
    }

    /// A short response read whole in one read is handed out whole: no body stream (so no news from a body reader to
    /// send back to the event loop), and the connection is given back reusable.
    @Test func aResponseReadInOneReadIsHandedOutWhole() async throws {
        let channel = EmbeddedChannel()
        let exchange = try EmbeddedExchange(on: channel, host: Self.host)
        self.read(
            [.head(self.head(.ok)), .body(ByteBuffer(string: "hel")), .body(ByteBuffer(string: "lo"))],
            into: channel
        )
        #expect(!exchange.settled.withLockedValue { $0 }, "the head is held until the read or the response ends")
        self.read([.end(nil)], into: channel)
        #expect(exchange.reusable.withLockedValue { $0 } == true)
        let (head, content) = try await exchange.promise.futureResult.get()
        #expect(head.status == .ok)
        guard case .whole(let body) = content else {
            Issue.record("a response read whole needs no body stream")
            return
        }
        #expect(body.map { String(buffer: $0) } == "hello")
        channel.pipeline.fireChannelReadComplete()
        var received = ""
        for try await part in BulwarkResponse.Body(content, host: Self.host) { received += String(buffer: part) }
        #expect(received == "hello")
        _ = try? channel.finish()
    }

    /// A response longer than its first read: the head goes out when that read ends, with a body stream that starts
    /// with the bytes read with the head.
    @Test func aResponseLongerThanItsFirstReadStreamsFromTheHeldBytes() async throws {
        let channel = EmbeddedChannel()
        let exchange = try EmbeddedExchange(on: channel, host: Self.host)
        self.read([.head(self.head(.ok)), .body(ByteBuffer(string: "hel"))], into: channel)
        #expect(!exchange.settled.withLockedValue { $0 })
        channel.pipeline.fireChannelReadComplete()
        #expect(exchange.settled.withLockedValue { $0 }, "the read ended: the head is handed out")
        let (_, content) = try await exchange.promise.futureResult.get()
        guard case .stream = content else {
            Issue.record("the body is not all there: it streams")
            return
        }
        try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(string: "lo")))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(exchange.reusable.withLockedValue { $0 } == true)
        var received = ""
        for try await part in BulwarkResponse.Body(content, host: Self.host) { received += String(buffer: part) }
        #expect(received == "hello")
        _ = try? channel.finish()
    }

    /// The connection closing while a head is held (before its read ended) fails the request: nobody has the head yet.
    @Test func theConnectionClosingWhileTheHeadIsHeldFailsTheRequest() async throws {
        let channel = EmbeddedChannel()
        let exchange = try EmbeddedExchange(on: channel, host: Self.host)
        self.read([.head(self.head(.ok)), .body(ByteBuffer(string: "hel"))], into: channel)
        channel.pipeline.fireChannelInactive()
        await #expect {
            _ = try await exchange.promise.futureResult.get()
        } throws: { error in
            (error as? BulwarkError)?.code == .remoteConnectionClosed
        }
        #expect(exchange.reusable.withLockedValue { $0 } == false)
        _ = try? channel.finish()
    }
}

extension HTTPExchangeStateMachine.TimerAction {
    var isNone: Bool {
        if case .none = self { return true }
        return false
    }
}
