import BulwarkPolicy
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Tracing

/// Runs requests for a ``BulwarkClient``: the redirect loop, and for each hop its admission, credentials, exchange,
/// cookies and 401 refresh, top to bottom in this file; the exchange on a connection is in
/// `RequestExecutor+Exchange.swift`.
///
/// What a hop leads to is decided by a ``RedirectState`` (a value, no I/O); which credentials it gets, by the
/// ``CredentialAttacher``.
///
/// A class, not a value: every suspended frame of a request in flight (`execute`, `run`, `send`, `exchange`, the
/// exchange's closures) holds its executor, and the configuration it carries is a few kilobytes; as a value it was
/// copied into each of those frames (about 17 KiB per request in flight, kept in the task's stack slabs).
final class RequestExecutor: Sendable {
    /// The client's configuration, its trust manager, allowlist and redirect policy being the request's policy (see
    /// ``under(_:)``).
    let configuration: BulwarkClient.Configuration
    /// The client's connector, its trust manager and decision cache being the request's policy's.
    let connector: Connector
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
    let policy: LivePolicy?
    /// The generation of ``policy`` (0 without one), for the pool keys: read without copying the policy into the
    /// frames of a request in flight.
    let policyGeneration: Int
    /// The proxy of each request and hop.
    let proxies: ProxyRouter
    /// The executor under the policy applied last, made once for each policy rather than for each request.
    private let latest = NIOLockedValueBox<RequestExecutor?>(nil)

    convenience init(
        configuration: BulwarkClient.Configuration,
        connector: Connector,
        pool: ConnectionPool,
        identities: ClientIdentityStore,
        inFlight: InFlightRequests = InFlightRequests(),
        policies: PolicyStore? = nil
    ) {
        self.init(
            configuration: configuration,
            connector: connector,
            pool: pool,
            attacher: CredentialAttacher(configuration: configuration),
            identities: identities,
            inFlight: inFlight,
            policies: policies,
            policy: nil,
            proxies: ProxyRouter(configuration: configuration)
        )
    }

    /// An executor from its parts, as they are (``under(_:)`` keeps the attacher and the proxy router).
    init(
        configuration: BulwarkClient.Configuration,
        connector: Connector,
        pool: ConnectionPool,
        attacher: CredentialAttacher,
        identities: ClientIdentityStore,
        inFlight: InFlightRequests,
        policies: PolicyStore?,
        policy: LivePolicy?,
        proxies: ProxyRouter
    ) {
        self.configuration = configuration
        self.connector = connector
        self.pool = pool
        self.inFlight = inFlight
        self.attacher = attacher
        self.identities = identities
        self.policies = policies
        self.policy = policy
        self.policyGeneration = policy?.generation ?? 0
        self.proxies = proxies
    }

    /// This executor under `policy` (see ``under(_:)``), made once per policy: the requests that read the same
    /// policy share it.
    private func underCurrent(_ policy: LivePolicy) -> RequestExecutor {
        self.latest.withLockedValue { latest in
            if let latest, latest.policy != nil, latest.policyGeneration == policy.generation {
                return latest
            }
            let executor = self.under(policy)
            latest = executor
            return executor
        }
    }

    /// A request's response, after the redirects the policy follows; traced when the client has a tracer.
    func execute(_ request: BulwarkRequest, deadline: NIODeadline?, logger: Logger) async throws -> BulwarkResponse {
        let executor = self.forRequest()
        guard let tracer = executor.configuration.tracing.tracer else {
            return try await executor.run(request, deadline: deadline, logger: logger, trace: nil)
        }
        return try await executor.traced(request, tracer: tracer, deadline: deadline, logger: logger)
    }

    /// The executor a request starts now runs under: the policy is read once, and every hop of the request runs
    /// under it, whatever is applied meanwhile. Not inlined, like the other synchronous steps of a request: their
    /// temporaries then live on the thread's stack, not in the async frames a request in flight keeps.
    @inline(never)
    private func forRequest() -> RequestExecutor {
        guard self.policy == nil, let policies = self.policies else { return self }
        return self.underCurrent(policies.current)
    }

