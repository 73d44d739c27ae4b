import BulwarkPolicy
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import X509

/// A real HTTPS server on 127.0.0.1 (NIOPosix + NIOSSL) for integration tests, benchmarks and `bulwark demo`.
///
/// It negotiates ALPN and serves HTTP/2 when the client picks `h2`, HTTP/1.1 with keep-alive otherwise; the same
/// routes answer on both. Routes accept any method; `HEAD` gets the head without the body.
///
/// | Route | Response |
/// |---|---|
/// | `/hello` | 200, `hello` |
/// | `/bytes/N` | 200, N bytes (byte i is `i & 0xFF`, see ``bytesBody(count:)``), `content-length`, 64 KiB writes |
/// | `/chunked/N` | 200, the same N bytes with `transfer-encoding: chunked` in 16 KiB chunks (DATA frames on h2) |
/// | `/gzip` | 200, ``gzipText`` gzip-compressed, `content-encoding: gzip` |
/// | `/bomb`, `/bomb/N` | 200, ~65 KB of gzip inflating to ``bombInflatedSize`` (or N) zero bytes |
/// | `/echo` | 200, the request body; `x-request-method`, `x-request-path` (the request target) |
/// | `/headers` | 200, JSON object of the request headers (lower-case names, repeated ones joined by `, `) |
/// | `/status/N` | status N (200–599), empty body |
/// | `/redirect/N?to=URL` | status N (300–399), `location:` all after `?to=`, percent-decoded; no `to`: none |
/// | `/close` | 200, `bye`, `connection: close`, then closes (h2: GOAWAY before the response, then closes) |
/// | `/goaway` | h2: GOAWAY naming this stream the last, then 200, `going away`; the connection stays open (h1: 200 only) |
/// | `/refused-stream` | h2: RST_STREAM with REFUSED_STREAM, no response (h1: 200, `served`) |
/// | `/goaway-refused` | h2: 200, `served` on a connection's first stream; on a later one GOAWAY naming the stream before it (this one refused, no response), the connection left open |
/// | `/set-cookie?F&F…` | 200, one `set-cookie: F` per `&`-separated item after `?`, each percent-decoded |
/// | `/auth/bearer/T` | 200, `authorized` when the request has `authorization: Bearer T`; else 401 with `www-authenticate` |
/// | `/slow/MS` | waits MS milliseconds, then 200, `slow` |
/// | `/set-cookie/MS?F&F…` | as `/set-cookie`, answered after MS milliseconds |
/// | `/drop` | reads the request, then closes the connection without a response |
/// | `/fault/NAME` | one of the faults of ``faultNames``, for soak tests |
/// | `/upgrade` | 101 Switching Protocols (`upgrade: bulwark-test`, unasked for); the connection stays open |
/// | anything else | 404; 400 for a route above with a number out of range or malformed |
///
/// Everything it sees is recorded: ``acceptedConnections``, ``completedHandshakes``, ``receivedApplicationBytes``,
/// ``requests``, ``openConnections``, and on HTTP/2 the client's first SETTINGS (``http2ClientSettings``).
public final class TestHTTPSServer: Sendable {
    /// The faults of `/fault/NAME`: a reset or a clean close before the response head; a reset, a GOAWAY (h2) or an
    /// RST_STREAM (h2) after half the body; a chunked body cut in the middle; no answer at all; half the body, then
    /// nothing (the connection stays open); a 256 KiB header; bytes that are not HTTP where the head should be (h2:
    /// the stream is reset).
    public static let faultNames = [
        "reset-before-head", "close-before-head", "reset-mid-body", "goaway-mid-body", "rst-stream-mid-body",
        "truncate-chunked", "stall", "stall-mid-body", "huge-header", "garbage-head",
    ]

    /// The size `/bomb` inflates to: 64 MiB.
    public static let bombInflatedSize = 64 * 1024 * 1024

    /// The text `/gzip` serves compressed (4,000-odd bytes of repetitive ASCII).
    public static let gzipText: String = (1...64).map {
        "line \($0): the quick brown fox jumps over the lazy dog\n"
    }.joined()

