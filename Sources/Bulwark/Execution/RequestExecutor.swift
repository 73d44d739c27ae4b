import BulwarkPolicy
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Runs requests for a ``BulwarkClient``: the redirect loop, and for each hop its admission, credentials, exchange,
/// cookies and 401 refresh, top to bottom in this file; the exchange on a connection is in
/// `RequestExecutor+Exchange.swift`.
///
/// What a hop leads to is decided by a ``RedirectState`` (a value, no I/O); which credentials it gets, by the
/// ``CredentialAttacher``.
struct RequestExecutor: Sendable {
    /// The client's configuration, its trust manager, allowlist and redirect policy being the request's policy (see
    /// ``under(_:)``).
    var configuration: BulwarkClient.Configuration
    /// The client's connector, its trust manager and decision cache being the request's policy's.
    var connector: Connector
    let pool: ConnectionPool
    let attacher: CredentialAttacher
    /// The client identities offered now (they change with ``BulwarkClient/updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)``).
    let identities: ClientIdentityStore
    /// The client's requests in flight: each exchange registers there until it completes, so that a graceful
    /// shutdown can wait for it and, past its grace period, fail it.
    let inFlight: InFlightRequests
    /// The policy applied now, read once by each request; nil for an executor that keeps its configuration's.
    let policies: PolicyStore?
    /// The policy this executor runs a request under (see ``under(_:)``); nil before one was read.
    var policy: LivePolicy?
    /// The proxy of each request and hop.
    let proxies: ProxyRouter

    init(
        configuration: BulwarkClient.Configuration,
        connector: Connector,
        pool: ConnectionPool,
        identities: ClientIdentityStore,
        inFlight: InFlightRequests = InFlightRequests(),
        policies: PolicyStore? = nil
    ) {
        self.configuration = configuration
        self.connector = connector
        self.pool = pool
        self.inFlight = inFlight
        self.attacher = CredentialAttacher(configuration: configuration)
        self.identities = identities
        self.policies = policies
        self.proxies = ProxyRouter(configuration: configuration)
    }

    /// A request's response, after the redirects the policy follows; traced when the client has a tracer.
    func execute(_ request: BulwarkRequest, deadline: NIODeadline?, logger: Logger) async throws -> BulwarkResponse {
        // The policy is read once: every hop of the request runs under it, whatever is applied meanwhile.
        if self.policy == nil, let policies = self.policies {
            return try await self.under(policies.current).execute(request, deadline: deadline, logger: logger)
        }
        guard let tracer = self.configuration.tracing.tracer else {
            return try await self.run(request, deadline: deadline, logger: logger, trace: nil)
        }
        let trace = RequestTrace(tracer: tracer, request: request)
        do {
            let response = try await self.run(request, deadline: deadline, logger: logger, trace: trace)
            trace.finish(response)
            return response
        } catch {
            trace.fail(error)
            throw error
        }
    }

    private func run(
        _ request: BulwarkRequest,
        deadline: NIODeadline?,
        logger: Logger,
        trace: RequestTrace?
    ) async throws -> BulwarkResponse {
        let requestID = Self.nextRequestID()
        var logger = logger
        if logger.logLevel <= .debug {
            // Only for a logger that logs the request's messages: no text is made for the others.
            logger[metadataKey: "bulwark.request_id"] = "\(requestID)"
        }
        logger.debug("request started", metadata: ["bulwark.request": "\(request)"])
        // The session the request started in: after a sign-out, none of its responses may store a cookie.
        let cookieEpoch = self.configuration.cookies?.epoch
        var state = RedirectState(request: request, policy: self.configuration.redirects, requestID: requestID)
        while true {
            let hop = trace?.startHop(state.request, number: state.history.count)
            let (sent, credentials): (BulwarkResponse, HopCredentials)
            do {
                (sent, credentials) = try await self.send(
                    state.request,
                    among: state.allowedEntries,
                    deadline: deadline,
                    requestID: requestID,
                    cookieEpoch: cookieEpoch,
                    logger: logger,
                    hop: hop
                )
            } catch {
                hop?.fail(error)
                throw error
            }
            self.record(state.hopSent(credentials))
            var response = sent
            let decided = state.history.count
            let (next, events) = state.next(
                status: Int(response.status.code),
                locations: response.headers["location"]
            )
            self.record(events)
            if let hop {
                hop.responded(response)
                if state.history.count > decided, let record = state.history.last { hop.decided(record) }
                hop.end()
            }
            switch next {
            case .finish, .returnRedirect:
                response.redirects = state.history
                logger.debug(
                    "response head received",
                    metadata: [
                        "bulwark.status": "\(response.status.code)", "bulwark.redirects": "\(state.history.count)",
                    ]
                )
                return response
            case .fail(let error):
                await Self.discard(response.body)
                logger.debug("redirect refused", metadata: ["bulwark.error": "\(error)"])
                throw error
            case .follow(let next):
                // `state.request` is now `next`, the hop sent in the next turn.
                await Self.discard(response.body)
                logger.debug("redirect followed", metadata: ["bulwark.request": "\(next)"])
            }
        }
    }

