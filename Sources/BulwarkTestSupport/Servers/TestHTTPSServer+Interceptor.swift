import NIOCore
import NIOPosix

extension TestHTTPSServer {
    /// Starts an intercepting ("MITM") server: it generates its own CA and presents, for whatever name the client
    /// asks for in SNI (or `host` without SNI), a leaf for that name issued under that CA, as Charles or mitmproxy
    /// do. The chain is well-formed but does not lead to any genuine root; ``forgedRoot`` is its root.
    ///
    /// It serves and records exactly like ``start(configuration:eventLoopGroup:)``.
    public static func startInterceptor(
        forging host: String,
        alpn: [String] = ["h2", "http/1.1"],
        behavior: Behavior = .normal,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> TestHTTPSServer {
        let authority = try ForgingCertificateAuthority(host: host)
        return try await Self.start(
            configuration: Configuration(chain: authority.defaultChain, alpn: alpn, behavior: behavior),
            contextCallback: authority.contextCallback,
            forgedRoot: authority.defaultChain.root.certificate,
            eventLoopGroup: eventLoopGroup
        )
    }
}
