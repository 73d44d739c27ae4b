import BulwarkPolicy
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTPS client whose every handshake is judged by a ``ServerTrustManager``.
///
/// ```swift
/// let client = try BulwarkClient(configuration: .init(trust: try ServerTrustManager(evaluators: [
///     "api.example.com": .publicKeys(try PinSet(["sha256/…", "sha256/…"])),
/// ])))
/// let response = try await client.execute(try BulwarkRequest(url: "https://api.example.com/v1/me"))
/// let body = try await response.body.collect(upTo: 1 << 20)
/// try await client.shutdown()
/// ```
///
/// Share one client across an application: it pools connections (HTTP/1.1 keep-alive and HTTP/2 streams) per
/// origin. Requests to hosts the trust manager does not list fail during the handshake, before any request byte
/// is sent.
///
/// Threading: every method may be called from any task. Responses stream on the client's event loops; a response
/// body that is not read holds its connection until it is read or dropped.
public final class BulwarkClient: Sendable {
    public let configuration: Configuration
    private let connector: Connector
    let pool: ConnectionPool
    private let reporter: PinFailureReporter?
    /// The lower-case names of headers that carry credentials whatever the store holds: `Authorization`, `Cookie`,
    /// `Proxy-Authorization` and the redirect policy's credential headers.
    let fixedSensitiveHeaderNames: Set<String>

