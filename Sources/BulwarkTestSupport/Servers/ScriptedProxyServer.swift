import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A misbehaving proxy on 127.0.0.1, for tests of what a client does with broken proxy answers: it reads the
/// request head (up to its empty line), then answers as its ``Behavior`` says. It records the connections it
/// accepted and every byte it received, so a test can show that a refused request cost it nothing.
public final class ScriptedProxyServer: Sendable {
    /// What the proxy does once it has read a request head.
    public enum Behavior: Sendable {
        /// Writes `bytes`, then closes the connection when `close` is true (else leaves it open).
        case reply([UInt8], close: Bool)
        /// Closes the connection without a word.
        case close
        /// Never answers.
        case silent
    }

    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let recordedBox: NIOLockedValueBox<(connections: Int, bytes: [UInt8])>

    /// The port it listens on.
    public let port: Int

    /// The number of connections accepted so far.
    public var connectionCount: Int { self.recordedBox.withLockedValue { $0.connections } }
    /// Every byte received so far, from all connections.
    public var receivedBytes: [UInt8] { self.recordedBox.withLockedValue { $0.bytes } }

    /// Starts a proxy that behaves as `behavior` on every connection.
    public static func start(_ behavior: Behavior) async throws -> ScriptedProxyServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let recorded = NIOLockedValueBox<(connections: Int, bytes: [UInt8])>((0, []))
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                recorded.withLockedValue { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ScriptedProxyHandler(behavior, recorded: recorded))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ScriptedProxyServer(channel: channel, group: group, recorded: recorded)
    }

    private init(
        channel: any Channel,
        group: MultiThreadedEventLoopGroup,
        recorded: NIOLockedValueBox<(connections: Int, bytes: [UInt8])>
    ) {
        self.channel = channel
        self.group = group
        self.port = channel.localAddress?.port ?? 0
        self.recordedBox = recorded
    }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        try? await self.channel.close()
        try await self.group.shutdownGracefully()
    }
}

private final class ScriptedProxyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let behavior: ScriptedProxyServer.Behavior
    private let recorded: NIOLockedValueBox<(connections: Int, bytes: [UInt8])>
    private var head: [UInt8] = []
    private var answered = false

    init(_ behavior: ScriptedProxyServer.Behavior, recorded: NIOLockedValueBox<(connections: Int, bytes: [UInt8])>) {
        self.behavior = behavior
        self.recorded = recorded
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Array(self.unwrapInboundIn(data).readableBytesView)
        self.recorded.withLockedValue { $0.bytes += bytes }
        guard !self.answered else { return }
        self.head += bytes
        guard self.head.count >= 4, self.head.suffix(4) == Array("\r\n\r\n".utf8) else { return }
        self.answered = true
        switch self.behavior {
        case .reply(let reply, let close):
            context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(bytes: reply)), promise: nil)
            if close { context.close(promise: nil) }
        case .close:
            context.close(promise: nil)
        case .silent:
            break
        }
    }
}