    /// The body of `/bytes/N` and `/chunked/N`: byte i is `i & 0xFF`.
    public static func bytesBody(count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0) }
    }

    /// The address the server listens on: `127.0.0.1`.
    public let address: String
    /// The port the server listens on.
    public let port: Int
    /// What the server was started with.
    public let configuration: Configuration
    /// For an interceptor, the root of its forged chains (install it as a trust anchor to model a user who
    /// trusted the proxy's CA); nil for an ordinary server.
    public let forgedRoot: Certificate?

    private let serverChannel: any Channel
    private let recorder: ServerRecorder

    private init(
        serverChannel: any Channel,
        recorder: ServerRecorder,
        configuration: Configuration,
        forgedRoot: Certificate?
    ) {
        self.serverChannel = serverChannel
        self.recorder = recorder
        self.configuration = configuration
        self.forgedRoot = forgedRoot
        self.address = "127.0.0.1"
        self.port = serverChannel.localAddress?.port ?? 0
    }

    // MARK: - Recording

    /// TCP connections accepted.
    public var acceptedConnections: Int { self.recorder.acceptedConnections }
    /// TLS handshakes completed (the server saw the client's Finished).
    public var completedHandshakes: Int { self.recorder.handshakes.count }
    /// Each completed handshake: ALPN protocol and TLS version.
    public var handshakes: [RecordedHandshake] { self.recorder.handshakes }
    /// Decrypted application-data bytes received after TLS handshakes (HTTP requests, HTTP/2 preface and frames).
    /// Zero means no request byte reached the server.
    public var receivedApplicationBytes: Int { self.recorder.receivedApplicationBytes }
    /// Requests received completely, in order.
    public var requests: [RecordedRequest] { self.recorder.requests }
    /// The parameters of the first SETTINGS frame of each HTTP/2 connection's client (identifier to value, as sent),
    /// read from the bytes after the connection preface.
    public var http2ClientSettings: [[UInt16: UInt32]] { self.recorder.http2ClientSettings }
    /// Connections open now.
    public var openConnections: Int { self.recorder.openConnections }
    /// For each HTTP/2 request `HEADERS` block received, its fields in order with whether the client sent each
    /// as never indexed (RFC 7541 section 6.2.3).
    public var http2HeaderIndexing: [[(name: String, neverIndexed: Bool)]] { self.recorder.http2HeaderIndexing }

    /// Clears the counters and logs (not ``openConnections``).
    public func resetRecording() {
        self.recorder.reset()
    }

    /// `https://host:port/path`, for a client that resolves `host` to 127.0.0.1.
    public func url(_ path: String, host: String = "localhost") -> String {
        "https://\(host):\(self.port)\(path.hasPrefix("/") ? "" : "/")\(path)"
    }

    // MARK: - Lifecycle

    /// Starts a server on 127.0.0.1.
    public static func start(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> TestHTTPSServer {
        try await Self.start(
            configuration: configuration,
            contextCallback: nil,
            forgedRoot: nil,
            eventLoopGroup: eventLoopGroup
        )
    }

    static func start(
        configuration: Configuration,
        contextCallback: NIOSSLContextCallback?,
        forgedRoot: Certificate?,
        eventLoopGroup: any EventLoopGroup
    ) async throws -> TestHTTPSServer {
        let sslContext = try Self.makeSSLContext(configuration: configuration, contextCallback: contextCallback)
        let recorder = ServerRecorder(recordsRequests: configuration.recordsRequests)
        let behavior = configuration.behavior
        let channel = try await ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard let connectionID = recorder.connectionAccepted(channel) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                return Self.initialize(
                    channel: channel,
                    connectionID: connectionID,
                    behavior: behavior,
                    sslContext: sslContext,
                    recorder: recorder
                )
            }
            .bind(host: "127.0.0.1", port: configuration.port)
            .get()
        return TestHTTPSServer(
            serverChannel: channel,
            recorder: recorder,
            configuration: configuration,
            forgedRoot: forgedRoot
        )
    }

    /// Stops listening and closes every open connection (TLS ones get close_notify and up to 500 ms to answer).
    public func shutdown() async throws {
        let open = self.recorder.beginShutdown()
        do {
            try await self.serverChannel.close()
        } catch ChannelError.alreadyClosed {
            // Shut down before.
        }
        for channel in open {
            channel.close(promise: nil)
        }
        for channel in open {
            try? await channel.closeFuture.get()
        }
    }

    // MARK: - Pipeline

    private static func initialize(
        channel: any Channel,
        connectionID: Int,
        behavior: Behavior,
        sslContext: NIOSSLContext,
        recorder: ServerRecorder
    ) -> EventLoopFuture<Void> {
        switch behavior {
        case .stallHandshake:
            // No TLS handler: the ClientHello is read and dropped, and nothing is ever written.
            return channel.eventLoop.makeSucceededVoidFuture()
        case .garbageInsteadOfTLS:
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(GarbageResponderHandler(closeAfter: .milliseconds(250)))
            }
        case .normal, .resetMidBody, .truncatedChunkedBody, .closeIdleConnectionsAfter:
            return channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                try sync.addHandler(ConnectionRecorderHandler(recorder: recorder, connectionID: connectionID))
                if case .closeIdleConnectionsAfter(let milliseconds) = behavior {
                    try sync.addHandler(IdleConnectionCloserHandler(timeout: .milliseconds(Int64(milliseconds))))
                }
            }.flatMap {
                channel.configureCommonHTTPServerPipeline { httpChannel in
                    httpChannel.eventLoop.makeCompletedFuture {
                        let sync = httpChannel.pipeline.syncOperations
                        if (try? sync.handler(type: HTTP2FramePayloadToHTTP1ServerCodec.self)) != nil {
                            try sync.addHandler(HPACKIndexingRecorderHandler(recorder: recorder), position: .first)
                        }
                        try sync.addHandler(
                            TestRouteHandler(recorder: recorder, behavior: behavior, connectionID: connectionID)
                        )
                    }
                }
            }
        }
    }

    private static func makeSSLContext(
        configuration: Configuration,
        contextCallback: NIOSSLContextCallback?
    ) throws -> NIOSSLContext {
        let chain = try configuration.chain.map { NIOSSLCertificateSource.certificate(try Self.nioCertificate($0)) }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain,
            privateKey: .privateKey(try Self.nioPrivateKey(configuration.privateKey))
        )
        tls.minimumTLSVersion = configuration.minimumTLSVersion
        tls.maximumTLSVersion = configuration.maximumTLSVersion
        tls.applicationProtocols = configuration.alpn
        tls.shutdownTimeout = .milliseconds(500)
        tls.sslContextCallback = contextCallback
        if configuration.requiresClientCertificate {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .certificates(try configuration.clientCertificateRoots.map(Self.nioCertificate))
        }
        return try NIOSSLContext(configuration: tls)
    }

    static func nioCertificate(_ certificate: Certificate) throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: certificate.derBytes, format: .der)
    }

    static func nioPrivateKey(_ key: Certificate.PrivateKey) throws -> NIOSSLPrivateKey {
        try NIOSSLPrivateKey(bytes: Array(key.serializeAsPEM().pemString.utf8), format: .pem)
    }
}
