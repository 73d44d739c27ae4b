import Logging
import NIOPosix

extension BulwarkClient {
    /// A client for the public web, shared by the whole process, as `HTTPClient.shared` and `URLSession.shared`:
    /// every host is judged by ``/BulwarkPolicy/DefaultTrustEvaluator`` (the system's roots, host name validation, the web PKI
    /// rules), with no pins, on NIO's shared event loop group, with the secure defaults of
    /// ``Configuration/init(trust:)`` (TLS 1.2 or newer, same-host https-only redirects, no cookies, no
    /// credentials, no allowlist, no event monitor), traced by the tracer bootstrapped in `InstrumentationSystem`
    /// before its first use, if any.
    ///
    /// It lives as long as the process: ``shutdown()`` and ``shutdown(gracePeriod:)`` do nothing on it. For pins,
    /// an allowlist, credentials, cookies or an event monitor make your own client — one per policy, shared across
    /// the application, shut down when the application stops.
    public static let shared = BulwarkClient(
        configuration: Configuration(
            trust: ServerTrustManager(
                allHostsMustBeEvaluated: false,
                patterns: [],
                defaultEvaluator: DefaultTrustEvaluator()
            )
        ),
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        backgroundActivityLogger: BulwarkClient.disabledLogger,
        isShared: true
    )
}
