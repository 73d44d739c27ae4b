import BulwarkPolicy
import Foundation
import Logging
import NIOCore
import NIOPosix

/// An HTTPS client whose every handshake is judged by a ``/BulwarkPolicy/ServerTrustManager``.
///
/// ```swift
/// let client = BulwarkClient(configuration: .init(trust: try ServerTrustManager(evaluators: [
///     "api.example.com": .publicKeys(try PinSet(["sha256/…", "sha256/…"])),
/// ])))
/// let response = try await client.execute(BulwarkRequest(url: "https://api.example.com/v1/me"))
/// let body = try await response.body.collect(upTo: 1 << 20)
/// await client.shutdown()
/// ```
///
/// Share one client across an application: it pools connections (HTTP/1.1 keep-alive and HTTP/2 streams) per
/// origin. Requests to hosts the trust manager does not list fail during the handshake, before any request byte
/// is sent.
///
/// Making a client never fails: an option it cannot use (an empty cipher suite list, a resolve override that is not
/// an IP address) is reported on first use, by every request failing with
/// ``BulwarkError/Code/invalidConfiguration`` naming the option, before anything is resolved or connected.
///
/// Threading: every method may be called from any task. Responses stream on the client's event loops; a response
/// body that is not read holds its connection until it is read or dropped.
public final class BulwarkClient: Sendable {
    /// The configuration the client was made with, its ``Configuration/clientIdentities`` being the identities
    /// offered now (see ``updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)``).
    public var configuration: Configuration {
        var configuration = self.baseConfiguration
        configuration.clientIdentities = self.identities.current
        return configuration
    }

    /// The configuration without its client identities, which live in ``identities`` only: no copy of the
    /// configuration keeps a replaced identity's key alive.
    let baseConfiguration: Configuration
    let pool: ConnectionPool
    /// The client identities offered now.
    let identities: ClientIdentityStore
    /// The policy applied now (a ``PolicyUpdater`` replaces it while the client runs).
    let policies: PolicyStore
    /// The connector, when the configuration is usable (for the identity contexts it keeps).
    let connector: Connector?
    /// What runs requests, or, for a configuration the client cannot use, the error every request fails with.
    private let executor: Result<RequestExecutor, BulwarkError>
    private let reporter: PinFailureReporter?
    private let backgroundActivityLogger: Logger
    /// The requests not finished yet, for ``shutdown(gracePeriod:)``.
    let inFlight = InFlightRequests()
    /// Whether this is ``shared``, which is never shut down.
    let isShared: Bool