    /// ``execute(_:deadline:logger:)`` for a client with a tracer. Not inlined: a client without one keeps no frame
    /// for it.
    @inline(never)
    private func traced(
        _ request: BulwarkRequest,
        tracer: any Tracer,
        deadline: NIODeadline?,
        logger: Logger
    ) async throws -> BulwarkResponse {
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

    /// The redirect loop of one request. Its synchronous steps (the start, the decision after each hop) are in
    /// functions that are not inlined, so that their temporaries live on the thread's stack and not in this
    /// function's async frame, which stays allocated while the request is in flight. Inlined into its two callers:
    /// a frame of its own would be one more allocation, and a call's result slot, per request.
    @inline(__always)
    private func run(
        _ request: BulwarkRequest,
        deadline: NIODeadline?,
        logger callerLogger: Logger,
        trace: RequestTrace?
    ) async throws -> BulwarkResponse {
        // Assigned as one tuple to declared locals: a `let` tuple copied into a `var` state, or the logger passed
        // `inout`, made this frame hundreds of bytes larger (scripts/async-frames-ir.py).
        var state: RedirectState
        let logger: Logger
        let cookieEpoch: UInt64?
        (state, logger, cookieEpoch) = self.start(request, logger: callerLogger)
        let requestID = state.requestID
        while true {
            let hop = trace?.startHop(state.request, number: state.history.count)
            var response: BulwarkResponse
            let credentials: HopCredentials
            do {
                (response, credentials) = try await self.send(
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
            switch self.decide(&state, response: &response, credentials: credentials, hop: hop, logger: logger) {
            case .finish:
                return response
            case .fail(let error):
                await Self.discard(response)
                throw error
            case .follow:
                // `state.request` is now the hop sent in the next turn.
                await Self.discard(response)
            }
        }
    }

    /// What ``run(_:deadline:logger:trace:)`` does after a hop.
    private enum HopOutcome {
        /// The response is the answer.
        case finish
        /// The request fails with this error (a ``BulwarkError``), once the response body is discarded. Boxed: this
        /// enum has a slot in `run`'s async frame, and a ``BulwarkError`` inline is about 200 bytes.
        case fail(any Error)
        /// The next hop is sent, once the response body is discarded.
        case follow
    }

    /// A request's redirect state (with its number), its logger (with the number as metadata when it logs debug
    /// messages) and the cookie jar's epoch when it started; logs the start.
    @inline(never)
    private func start(_ request: BulwarkRequest, logger: Logger) -> (RedirectState, Logger, UInt64?) {
        let requestID = Self.nextRequestID()
        var logger = logger
        if logger.logLevel <= .debug {
            // Only for a logger that logs the request's messages: no text is made for the others.
            logger[metadataKey: "bulwark.request_id"] = "\(requestID)"
        }
        logger.debug("request started", metadata: ["bulwark.request": "\(request)"])
        let state = RedirectState(request: request, policy: self.configuration.redirects, requestID: requestID)
        // The session the request started in: after a sign-out, none of its responses may store a cookie.
        return (state, logger, self.configuration.cookies?.epoch)
    }

    /// Records a hop's events and decides what follows it: the response as the answer (with its redirects), a
    /// failure, or the next hop (`state.request`).
    @inline(never)
    private func decide(
        _ state: inout RedirectState,
        response: inout BulwarkResponse,
        credentials: HopCredentials,
        hop: HopTrace?,
        logger: Logger
    ) -> HopOutcome {
        self.record(state.hopSent(credentials))
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
            return .finish
        case .fail(let error):
            logger.debug("redirect refused", metadata: ["bulwark.error": "\(error)"])
            return .fail(error)
        case .follow(let next):
            logger.debug("redirect followed", metadata: ["bulwark.request": "\(next)"])
            return .follow
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
            Self.logSending(to: target, credentials: credentials, logger: logger)
            let response = try await self.exchange(
                outgoing,
                target: target,
                deadline: deadline,
                credentialEpoch: credentials.carriesCredentials ? epoch : nil,
                sensitiveHeaderNames: credentials.sensitiveHeaderNames,
                hop: hop
            )
            self.storeCookies(of: response, for: request, epoch: cookieEpoch)
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
                await Self.discard(response)
                throw Self.refreshFailed(host: target.host, error)
            }
            guard refreshed else {
                return (response, credentials)
            }
            Self.logRefreshed(logger: logger)
            await Self.discard(response)
        }
    }

    /// Logs a hop as it is sent. Not inlined, like the other synchronous steps of a request: their temporaries then
    /// live on the thread's stack, not in the async frames a request in flight keeps.
    @inline(never)
    private static func logSending(to target: RequestTarget, credentials: HopCredentials, logger: Logger) {
        logger.trace(
            "sending",
            metadata: ["bulwark.host": "\(target.host)", "bulwark.store_credentials": "\(credentials.headerNames)"]
        )
    }

    /// Logs a hop sent once more with refreshed credentials. Not inlined, as `logSending` is not.
    @inline(never)
    private static func logRefreshed(logger: Logger) {
        logger.debug("credentials refreshed after a 401; sending again")
    }

    /// Stores a response's cookies in the jar, if the client has one and no sign-out happened since `epoch`.
    @inline(never)
    private func storeCookies(of response: BulwarkResponse, for request: BulwarkRequest, epoch: UInt64?) {
        if let jar = self.configuration.cookies, let epoch {
            let fields = response.headers["set-cookie"]
            if !fields.isEmpty { jar.store(setCookieFields: fields, from: request.url, epoch: epoch) }
        }
    }

    /// The error of a request whose credentials could not be refreshed after a 401 (a ``BulwarkError``, boxed, as
    /// ``HopOutcome/fail(_:)``'s is).
    @inline(never)
    private static func refreshFailed(host: String, _ error: any Error) -> any Error {
        BulwarkError(.credentialRefreshFailed, host: host, detail: String(describing: error))
    }

    /// Checks a request against everything that can refuse it without the network: its URL text, the allowlist, the
    /// URL, plain HTTP. Nothing is resolved, connected or refreshed for a refused request.
    @inline(never)
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
    /// Takes the response, not its body: a copy of the body made by the caller would take a slot in the caller's
    /// async frame.
    static func discard(_ response: BulwarkResponse) async {
        var discarded = 0
        do {
            for try await buffer in response.body {
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
