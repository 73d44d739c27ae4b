import BulwarkPolicy
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOSSL

extension RequestExecutor {
    /// One request and its response, without following redirects, on a pooled connection or a new one: a request
    /// that a server's close of a reused keep-alive connection failed is sent once more when that is safe.
    ///
    /// - Parameter credentialEpoch: The pool's sign-out epoch when the request's credentials were attached, if it
    ///   carries any: the connection is marked with it, so that a sign-out closes it.
    func exchange(
        _ request: BulwarkRequest,
        target: RequestTarget,
        deadline: NIODeadline?,
        credentialEpoch: Int?,
        sensitiveHeaderNames: Set<String>,
        hop: HopTrace? = nil
    ) async throws -> BulwarkResponse {
        var retried = false
        var resent = 0
        let proxy = try self.proxies.route(for: target)
        while true {
            let key = self.poolKey(for: target, proxy: proxy)
            var acquired = try await self.pool.acquire(key, deadline: deadline)
            if case .stale = acquired, self.keepsReplacedPolicy(key) {
                acquired = try await self.pool.acquire(key, deadline: deadline, evenIfRetired: true)
            }
            if self.choosesAgain(after: acquired, key: key, target: target) {
                continue
            }
            let written = NIOLockedValueBox(false)
            // The exchange is in flight until it completes (on success, when its response body has ended).
            let registration = InFlightRequests.Registration(in: self.inFlight)
            do {
                return try await self.send(
                    request,
                    target: target,
                    acquired: acquired,
                    key: key,
                    deadline: deadline,
                    credentialEpoch: credentialEpoch,
                    sensitiveHeaderNames: sensitiveHeaderNames,
                    written: written,
                    registration: registration,
                    hop: hop
                )
            } catch {
                registration.end()
                guard self.mayAttemptAgain(credentialEpoch: credentialEpoch) else { throw error }
                if self.mayResend(request, after: error) {
                    // The server did not process it: again (on a new connection once the one that refused it drains).
                    guard resent < Self.maximumResends else { throw error }
                    resent += 1
                    continue
                }
                guard !retried, acquired.isReused, self.mayRetry(request, after: error, written: written) else {
                    throw error
                }
                // The server closed a keep-alive connection as the request went out: one fresh attempt.
                retried = true
            }
        }
    }

    /// The pool key of an attempt. Its client identity is chosen anew for each attempt: a client identity replaced
    /// meanwhile retires the keys made with the old one, and a request asking for such a key is told to choose again.
    /// Not inlined, as `begin` is not.
    @inline(never)
    private func poolKey(for target: RequestTarget, proxy: ProxyRoute?) -> ConnectionPool.Key {
        ConnectionPool.Key(
            scheme: target.scheme,
            host: target.host,
            port: target.port,
            identity: self.identities.identity(scheme: target.scheme, host: target.host),
            policyGeneration: self.policyGeneration,
            proxy: proxy
        )
    }

    /// Whether an attempt must choose its key again: the key was retired, or the client identity was replaced between
    /// the choice and a slot for a new connection (the slot is then given back: no connection is made with an
    /// identity that is no longer current). Not inlined, as `begin` is not.
    @inline(never)
    private func choosesAgain(
        after acquired: ConnectionPool.Acquired,
        key: ConnectionPool.Key,
        target: RequestTarget
    )
        -> Bool
    {
        switch acquired {
        case .stale:
            return true
        case .connect where self.identities.identity(scheme: target.scheme, host: target.host) != key.identity:
            // Replaced between the choice and the slot (and the key already forgotten).
            self.pool.connectFailed(key)
            return true
        case .connect, .leased:
            return false
        }
    }

    /// Whether `error`, of a request on a reused connection, is the server's close of that connection and the request
    /// may be sent again (see ``mayRetry(_:written:)``). Not inlined, as `begin` is not.
    @inline(never)
    private func mayRetry(_ request: BulwarkRequest, after error: any Error, written: NIOLockedValueBox<Bool>) -> Bool {
        guard let error = error as? BulwarkError, error.code == .remoteConnectionClosed else { return false }
        return self.mayRetry(request, written: written.withLockedValue { $0 })
    }

