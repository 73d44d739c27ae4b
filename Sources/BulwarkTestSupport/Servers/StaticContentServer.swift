import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import X509

/// An HTTPS/1.1 server on 127.0.0.1 that answers every GET with the bytes it was last given (200), or 404 while it
/// has none: a file server for tests (a policy-bundle server). It counts the connections it accepted and the
/// requests it answered.
public final class StaticContentServer: Sendable {
    /// The port it listens on.
    public let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    private struct State {
        var content: [UInt8]?
        var acceptedConnections = 0
        var requests = 0
        var open: [ObjectIdentifier: any Channel] = [:]
    }

    private init(port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// Starts a server presenting `chain` (leaf first) with the leaf's `privateKey`.
    public static func start(
        chain: [Certificate],
        privateKey: Certificate.PrivateKey,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> StaticContentServer {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try chain.map { .certificate(try TestHTTPSServer.nioCertificate($0)) },
            privateKey: .privateKey(try TestHTTPSServer.nioPrivateKey(privateKey))
        )
        tls.applicationProtocols = ["http/1.1"]
        let context = try NIOSSLContext(configuration: tls)
        let state = NIOLockedValueBox(State())
        let channel = try await ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let id = ObjectIdentifier(channel)
                state.withLockedValue { state in
                    state.acceptedConnections += 1
                    state.open[id] = channel
                }
                channel.closeFuture.whenComplete { _ in state.withLockedValue { _ = $0.open.removeValue(forKey: id) } }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.configureHTTPServerPipeline()
                    try sync.addHandler(ContentHandler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return StaticContentServer(port: channel.localAddress?.port ?? 0, channel: channel, state: state)
    }

    /// Serves `bytes` from now on (nil: 404).
    public func serve(_ bytes: [UInt8]?) {
        self.state.withLockedValue { $0.content = bytes }
    }

    /// The connections accepted so far.
    public var acceptedConnections: Int { self.state.withLockedValue { $0.acceptedConnections } }

    /// The requests answered so far.
    public var requests: Int { self.state.withLockedValue { $0.requests } }

    /// `https://host:port/path`.
    public func url(_ path: String = "/bundle.json", host: String = "localhost") -> String {
        "https://\(host):\(self.port)\(path)"
    }

    /// Stops listening and closes every open connection.
    public func shutdown() async throws {
        try? await self.channel.close()
        let open = self.state.withLockedValue { Array($0.open.values) }
        for channel in open { try? await channel.close() }
    }

    private final class ContentHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        private let state: NIOLockedValueBox<State>

        init(state: NIOLockedValueBox<State>) {
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = self.unwrapInboundIn(data) else { return }
            let content = self.state.withLockedValue { state in
                state.requests += 1
                return state.content
            }
            var headers = HTTPHeaders()
            headers.add(name: "content-length", value: String(content?.count ?? 0))
            let head = HTTPResponseHead(version: .http1_1, status: content == nil ? .notFound : .ok, headers: headers)
            context.write(self.wrapOutboundOut(.head(head)), promise: nil)
            if let content {
                context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: content)))), promise: nil)
            }
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