    /// Creates a client on `eventLoopGroup` (NIO's shared singleton group by default).
    ///
    /// - Throws: ``BulwarkError`` when the TLS options are invalid (an unknown cipher list).
    public init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        self.configuration = configuration
        do {
            self.reporter = try configuration.pinFailureReporting.map {
                try PinFailureReporter(configuration: $0, client: configuration)
            }
            self.connector = try Connector(
                configuration: configuration,
                eventLoopGroup: eventLoopGroup,
                reporter: self.reporter
            )
        } catch {
            throw Connector.invalidTLSOptions(error, options: configuration.tls, host: nil)
        }
        self.pool = ConnectionPool(options: configuration.pool, eventLoopGroup: eventLoopGroup)
        self.fixedSensitiveHeaderNames = RedirectPolicy.defaultCredentialHeaders.union(
            configuration.redirects.credentialHeaders.map { $0.lowercased() }
        )
    }

    /// Sends a request and returns the response as soon as its head arrives.
    ///
    /// Redirects are followed only as ``Configuration/redirects`` allows, each hop decided by
    /// ``RedirectPolicy/decide(_:)``: the request is rewritten (method, body, stripped credentials), every hop is
    /// reported to the event monitor, and the response's ``BulwarkResponse/redirects`` lists them.
    ///
    /// - Parameter deadline: when the whole exchange must be over: waiting for a pooled connection, connecting, the
    ///   TLS handshake, every redirect hop and the response body. Passing it fails the request with
    ///   ``BulwarkError/Code/deadlineExceeded``, whichever of these it is in.
    /// - Throws: ``BulwarkError``; ``BulwarkError/Code/redirectRefused`` when the policy refuses a hop (unless it
    ///   returns the redirect response instead). Cancelling the task cancels the request at any stage, with
    ///   ``BulwarkError/Code/cancelled``.
    public func execute(_ request: BulwarkRequest, deadline: NIODeadline? = nil) async throws -> BulwarkResponse {
        let policy = self.configuration.redirects
        let requestID = Self.nextRequestID()
        // The session the request started in: after a sign-out, none of its responses may store a cookie.
        let cookieEpoch = self.configuration.cookies?.epoch
        var sent = try await self.sendHop(request, deadline: deadline, requestID: requestID, cookieEpoch: cookieEpoch)
        var response = sent.response
        guard policy.followsRedirects, RedirectPolicy.redirectStatuses.contains(Int(response.status.code)) else {
            return response
        }
        // `current` is the request as the caller made it, rewritten hop by hop by the policy: it never holds the
        // credentials and cookies attached from the store and the jar, which are attached anew for each hop's URL.
        var current = request
        var chain = RedirectChain(startingAt: request.url)
        var history: [RedirectRecord] = []
        repeat {
            let hop = RedirectHop(
                request: RedirectRequest(
                    method: current.method.rawValue,
                    url: current.url,
                    headers: current.headers.map { HeaderField(name: $0.name, value: $0.value) },
                    body: current.body.map { $0.isReplayable ? .replayable : .streamed } ?? .none
                ),
                status: Int(response.status.code),
                locations: response.headers["location"],
                chain: chain
            )
            let record = RedirectRecord(url: current.url, status: hop.status, decision: policy.decide(hop))
            history.append(record)
            for event in record.securityEvents(requestID: requestID) {
                self.configuration.eventMonitor.record(event)
            }
            switch record.decision {
            case .refuse(let refusal):
                let returnsResponse: Bool
                if refusal.reason.code == "body_not_replayable" {
                    returnsResponse = true
                } else {
                    returnsResponse = policy.onRefusal == .returnRedirectResponse
                }
                if returnsResponse {
                    response.redirects = history
                    return response
                }
                await Self.discard(response.body)
                throw BulwarkError.redirectRefused(refusal, host: chain.initialHost, redirects: history)
            case .follow(let follow):
                await Self.discard(response.body)
                chain.record(follow)
                var headers = HTTPHeaders()
                for field in follow.headers {
                    headers.add(name: field.name, value: field.value)
                }
                let previous = current
                current = BulwarkRequest(
                    url: follow.url,
                    method: HTTPMethod(rawValue: follow.method),
                    headers: headers,
                    body: follow.keepsBody ? current.body : nil
                )
                // A hop may carry only the store entries the hop before it carried: a response chooses the hop's
                // method, path and body, so it must never gain a credential the request did not already have (one
                // scoped elsewhere on the same origin), and once the chain left an entry's scope the entry is not
                // attached again (the store analogue of Go's CVE-2024-45336).
                let previousHop = sent
                sent = try await self.sendHop(
                    current,
                    deadline: deadline,
                    requestID: requestID,
                    carrying: previousHop.storeEntries,
                    cookieEpoch: cookieEpoch
                )
                self.reportCredentialsWithheld(
                    previousHop.storeCredentials.filter { !sent.storeCredentials.contains($0) },
                    hop: sent,
                    previousCarriedAny: !previousHop.storeEntries.isEmpty,
                    from: previous.url,
                    to: current.url,
                    requestID: requestID
                )
                response = sent.response
            }
        } while RedirectPolicy.redirectStatuses.contains(Int(response.status.code))
        response.redirects = history
        return response
    }

    /// Checks a request against everything that can refuse it without the network: the allowlist, the URL, plain
    /// HTTP. Nothing is resolved, connected or refreshed for a refused request.
    func admit(_ request: BulwarkRequest, requestID: UInt64) throws -> RequestTarget {
        if let allowlist = self.configuration.allowlist,
            case .refused(let refusal) = allowlist.decision(for: request.url)
        {
            self.configuration.eventMonitor.record(refusal.securityEvent(requestID: requestID))
            throw BulwarkError(.hostNotAllowed, host: refusal.host, detail: String(describing: refusal))
        }
        let target = try RequestTarget(request.url)
        if !target.isTLS {
            guard self.configuration.allowsPlainHTTP else {
                throw BulwarkError(
                    .plainHTTPNotAllowed,
                    host: target.host,
                    detail: "plain http:// is refused; set allowsPlainHTTP to opt in"
                )
            }
            self.configuration.eventMonitor.record(
                SecurityEvent(
                    kind: .insecureOptionUsed,
                    host: target.host,
                    requestID: requestID,
                    reason: "plain_http",
                    message: "request sent over plain HTTP (allowsPlainHTTP)"
                )
            )
        }
        return target
    }

    /// One request and its response, without following redirects.
    ///
    /// - Parameter credentialEpoch: The pool's sign-out epoch when the request's credentials were attached, if it
    ///   carries any: the connection is marked with it, so that ``signOut()`` closes it.
    func executeOnce(
        _ request: BulwarkRequest,
        target: RequestTarget,
        deadline: NIODeadline?,
        credentialEpoch: Int?
    ) async throws -> BulwarkResponse {
        let key = ConnectionPool.Key(scheme: target.scheme, host: target.host, port: target.port)
        var retried = false
        while true {
            let acquired = try await self.pool.acquire(key, deadline: deadline)
            let written = NIOLockedValueBox(false)
            do {
                return try await self.send(
                    request,
                    target: target,
                    acquired: acquired,
                    key: key,
                    deadline: deadline,
                    credentialEpoch: credentialEpoch,
                    written: written
                )
            } catch let error as BulwarkError
                where error.code == .remoteConnectionClosed && !retried && acquired.isReused
                && self.mayRetry(request, written: written.withLockedValue { $0 })
            {
                // The server closed a keep-alive connection as the request went out: one fresh attempt.
                retried = true
            }
        }
    }

    /// Whether a request that failed on a reused connection, closed under it, may be sent again on a new one: only
    /// when retries are on and the body can be sent again, and then only an idempotent request (RFC 9110 section
    /// 9.2.2: the server may have acted on the first copy) or one of which no byte was written.
    private func mayRetry(_ request: BulwarkRequest, written: Bool) -> Bool {
        guard self.configuration.retriesRequestsOnStaleConnections, request.body?.isReplayable ?? true else {
            return false
        }
        return !written || Self.idempotentMethods.contains(request.method)
    }

    /// RFC 9110 section 9.2.2.
    static let idempotentMethods: [HTTPMethod] = [.GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE]

    /// The largest redirect body read to its end so that its connection can be reused; a longer one is dropped, which
    /// closes the connection.
    static let maximumDiscardedBodySize = 64 * 1024

    /// Reads and throws away a redirect response's body (small ones to the end, keeping the connection reusable).
    static func discard(_ body: BulwarkResponse.Body) async {
        var discarded = 0
        do {
            for try await buffer in body {
                discarded += buffer.readableBytes
                if discarded > Self.maximumDiscardedBodySize {
                    return
                }
            }
        } catch {
            // The connection failed; it is not reused.
        }
    }

    static let requestCounter = NIOLockedValueBox<UInt64>(0)

    /// A number unique within the process, for the events of one request.
    private static func nextRequestID() -> UInt64 {
        self.requestCounter.withLockedValue { value in
            value += 1
            return value
        }
    }

    /// Sends a request with a time limit for the whole exchange.
    public func execute(_ request: BulwarkRequest, timeout: TimeAmount) async throws -> BulwarkResponse {
        try await self.execute(request, deadline: .now() + timeout)
    }

    /// Closes pooled connections; later requests fail with ``BulwarkError/Code/clientShutdown``.
    public func shutdown() async throws {
        await self.reporter?.shutdown()
        await self.pool.shutdown()
    }

    /// The number of connections the pool holds open (idle or in use).
    public var openConnectionCount: Int { self.pool.openConnectionCount }

    /// An exchange started on a connection: what the task awaits, and what cancellation fails.
    private struct Started: Sendable {
        var lease: ConnectionPool.Lease
        var handler: NIOLoopBound<HTTPExchangeHandler>
        var head: EventLoopFuture<(HTTPResponseHead, ResponseBodyProducer)>
        var version: String
    }

    /// Sends `request` on the connection `acquired` names, or on a new one, and returns once the response head
    /// arrived.
    ///
    /// The task waits once: the exchange starts in an event-loop callback, right after the handshake of a new
    /// connection (or in one submitted task on a pooled one), and the task resumes with the response head. A
    /// connection's readiness is never reported back to the task first, which would cost two thread wake-ups per
    /// new connection (one to the task's executor, one back to the event loop).
    ///
    /// Cancellation and the deadline end the wait at any stage: before the exchange started (while connecting or
    /// shaking hands) the request fails at once and a connection that completes later goes to the pool unused; once
    /// it started, the exchange fails and its connection closes.
    private func send(
        _ request: BulwarkRequest,
        target: RequestTarget,
        acquired: ConnectionPool.Acquired,
        key: ConnectionPool.Key,
        deadline: NIODeadline?,
        credentialEpoch: Int?,
        written: NIOLockedValueBox<Bool>
    ) async throws -> BulwarkResponse {
        let head = self.makeHead(request, target: target)
        let bodyBuffer: ByteBuffer?
        let streamProducer: (@Sendable (BulwarkRequest.BodyWriter) async throws -> Void)?
        switch request.body?.storage {
        case .none: (bodyBuffer, streamProducer) = (nil, nil)
        case .bytes(let buffer): (bodyBuffer, streamProducer) = (buffer, nil)
        case .stream(_, let producer): (bodyBuffer, streamProducer) = (nil, producer)
        }
        let host = target.host
        let pool = self.pool
        let sensitiveHeaderNames = self.sensitiveHeaderNames
        // Set (with the error) when the request was cancelled or timed out before its exchange started.
        let abandoned = NIOLockedValueBox<BulwarkError?>(nil)
        // On the connection's event loop.
        let start: @Sendable (ConnectionPool.Lease) -> EventLoopFuture<Started> = { lease in
            if let error = abandoned.withLockedValue({ $0 }) {
                // Nobody waits for this exchange any more: the connection serves the pool's next request instead.
                if case .http1(let connection) = lease.connection {
                    pool.release(connection, key: key, reusable: true)
                }
                return lease.connection.channel.eventLoop.makeFailedFuture(error)
            }
            if let credentialEpoch { lease.connection.markCarriedCredentials(epoch: credentialEpoch) }
            let begin = { (handler: NIOLoopBound<HTTPExchangeHandler>, onComplete: @escaping (Bool) -> Void) in
                let promise = handler.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyProducer).self)
                let exchange = Exchange(
                    host: host,
                    headPromise: promise,
                    requestKeepAlive: head.isKeepAlive,
                    onComplete: onComplete
                )
                if handler.value.start(
                    exchange,
                    head: head,
                    body: bodyBuffer,
                    endsRequest: streamProducer == nil,
                    deadline: deadline
                ) {
                    written.withLockedValue { $0 = true }
                }
                return promise.futureResult
            }
            switch lease.connection {
            case .http1(let connection):
                let response = begin(connection.handler) { reusable in
                    pool.release(connection, key: key, reusable: reusable)
                }
                let started = Started(lease: lease, handler: connection.handler, head: response, version: "http/1.1")
                return connection.channel.eventLoop.makeSucceededFuture(started)
            case .http2(let connection):
                return connection.openStream(sensitiveHeaderNames: sensitiveHeaderNames).map { stream, handler in
                    let response = begin(handler) { _ in stream.close(promise: nil) }
                    return Started(lease: lease, handler: handler, head: response, version: "h2")
                }
            }
        }
        let started: EventLoopFuture<Started>
        switch acquired {
        case .leased(let lease):
            started = lease.connection.channel.eventLoop.flatSubmit { start(lease) }
        case .connect:
            let eventLoop = self.connector.eventLoopGroup.next()
            started = self.connector.connect(to: target, on: eventLoop, deadline: deadline)
                .flatMapErrorThrowing { error in
                    pool.connectFailed(key)
                    throw error
                }
                .flatMap { connection in start(pool.connected(connection, key: key)) }
        }
        // What the task waits for until the exchange has started: `started`, or its abandonment (cancellation, or the
        // deadline while connecting), whichever comes first. A promise completed twice keeps its first result.
        let ready = started.eventLoop.makePromise(of: Started.self)
        started.cascade(to: ready)
        let abandon: @Sendable (BulwarkError) -> Void = { error in
            abandoned.withLockedValue { $0 = $0 ?? error }
            ready.fail(error)
        }
        let deadlineTimer = deadline.map { deadline in
            started.eventLoop.scheduleTask(deadline: deadline) {
                abandon(BulwarkError(.deadlineExceeded, host: host))
            }
        }
        started.whenComplete { _ in deadlineTimer?.cancel() }
        return try await withTaskCancellationHandler {
            let exchange: Started
            let responseHead: HTTPResponseHead
            let producer: ResponseBodyProducer
            if let streamProducer {
                exchange = try await ready.futureResult.get()
                try await self.stream(streamProducer, through: exchange.handler, host: host)
                (responseHead, producer) = try await exchange.head.get()
            } else {
                (exchange, (responseHead, producer)) = try await ready.futureResult.flatMap { exchange in
                    exchange.head.map { (exchange, $0) }
                }.get()
            }
            return BulwarkResponse(
                url: request.url,
                status: responseHead.status,
                headers: responseHead.headers,
                httpVersion: HTTPVersion(alpnIdentifier: exchange.version) ?? .http1_1,
                serverTrust: target.isTLS ? exchange.lease.connection.trust : nil,
                body: BulwarkResponse.Body(producer: producer, host: host)
            )
        } onCancel: {
            abandon(BulwarkError(.cancelled, host: host))
            // On the connection's event loop, once the exchange has started (at once if it has).
            started.whenSuccess { $0.handler.value.fail(BulwarkError(.cancelled, host: host)) }
        }
    }

    private func stream(
        _ producer: @Sendable (BulwarkRequest.BodyWriter) async throws -> Void,
        through handler: NIOLoopBound<HTTPExchangeHandler>,
        host: String
    ) async throws {
        let writer = BulwarkRequest.BodyWriter { buffer in
            let promise = handler.eventLoop.makePromise(of: Void.self)
            handler.eventLoop.execute { handler.value.writeBodyChunk(buffer, promise: promise) }
            try await promise.futureResult.get()
        }
        do {
            try await producer(writer)
        } catch {
            let failure = BulwarkError(.requestBodyFailed, host: host, detail: String(describing: error))
            handler.eventLoop.execute { handler.value.fail(failure) }
            throw failure
        }
        let promise = handler.eventLoop.makePromise(of: Void.self)
        handler.eventLoop.execute { handler.value.endBody(promise: promise) }
        try await promise.futureResult.get()
    }

    private func makeHead(_ request: BulwarkRequest, target: RequestTarget) -> HTTPRequestHead {
        var headers = request.headers
        if !headers.contains(name: "host") {
            headers.add(name: "host", value: target.hostHeader)
        }
        if self.configuration.decompression != nil, !headers.contains(name: "accept-encoding") {
            headers.add(name: "accept-encoding", value: "gzip, deflate")
        }
        if let body = request.body, !headers.contains(name: "content-length"),
            !headers.contains(name: "transfer-encoding")
        {
            if let length = body.knownLength {
                headers.add(name: "content-length", value: String(length))
            } else {
                headers.add(name: "transfer-encoding", value: "chunked")
            }
        }
        return HTTPRequestHead(version: .http1_1, method: request.method, uri: target.pathAndQuery, headers: headers)
    }
}