    /// How many times a request the server did not process is sent again (``mayResend(_:after:)``). The connection
    /// that refused it drains after its GOAWAY or its second refused stream (as OkHttp's does), so the next attempts
    /// go to a new one. A server that serves few requests per connection (nginx's `keepalive_requests`) leaves all but
    /// those of a burst sent together unprocessed, and the next connection all but as many again; a server that
    /// refuses every stream is given up on after this many.
    static let maximumResends = 4

    /// Whether a failed attempt may be made again at all: not once the task was cancelled, and not after a sign-out
    /// since the request's credentials were attached (helper-28: sign-out closes the connections that carried them,
    /// and the request then went out again, old `Authorization` and all, on a new connection). Not inlined, as
    /// `begin` is not.
    @inline(never)
    private func mayAttemptAgain(credentialEpoch: Int?) -> Bool {
        guard !Task.isCancelled else { return false }
        guard let credentialEpoch else { return true }
        return self.pool.credentialEpoch == credentialEpoch
    }

    /// Whether `error` says the server did not process the request (HTTP/2: REFUSED_STREAM, a stream above the last one
    /// its GOAWAY names, or one NIOHTTP2 did not open after the GOAWAY), which may then be sent again whatever its
    /// method (RFC 9113 section 8.7), when retries are on and its body can be sent again. Not inlined, as `begin` is
    /// not.
    @inline(never)
    private func mayResend(_ request: BulwarkRequest, after error: any Error) -> Bool {
        guard let error = error as? BulwarkError, error.unprocessed else { return false }
        return self.configuration.retriesRequestsOnStaleConnections && request.body?.isReplayable ?? true
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

    /// Starts the exchange on a connection's or a stream's handler, with an HTTP/2 connection's failure (the error its
    /// head fails with once the connection failed) and what to do when it completes (whether the connection can be
    /// reused); returns the response head's future.
    private typealias BeginExchange =
        @Sendable (
            NIOLoopBound<HTTPExchangeHandler>, NIOLockedValueBox<BulwarkError?>?, @escaping (Bool) -> Void
        ) -> EventLoopFuture<
            (HTTPResponseHead, ResponseBodyContent)
        >

    /// An exchange started on a connection: what the task awaits, and what cancellation fails. A class: it is passed
    /// from the event loop to the task and on to the response, and a reference is copied for less than its fields.
    private final class Started: Sendable {
        let lease: ConnectionPool.Lease
        let handler: NIOLoopBound<HTTPExchangeHandler>
        let head: EventLoopFuture<(HTTPResponseHead, ResponseBodyContent)>
        let version: String
        /// The exchange's number on its handler, which a body's writer and a late cancellation name it by: the
        /// connection may serve another exchange by the time they reach it.
        let number: UInt64

        /// On the event loop, right after the exchange started on `handler`.
        init(
            lease: ConnectionPool.Lease,
            handler: NIOLoopBound<HTTPExchangeHandler>,
            head: EventLoopFuture<(HTTPResponseHead, ResponseBodyContent)>,
            version: String
        ) {
            self.lease = lease
            self.handler = handler
            self.head = head
            self.version = version
            self.number = handler.value.exchangeNumber
        }
    }

    /// What a request without a streamed body waits for: its exchange, and the exchange's response head.
    private typealias Answer = (Started, HTTPResponseHead, ResponseBodyContent)

    /// What `send` waits for once `begin` has set the exchange under way.
    private struct Pending: Sendable {
        /// The exchange started on its connection.
        var started: EventLoopFuture<Started>
        /// For a request without a streamed body: the exchange and its response head, or the error that abandoned
        /// the exchange before it started (cancellation, the deadline, a shutdown), handed over by the event loop.
        var answer: ExchangeHandoff<Answer>
        /// For a request with a streamed body: `started`, or the error that abandoned it first.
        var ready: EventLoopPromise<Started>?
        /// Fails `answer` (or `ready`) and gives a connection that completes later to the pool unused.
        var abandon: @Sendable (BulwarkError) -> Void
        /// The producer of a streamed request body.
        var streamProducer: (@Sendable (BulwarkRequest.BodyWriter) async throws -> Void)?
        /// The length the head declares, which a streamed body must match.
        var declaredLength: Int?
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
    ///
    /// Everything up to the wait is synchronous and done by `begin`, which is not inlined: its temporaries (the head,
    /// the closures, the connector's) then live on the thread's stack, not in this function's async frame, which
    /// stays allocated for as long as the request is in flight.
    private func send(
        _ request: BulwarkRequest,
        target: RequestTarget,
        acquired: ConnectionPool.Acquired,
        key: ConnectionPool.Key,
        deadline: NIODeadline?,
        credentialEpoch: Int?,
        sensitiveHeaderNames: Set<String>,
        written: NIOLockedValueBox<Bool>,
        registration: InFlightRequests.Registration,
        hop: HopTrace?
    ) async throws -> BulwarkResponse {
        let pending = self.begin(
            request,
            target: target,
            acquired: acquired,
            key: key,
            deadline: deadline,
            credentialEpoch: credentialEpoch,
            sensitiveHeaderNames: sensitiveHeaderNames,
            written: written,
            registration: registration,
            hop: hop
        )
        let host = target.host
        return try await withTaskCancellationHandler {
            try await self.response(to: request, target: target, identity: key.identity, pending: pending)
        } onCancel: {
            pending.abandon(BulwarkError(.cancelled, host: host))
            // On the connection's event loop, once the exchange has started (at once if it has).
            pending.started.whenSuccess {
                $0.handler.value.fail(BulwarkError(.cancelled, host: host), exchange: $0.number)
            }
        }
    }

    /// Starts the exchange of `send`: on a pooled connection, or on a new one as soon as its handshake completes, on the connection's event loop; arms
    /// the deadline and registers the exchange for a graceful shutdown.
    @inline(never)
    private func begin(
        _ request: BulwarkRequest,
        target: RequestTarget,
        acquired: ConnectionPool.Acquired,
        key: ConnectionPool.Key,
        deadline: NIODeadline?,
        credentialEpoch: Int?,
        sensitiveHeaderNames: Set<String>,
        written: NIOLockedValueBox<Bool>,
        registration: InFlightRequests.Registration,
        hop: HopTrace?
    ) -> Pending {
        let head = self.makeHead(request, target: target, proxy: key.proxy)
        let bodyBuffer: ByteBuffer?
        let streamProducer: (@Sendable (BulwarkRequest.BodyWriter) async throws -> Void)?
        switch request.body?.storage {
        case .none: (bodyBuffer, streamProducer) = (nil, nil)
        case .bytes(let buffer): (bodyBuffer, streamProducer) = (buffer, nil)
        case .stream(_, let producer): (bodyBuffer, streamProducer) = (nil, producer)
        }
        // A request that is its head alone: its end goes out with its head.
        let headOnly = streamProducer == nil && (bodyBuffer?.readableBytes ?? 0) == 0
        // The length the head declares, which a streamed body must match (the body's own, or the caller's header).
        let declaredLength =
            head.headers.contains(name: "transfer-encoding")
            ? nil : head.headers.first(name: "content-length").flatMap { Int($0) }
        let host = target.host
        let pool = self.pool
        // Set (with the error) when the request was cancelled or timed out before its exchange started.
        let abandoned = NIOLockedValueBox<BulwarkError?>(nil)
        // On the connection's event loop.
        let start: @Sendable (ConnectionPool.Lease) -> EventLoopFuture<Started> = { lease in
            if let error = abandoned.withLockedValue({ $0 }) {
                // Nobody waits for this exchange any more: the connection serves the pool's next request instead.
                switch lease.connection {
                case .http1(let connection): pool.release(connection, key: key, reusable: true)
                case .http2(let connection): connection.leaseEnded()
                }
                return lease.connection.channel.eventLoop.makeFailedFuture(error)
            }
            if let credentialEpoch { lease.connection.markCarriedCredentials(epoch: credentialEpoch) }
            if let hop, target.isTLS {
                // On the connection's event loop, where its TLS handler may be asked.
                hop.connected(tlsVersion: Self.tlsVersion(of: lease.connection.channel))
            }
            let begin: BeginExchange = { handler, connectionFailure, onComplete in
                let promise = handler.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
                let exchange = Exchange(
                    host: host,
                    headPromise: promise,
                    requestKeepAlive: head.isKeepAlive,
                    connectionFailure: connectionFailure,
                    onComplete: onComplete
                )
                if handler.value.start(
                    exchange,
                    head: head,
                    body: bodyBuffer,
                    endsRequest: streamProducer == nil,
                    declaredBodyLength: declaredLength,
                    deadline: deadline
                ) {
                    written.withLockedValue { $0 = true }
                }
                return promise.futureResult
            }
            switch lease.connection {
            case .http1(let connection):
                let response = begin(connection.handler, nil) { reusable in
                    registration.end()
                    pool.release(connection, key: key, reusable: reusable)
                }
                let started = Started(lease: lease, handler: connection.handler, head: response, version: "http/1.1")
                return connection.channel.eventLoop.makeSucceededFuture(started)
            case .http2(let connection):
                return connection.openStream(sensitiveHeaderNames: sensitiveHeaderNames) { stream, handler in
                    let response = begin(handler, connection.failure) { _ in
                        registration.end()
                        // A stream whose request and response both ended is closed by NIO once the frame that
                        // ended it has been handled: closing it here, before that, sends a RST_STREAM, and NIO's
                        // servers stop answering a client after 200 resets in 30 s ("rapid reset" protection).
                        // A request that was its head alone (END_STREAM on its HEADERS, which flow control never
                        // holds back) whose response ended is such a stream: nothing to do. Any other is closed one
                        // turn of the event loop later, when only a stream still open (a request body still being
                        // sent or held back by flow control, or an exchange that failed) is left to close, and reset.
                        // (The completion's keep-alive flag says nothing here: HTTP/1's keep-alive rules read an
                        // HTTP/2 head as "close".)
                        if headOnly && handler.value.isIdle { return }
                        stream.eventLoop.execute { stream.close(promise: nil) }
                    }
                    return Started(lease: lease, handler: handler, head: response, version: "h2")
                }
            }
        }
        let eventLoop: any EventLoop
        switch acquired {
        case .leased(let lease): eventLoop = lease.connection.channel.eventLoop
        case .stale: preconditionFailure("a stale key is chosen again before sending")
        case .connect: eventLoop = self.connector.eventLoopGroup.next()
        }
        // What the task waits for until the exchange has started: the exchange, or its abandonment (cancellation, or
        // the deadline while connecting), whichever comes first.
        let answer = ExchangeHandoff<Answer>()
        let ready = streamProducer == nil ? nil : eventLoop.makePromise(of: Started.self)
        let abandon: @Sendable (BulwarkError) -> Void = { error in
            abandoned.withLockedValue { $0 = $0 ?? error }
            // A promise completed twice keeps its first result.
            ready?.fail(error)
            answer.abandon(error)
        }
        let deadlineTimer = deadline.map { deadline in
            eventLoop.scheduleTask(deadline: deadline) {
                abandon(BulwarkError(.deadlineExceeded, host: host))
            }
        }
        // On the event loop: what the task waits for follows the exchange from there. Callbacks added to a future
        // from the task's thread would each be one more task on the event loop (and perhaps a wake-up of it).
        let follow: @Sendable (EventLoopFuture<Started>) -> Void = { started in
            if let deadlineTimer { started.whenComplete { _ in deadlineTimer.cancel() } }
            if let ready {
                started.whenComplete { result in
                    if case .success(let exchange) = result, !written.withLockedValue({ $0 }) {
                        // Its head was not written (refused as `invalid_request`, or the connection had closed), and
                        // the head's failure says why: the body's producer must not run, or its chunks would go out
                        // with no head on a connection the pool may have handed to another request.
                        exchange.head.map { _ in exchange }.cascade(to: ready)
                    } else {
                        ready.completeWith(result)
                    }
                }
                return
            }
            started.whenComplete { result in
                switch result {
                case .success(let exchange):
                    answer.exchangeStarted()
                    exchange.head.whenComplete { head in
                        answer.complete(head.map { (exchange, $0.0, $0.1) })
                    }
                case .failure(let error):
                    answer.complete(.failure(error))
                }
            }
        }
        let started: EventLoopFuture<Started>
        switch acquired {
        case .leased(let lease):
            let promise = eventLoop.makePromise(of: Started.self)
            started = promise.futureResult
            // One task on the connection's event loop: the exchange starts there, and is followed from there.
            eventLoop.execute {
                follow(promise.futureResult)
                start(lease).cascade(to: promise)
            }
        case .stale:
            preconditionFailure("a stale key is chosen again before sending")
        case .connect:
            started = self.connector.connect(
                to: target,
                on: eventLoop,
                deadline: deadline,
                identity: key.identity,
                proxy: key.proxy
            )
            .flatMapErrorThrowing { error in
                pool.connectFailed(key)
                throw error
            }
            .flatMap { connection in start(pool.connected(connection, key: key)) }
            started.eventLoop.execute { follow(started) }
        }
        // A graceful shutdown past its grace period fails the exchange as cancellation does.
        registration.start { error in
            abandon(error)
            started.whenSuccess { $0.handler.value.fail(error, exchange: $0.number) }
        }
        return Pending(
            started: started,
            answer: answer,
            ready: ready,
            abandon: abandon,
            streamProducer: streamProducer,
            declaredLength: declaredLength
        )
    }

    /// Waits for the exchange `pending` started (writing a streamed body meanwhile) and returns the response once its
    /// head arrived.
    private func response(
        to request: BulwarkRequest,
        target: RequestTarget,
        identity: ClientIdentity?,
        pending: Pending
    ) async throws -> BulwarkResponse {
        let host = target.host
        let exchange: Started
        let responseHead: HTTPResponseHead
        let content: ResponseBodyContent
        if let streamProducer = pending.streamProducer, let ready = pending.ready {
            (exchange, responseHead, content) = try await self.streamed(
                streamProducer,
                ready: ready,
                declaredLength: pending.declaredLength,
                host: host
            )
        } else {
            (exchange, responseHead, content) = try await pending.answer.value()
        }
        var body = BulwarkResponse.Body(content, host: host)
        // nginx's page is a refusal only from a server that asked for a certificate on this connection.
        if target.isTLS && exchange.lease.connection.trust.certificateRequested
            && ClientCertificateRefusalPage.mayBe(responseHead, method: request.method)
        {
            body = try await Self.refusalChecked(body, target: target, identity: identity)
        }
        return Self.response(url: request.url, head: responseHead, exchange: exchange, target: target, body: body)
    }

    /// The exchange of a request with a streamed body: waits for it to start, writes the body, and waits for the
    /// response head. Not inlined: a request without a streamed body keeps no frame for it.
    @inline(never)
    private func streamed(
        _ streamProducer: @Sendable (BulwarkRequest.BodyWriter) async throws -> Void,
        ready: EventLoopPromise<Started>,
        declaredLength: Int?,
        host: String
    ) async throws -> (Started, HTTPResponseHead, ResponseBodyContent) {
        let exchange = try await ready.futureResult.get()
        try await self.stream(
            streamProducer,
            declaredLength: declaredLength,
            through: exchange.handler,
            exchange: exchange.number,
            host: host
        )
        let (responseHead, content) = try await exchange.head.get()
        return (exchange, responseHead, content)
    }

    /// Perhaps nginx's page refusing the client certificate (a few hundred bytes, as declared): reads it whole, and
    /// either fails as a TLS alert would, or gives the page back as the body. Not inlined: a response that cannot be
    /// that page keeps no frame for it.
    @inline(never)
    private static func refusalChecked(
        _ body: BulwarkResponse.Body,
        target: RequestTarget,
        identity: ClientIdentity?
    ) async throws -> BulwarkResponse.Body {
        let page = try await body.collect(upTo: ClientCertificateRefusalPage.maximumLength)
        try Self.checkRefusal(in: page, target: target, identity: identity)
        return BulwarkResponse.Body(producer: nil, host: target.host, buffered: page)
    }

    /// Fails as a TLS alert would when `page` is nginx's page refusing the client certificate. Not inlined, as `begin` is not.
    @inline(never)
    private static func checkRefusal(in page: ByteBuffer, target: RequestTarget, identity: ClientIdentity?) throws {
        if let refusal = ClientCertificateRefusalPage.refusal(in: page) {
            throw ClientCertificateRefusalPage.error(
                refusal,
                host: target.host,
                authority: HandshakeFailure.authority(host: target.host, port: target.port),
                identity: identity
            )
        }
    }

    /// The response of an exchange whose head arrived. Not inlined, as `begin` is not.
    @inline(never)
    private static func response(
        url: URL,
        head: HTTPResponseHead,
        exchange: Started,
        target: RequestTarget,
        body: BulwarkResponse.Body
    ) -> BulwarkResponse {
        BulwarkResponse(
            url: url,
            status: head.status,
            headers: head.headers,
            httpVersion: HTTPVersion(alpnIdentifier: exchange.version) ?? .http1_1,
            serverTrust: target.isTLS ? exchange.lease.connection.trust : nil,
            body: body
        )
    }

    /// Writes a streamed body through `handler`, then ends it. When the head declares a `content-length`, the body
    /// must be exactly that long: a chunk that would pass it is not written, and a body that ends short is not ended
    /// (either fails the exchange, which closes the connection). A longer body sent on would be read by an HTTP/1.1
    /// server as the start of a next request.
    private func stream(
        _ producer: @Sendable (BulwarkRequest.BodyWriter) async throws -> Void,
        declaredLength: Int?,
        through handler: NIOLoopBound<HTTPExchangeHandler>,
        exchange: UInt64,
        host: String
    ) async throws {
        let written = NIOLockedValueBox(0)
        // Hands each chunk to the connection without waiting for it to be written, while the connection keeps up.
        let body = RequestBodyWriter(handler: handler, exchange: exchange)
        let writer = BulwarkRequest.BodyWriter { buffer in
            if let declaredLength {
                let total = written.withLockedValue { written in
                    written += buffer.readableBytes
                    return written
                }
                guard total <= declaredLength else {
                    throw BulwarkError(
                        .requestBodyFailed,
                        host: host,
                        detail: "the body is longer than its declared content-length of \(declaredLength) bytes"
                    )
                }
            }
            try await body.write(buffer)
        }
        do {
            try await producer(writer)
            if let declaredLength {
                let total = written.withLockedValue { $0 }
                guard total == declaredLength else {
                    throw BulwarkError(
                        .requestBodyFailed,
                        host: host,
                        detail: "the body ended after \(total) of its declared \(declaredLength) bytes"
                    )
                }
            }
        } catch {
            // The server answered before the body was all sent: its answer stands, and the connection is closed.
            if body.serverAnsweredFirst { return }
            let failure =
                (error as? BulwarkError).flatMap { $0.code == .requestBodyFailed ? $0 : nil }
                ?? BulwarkError(.requestBodyFailed, host: host, detail: String(describing: error))
            handler.eventLoop.execute { handler.value.failBody(failure, writer: body) }
            throw failure
        }
        do {
            try await body.end()
        } catch  where body.serverAnsweredFirst {
            return
        }
    }

    /// The TLS version a connection negotiated with the origin, as tracing attributes name it (`1.2`, `1.3`); on its
    /// event loop. Through an HTTPS proxy the pipeline holds the proxy's TLS handler first: the origin's is named.
    private static func tlsVersion(of channel: any Channel) -> String? {
        let context = try? channel.pipeline.syncOperations.context(name: Connector.originTLSHandlerName)
        switch (context?.handler as? NIOSSLHandler)?.tlsVersion {
        case .tlsv13: return "1.3"
        case .tlsv12: return "1.2"
        case .tlsv11: return "1.1"
        case .tlsv1: return "1.0"
        case nil: return nil
        }
    }

    private func makeHead(_ request: BulwarkRequest, target: RequestTarget, proxy: ProxyRoute?) -> HTTPRequestHead {
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
        if let proxy, proxy.endpoint.speaksHTTP, !target.isTLS {
            return Self.absoluteFormHead(method: request.method, headers: headers, target: target, proxy: proxy)
        }
        return HTTPRequestHead(version: .http1_1, method: request.method, uri: target.pathAndQuery, headers: headers)
    }
}
