import BulwarkTestHelpers
import BulwarkTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import X509

/// An HTTPS server on 127.0.0.1 (HTTP/1.1 only) that counts the body bytes it receives and sends, so that a test can
/// bound how many bytes are buffered between it and a client: `GET /bytes/N` streams N bytes (byte i is `i & 0xFF`,
/// as TestHTTPSServer's route) only as fast as the client reads them (it writes while its channel is writable), and
/// `POST /hello` counts and drops the request body, then answers `hello`.
final class StreamingServer: Sendable {
    let port: Int
    private let channel: any Channel
    private let counters: Counters

    /// The request body bytes received so far.
    var receivedBodyBytes: Int { self.counters.received.value }
    /// The response body bytes written to the socket so far.
    var sentBodyBytes: Int { self.counters.sent.value }

    final class Counters: Sendable {
        let received = SharedBox(0)
        let sent = SharedBox(0)
    }

    private init(channel: any Channel, counters: Counters) {
        self.channel = channel
        self.counters = counters
        self.port = channel.localAddress?.port ?? 0
    }

    static func start(chain: TestChain) async throws -> StreamingServer {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try chain.presentedChain.map {
                .certificate(try NIOSSLCertificate(bytes: $0.derBytes, format: .der))
            },
            privateKey: .privateKey(
                try NIOSSLPrivateKey(bytes: Array(chain.leaf.privateKey.serializeAsPEM().pemString.utf8), format: .pem)
            )
        )
        tls.applicationProtocols = ["http/1.1"]
        let context = try NIOSSLContext(configuration: tls)
        let counters = Counters()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(StreamingHandler(counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return StreamingServer(channel: channel, counters: counters)
    }

    func shutdown() async throws {
        try await self.channel.close()
    }
}

/// The routes of ``StreamingServer``.
private final class StreamingHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// 64 KiB of the `/bytes` pattern: every chunk of the body is this buffer (64 KiB is a multiple of 256).
    private static let chunk = ByteBuffer(bytes: (0..<65_536).map { UInt8(truncatingIfNeeded: $0) })

    private let counters: StreamingServer.Counters
    private var head: HTTPRequestHead?
    private var remaining = 0

    init(counters: StreamingServer.Counters) {
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(let buffer):
            self.counters.received.withLock { $0 += buffer.readableBytes }
        case .end:
            guard let head = self.head else { return }
            self.head = nil
            if head.method == .GET, head.uri.hasPrefix("/bytes/"), let count = Int(head.uri.dropFirst(7)) {
                let headers: HTTPHeaders = [
                    "content-type": "application/octet-stream", "content-length": String(count),
                ]
                context.write(
                    self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                    promise: nil
                )
                self.remaining = count
                self.pump(context: context)
            } else if head.uri == "/hello" {
                let headers: HTTPHeaders = ["content-type": "text/plain", "content-length": "5"]
                context.write(
                    self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                    promise: nil
                )
                context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "hello")))), promise: nil)
                context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            } else {
                let headers: HTTPHeaders = ["content-length": "0"]
                context.write(
                    self.wrapOutboundOut(
                        .head(HTTPResponseHead(version: .http1_1, status: .notFound, headers: headers))
                    ),
                    promise: nil
                )
                context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, self.remaining > 0 {
            self.pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Writes chunks while the channel takes them; the rest when it becomes writable again.
    private func pump(context: ChannelHandlerContext) {
        while self.remaining > 0, context.channel.isWritable {
            let size = min(self.remaining, Self.chunk.readableBytes)
            self.remaining -= size
            let counters = self.counters
            context.write(self.wrapOutboundOut(.body(.byteBuffer(Self.chunk.getSlice(at: 0, length: size)!))))
                .whenSuccess {
                    counters.sent.withLock { $0 += size }
                }
            if self.remaining == 0 {
                context.write(self.wrapOutboundOut(.end(nil)), promise: nil)
            }
            context.flush()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