    /// Creates a client on `eventLoopGroup` (NIO's shared singleton group by default).
    ///
    /// It never fails: an option the client cannot use makes each of its requests fail with
    /// ``BulwarkError/Code/invalidConfiguration``, whose description names the option.
    ///
    /// - Parameters:
    ///   - configuration: What the client does: its trust policy, TLS options, timeouts, redirects, credentials and
    ///     event monitor.
    ///   - eventLoopGroup: The event loops the client's connections run on.
    ///   - backgroundActivityLogger: Where the client logs what no request asked for, and each request's debug and
    ///     trace messages unless ``execute(_:deadline:logger:)`` is given another logger. Nothing is logged by
    ///     default.
    public convenience init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        backgroundActivityLogger: Logger = BulwarkClient.disabledLogger
    ) {
        self.init(
            configuration: configuration,
            eventLoopGroup: eventLoopGroup,
            backgroundActivityLogger: backgroundActivityLogger,
            isShared: false
        )
    }

    init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup,
        backgroundActivityLogger: Logger,
        isShared: Bool
    ) {
        self.isShared = isShared
        let identities = ClientIdentityStore(configuration.clientIdentities)
        self.identities = identities
        var configuration = configuration
        configuration.clientIdentities = ClientIdentities()
        self.baseConfiguration = configuration
        self.policies = PolicyStore(configuration)
        self.backgroundActivityLogger = backgroundActivityLogger
        let pool = ConnectionPool(options: configuration.pool, eventLoopGroup: eventLoopGroup)
        self.pool = pool
        // The system roots' index, once per process, in the background from now: the first handshake then finds it
        // built, or nearly.
        if configuration.trust.namesSystemRoots { SystemTrustRootsLoading.load.start() }
        if let error = configuration.validationError {
            self.reporter = nil
            self.connector = nil
            self.executor = .failure(error)
            return
        }
        let reporter = configuration.pinFailureReporting.map {
            PinFailureReporter(configuration: $0, client: configuration)
        }
        do {
            let connector = try Connector(
                settings: ConnectionSettings(configuration),
                eventLoopGroup: eventLoopGroup,
                reporter: reporter
            )
            self.reporter = reporter
            self.connector = connector
            self.executor = .success(
                RequestExecutor(
                    configuration: configuration,
                    connector: connector,
                    pool: pool,
                    identities: identities,
                    inFlight: self.inFlight,
                    policies: self.policies
                )
            )
        } catch {
            self.reporter = nil
            self.connector = nil
            if let reporter { Task { await reporter.shutdown() } }
            self.executor = .failure(
                error as? BulwarkError
                    ?? .invalidConfiguration(
                        "tls: the TLS library refused the TLS options",
                        underlying: String(reflecting: error)
                    )
            )
        }
    }

    /// A logger that drops every message: the default background logger.
    public static let disabledLogger = Logger(label: "bulwark.disabled") { _ in SwiftLogNoOpLogHandler() }

    /// Sends a request and returns the response as soon as its head arrives.
    ///
    /// Redirects are followed only as ``Configuration/redirects`` allows, each hop decided by
    /// ``/BulwarkPolicy/RedirectPolicy/decide(_:)``: the request is rewritten (method, body, stripped credentials),
    /// every hop is reported to the event monitor, and the response's ``BulwarkResponse/redirects`` lists them.
    ///
    /// - Parameters:
    ///   - request: The request to send.
    ///   - deadline: When the whole exchange must be over: waiting for a pooled connection, connecting, the TLS
    ///     handshake, every redirect hop and the response body. Passing it fails the request with
    ///     ``BulwarkError/Code/deadlineExceeded``, whichever of these it is in.
    ///   - logger: Where the request's debug and trace messages go (its start, each hop, the response head), with
    ///     its number as `bulwark.request_id` metadata; the client's background logger when nil. URLs are logged
    ///     without query or user information, header values that carry credentials as `<redacted>`.
    /// - Throws: ``BulwarkError``; ``BulwarkError/Code/invalidConfiguration`` for every request of a client whose
    ///   configuration it cannot use; ``BulwarkError/Code/invalidURL`` for a request whose URL is unusable;
    ///   ``BulwarkError/Code/redirectRefused`` when the policy refuses a hop (unless it returns the redirect
    ///   response instead). Cancelling the task cancels the request at any stage, with
    ///   ``BulwarkError/Code/cancelled``.
    public func execute(
        _ request: BulwarkRequest,
        deadline: NIODeadline? = nil,
        logger: Logger? = nil
    ) async throws -> BulwarkResponse {
        let executor = try self.enter()
        defer { self.inFlight.leave() }
        return try await executor.execute(
            request,
            deadline: deadline,
            logger: logger ?? self.backgroundActivityLogger
        )
    }

    /// The executor, once the request is counted in flight. Not inlined: its temporaries (the result, the error)
    /// then live on the thread's stack, not in the async frame that every request in flight keeps.
    @inline(never)
    private func enter() throws -> RequestExecutor {
        let executor = try self.executor.get()
        try self.inFlight.enter()
        return executor
    }

    /// Sends a request with a time limit for the whole exchange; see ``execute(_:deadline:logger:)``.
    public func execute(
        _ request: BulwarkRequest,
        timeout: TimeAmount,
        logger: Logger? = nil
    ) async throws -> BulwarkResponse {
        try await self.execute(request, deadline: .now() + timeout, logger: logger)
    }

    /// Closes pooled connections, after the pin-failure reports on their way are sent or abandoned; later requests
    /// fail with ``BulwarkError/Code/clientShutdown``. Does nothing for ``shared``, which lives as long as the process.
    public func shutdown() async {
        guard !self.isShared else { return }
        await self.reporter?.shutdown()
        await self.pool.shutdown()
    }

    /// The number of connections the pool holds open (idle or in use).
    public var openConnectionCount: Int { self.pool.openConnectionCount }
}