    private func record(_ events: [SecurityEvent]) {
        for event in events {
            self.configuration.eventMonitor.record(event)
        }
    }

    /// Sends one request or redirect hop: admits it, attaches the store's in-scope credentials (of the entries in
    /// `allowed`, all when nil) and the jar's cookies, sends it, stores the response's cookies, and after a 401 to a
    /// request that carried store credentials asks their providers for new ones and sends it once more.
    ///
    /// - Parameter cookieEpoch: The cookie jar's epoch when the request started: a response stores cookies only if
    ///   no sign-out happened since.
    /// - Returns: The response, and what the store attached to the hop (to the last attempt, after a refresh).
    private func send(
        _ request: BulwarkRequest,
        among allowed: Set<CredentialStore.EntryID>?,
        deadline: NIODeadline?,
        requestID: UInt64,
        cookieEpoch: UInt64?,
        logger: Logger,
        hop: HopTrace?
    ) async throws -> (BulwarkResponse, HopCredentials) {
        let target = try self.admit(request, requestID: requestID)
        var retried = false
        while true {
            let epoch = self.pool.credentialEpoch
            var outgoing = request
            let credentials = try await self.attacher.attach(
                to: &outgoing.headers,
                for: request.url,
                among: allowed,
                host: target.host,
                requestID: requestID
            )
            hop?.inject(into: &outgoing.headers)
            logger.trace(
                "sending",
                metadata: ["bulwark.host": "\(target.host)", "bulwark.store_credentials": "\(credentials.headerNames)"]
            )
            let response = try await self.exchange(
                outgoing,
                target: target,
                deadline: deadline,
                credentialEpoch: credentials.carriesCredentials ? epoch : nil,
                hop: hop
            )
            if let jar = self.configuration.cookies, let cookieEpoch {
                let fields = response.headers["set-cookie"]
                if !fields.isEmpty { jar.store(setCookieFields: fields, from: request.url, epoch: cookieEpoch) }
            }
            guard response.status == .unauthorized, !retried, credentials.attachedFromStore,
                let store = self.configuration.credentials, request.body?.isReplayable ?? true
            else {
                return (response, credentials)
            }
            retried = true
            let refreshed: Bool
            do {
                refreshed = try await store.refreshAfterRejection(for: request.url, among: credentials.entries)
            } catch {
                await Self.discard(response.body)
                throw BulwarkError(.credentialRefreshFailed, host: target.host, detail: String(describing: error))
            }
            guard refreshed else {
                return (response, credentials)
            }
            logger.debug("credentials refreshed after a 401; sending again")
            await Self.discard(response.body)
        }
    }

    /// Checks a request against everything that can refuse it without the network: its URL text, the allowlist, the
    /// URL, plain HTTP. Nothing is resolved, connected or refreshed for a refused request.
    private func admit(_ request: BulwarkRequest, requestID: UInt64) throws -> RequestTarget {
        if let error = request.urlError {
            throw error
        }
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

    private static let requestCounter = NIOLockedValueBox<UInt64>(0)

    /// A number unique within the process, for the events of one request.
    private static func nextRequestID() -> UInt64 {
        self.requestCounter.withLockedValue { value in
            value += 1
            return value
        }
    }
}
