import BulwarkTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// A minimal HTTPS server for the h2 rows when the test server's HTTP/2 limits cannot be used: TLS 1.3 with ALPN
/// `h2` only, NIOHTTP2 with NIO's defaults but for the denial-of-service rate limits named by `raisedLimits`
/// (`reset`: RST_STREAM frames received, `error`: stream errors, `control`: PING/SETTINGS/... frames; each allowed
/// 200 per 30 s by default), raised to 10 million per 30 s. Every request, whatever its path, is answered 200 with
/// 1,024 bytes (`/bytes/1024` of the test server). It counts connections, handshakes' ALPN and requests. With a
/// marker window it calls the instruction-count markers around COUNT answers from the START-th on (see
/// `InstructionCount+KeepAlive.swift`).
final class BenchHTTP2Server: LegServer {
    struct Counters {
        var accepted = 0
        var requests = 0
        var handshakes = 0
        var alpn: [String] = []
        var versions: Set<String> = []
        /// Requests answered in all (never reset), and the counted window of
        /// ``start(chain:group:raisedLimits:markerWindow:)``.
        var answered = 0
        var window: (start: Int, count: Int)?
    }

    let port: Int
    let channel: any Channel
    let counters: NIOLockedValueBox<Counters>

    private init(port: Int, channel: any Channel, counters: NIOLockedValueBox<Counters>) {
        self.port = port
        self.channel = channel
        self.counters = counters
    }

    var acceptedConnections: Int { self.counters.withLockedValue { $0.accepted } }
    var completedHandshakes: Int { self.counters.withLockedValue { $0.handshakes } }
    var receivedRequestCount: Int { self.counters.withLockedValue { $0.requests } }

    func resetRecording() {
        self.counters.withLockedValue {
            $0.accepted = 0
            $0.requests = 0
            $0.handshakes = 0
        }
    }
    var lastALPN: String? { self.counters.withLockedValue { $0.alpn.last } }
    var versions: Set<String> { self.counters.withLockedValue { $0.versions } }

    static func start(
        chain: TestChain,
        group: any EventLoopGroup,
        raisedLimits: Set<String>,
        markerWindow: (start: Int, count: Int)? = nil
    ) async throws -> BenchHTTP2Server {
        var certificates = [try NIOSSLCertificate(bytes: Array(chain.leaf.certificatePEM.utf8), format: .pem)]
        if let intermediate = chain.intermediate {
            certificates.append(try NIOSSLCertificate(bytes: Array(intermediate.certificatePEM.utf8), format: .pem))
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(chain.leaf.privateKeyPEM.utf8), format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        let high = 10_000_000
        if raisedLimits.contains("reset") { streamConfiguration.streamResetFrameRateLimit.maximumCount = high }
        if raisedLimits.contains("error") { streamConfiguration.streamErrorRateLimit.maximumCount = high }
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        if raisedLimits.contains("control") { connectionConfiguration.controlFrameRateLimit.maximumCount = high }
        let counters = NIOLockedValueBox(Counters(window: markerWindow))
        let streams = streamConfiguration
        let connections = connectionConfiguration
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                counters.withLockedValue { $0.accepted += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.addHandler(ALPNRecorder(counters: counters))
                    _ = try sync.configureHTTP2Pipeline(
                        mode: .server,
                        connectionConfiguration: connections,
                        streamConfiguration: streams
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                            try stream.pipeline.syncOperations.addHandler(KilobyteResponder(counters: counters))
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else { throw BenchError("the h2 server has no port") }
        return BenchHTTP2Server(port: port, channel: channel, counters: counters)
    }

    func shutdown() async throws {
        try await self.channel.close()
    }
}

/// Records the protocol each TLS handshake negotiated.
private final class ALPNRecorder: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    let counters: NIOLockedValueBox<BenchHTTP2Server.Counters>

    init(counters: NIOLockedValueBox<BenchHTTP2Server.Counters>) { self.counters = counters }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent {
            self.counters.withLockedValue {
                $0.handshakes += 1
                $0.alpn.append(negotiated ?? "none")
            }
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Answers each request (on its stream) with 200 and 1,024 bytes once the request has ended.
private final class KilobyteResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private static let body = ByteBuffer(bytes: (0..<1024).map { UInt8($0 & 0xFF) })
    private let counters: NIOLockedValueBox<BenchHTTP2Server.Counters>
    private var version = HTTPVersion.http1_1

    init(counters: NIOLockedValueBox<BenchHTTP2Server.Counters>) { self.counters = counters }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.version = head.version
        case .body:
            break
        case .end:
            let version = "HTTP/\(self.version.major).\(self.version.minor)"
            let answered = self.counters.withLockedValue { counters in
                counters.requests += 1
                counters.answered += 1
                counters.versions.insert(version)
                return counters.window.map { (answered: counters.answered, window: $0) }
            }
            var headers = HTTPHeaders()
            headers.add(name: "content-length", value: "1024")
            context.write(
                self.wrapOutboundOut(.head(HTTPResponseHead(version: self.version, status: .ok, headers: headers))),
                promise: nil
            )
            context.write(self.wrapOutboundOut(.body(.byteBuffer(Self.body))), promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            // The counted window of `scripts/profile-keepalive` (callgrind's --dump-before): from the START-th answer
            // to COUNT answers later.
            if let answered {
                if answered.answered == answered.window.start { blackHole(instructionsStart(answered.answered)) }
                if answered.answered == answered.window.start + answered.window.count {
                    blackHole(instructionsStop(answered.answered))
                }
            }
        }
    }
}
