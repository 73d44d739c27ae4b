import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TLS byte stream for protocols other than HTTP, with the same trust policy, timeouts and typed errors as
/// ``BulwarkClient``: what `startTLS` plus a trust delegate give on Apple platforms, without a way to forget the
/// verification.
///
/// ```swift
/// let configuration = TLSStream.Configuration(trust: trust)
/// let stream = try await TLSStream.connect(host: "mail.example.com", port: 993, configuration: configuration)
/// try await stream.write(ByteBuffer(string: "a1 CAPABILITY\r\n"))
/// let reply = try await stream.read()
/// try await stream.close()
/// ```
///
/// Threading: one reader and one writer at a time; a second concurrent `read()` throws.
public final class TLSStream: Sendable {
    /// The presented and verified chains of the handshake.
    public let serverTrust: ServerTrustInfo
    /// The canonical host the stream is connected to: the name its certificate was checked for.
    public let host: String
    private let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    private let reader: NIOLockedValueBox<ReaderState>

    /// The iterator is handed to exactly one reader at a time (`.reading` marks it taken), so moving it between
    /// tasks under the lock is safe although the iterator type is not `Sendable`.
    private enum ReaderState: @unchecked Sendable {
        case idle(NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator)
        case reading
        case finished
    }

    private init(channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>, trust: ServerTrustInfo, host: String) {
        self.channel = channel
        self.serverTrust = trust
        self.host = host
        self.reader = NIOLockedValueBox(.idle(channel.inbound.makeAsyncIterator()))
    }

    /// Connects, runs the TLS handshake and evaluates the chain with `configuration.trust`, under the same policy
    /// as ``BulwarkClient``: ``Configuration/allowlist`` is checked first (with the scheme `tls` and `port`), before
    /// any DNS lookup or connection, and a refusal is a `request_refused_by_allowlist` event; every trust decision
    /// reaches ``Configuration/eventMonitor``; pin failures are reported as ``Configuration/pinFailureReporting``
    /// says.
    ///
    /// Through ``Configuration/proxy`` (or the proxy ``Configuration/proxyOverrides`` chooses for `host`), the
    /// connection is a tunnel through that proxy, and the handshake runs inside it unchanged: `host` is the server
    /// name, its evaluator judges the chain, its pins apply. The allowlist is checked before the proxy is contacted,
    /// and only the host name and port go to the proxy (the proxy resolves the name).
    ///
    /// - Parameters:
    ///   - host: The server's host name or IP address: the name sent in SNI and checked by the trust policy.
    ///   - port: The server's TCP port.
    ///   - configuration: The trust policy, TLS options, timeouts, allowlist and event monitor of the stream.
    ///   - applicationProtocols: ALPN to offer (none by default).
    ///   - eventLoopGroup: The event loops the connection runs on.
    /// - Throws: ``BulwarkError``: ``BulwarkError/Code/hostNotAllowed`` when the allowlist refuses the host;
    ///   ``BulwarkError/Code/trustRefused`` with the refusal when the policy refuses the chain; no byte of yours is
    ///   sent in either case. Through a proxy, also the proxy's failures, each naming the proxy:
    ///   ``BulwarkError/Code/proxyRefused``, ``BulwarkError/Code/proxyAuthRequired``,
    ///   ``BulwarkError/Code/proxyAuthFailed``, ``BulwarkError/Code/proxyHandshakeFailed``, or
    ///   ``BulwarkError/Code/connectFailed`` when the proxy cannot be reached.
    public static func connect(
        host: String,
        port: Int,
        configuration: Configuration,
        applicationProtocols: [String] = [],
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> TLSStream {
        var configuration = configuration.clientConfiguration
        configuration.tls.applicationProtocols = applicationProtocols
        let canonical: String
        do {
            canonical = try HostName.canonicalize(host)
        } catch {
            throw BulwarkError(.invalidURL, host: host, detail: String(describing: error))
        }
        try Self.checkPort(port, host: canonical)
        if let allowlist = configuration.allowlist,
            case .refused(let refusal) = allowlist.decision(scheme: "tls", host: canonical, port: port)
        {
            configuration.eventMonitor.record(refusal.securityEvent(requestID: nil))
            throw BulwarkError(.hostNotAllowed, host: refusal.host, detail: String(describing: refusal))
        }
        let proxy = try ProxyRouter(configuration: configuration).route(toTLSHost: canonical, port: port)
        let connector: Connector
        let reporter: PinFailureReporter?
        do {
            reporter = configuration.pinFailureReporting.map {
                PinFailureReporter(configuration: $0, client: configuration)
            }
            connector = try Connector(configuration: configuration, eventLoopGroup: eventLoopGroup, reporter: reporter)
        } catch {
            throw Connector.invalidTLSOptions(error, options: configuration.tls, host: canonical)
        }
        // The reporter lives as long as its reports take (each bounded by its timeout), then closes its connections.
        defer {
            if let reporter { Task { await reporter.finishAndShutdown() } }
        }
        let identity = configuration.clientIdentities.identity(forHost: canonical)?.identity
        let (_, asyncChannel, trust) = try await connector.connectTLS(
            host: canonical,
            port: port,
            on: eventLoopGroup.next(),
            identity: identity,
            proxy: proxy
        ) { channel, _ in
            try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
        }.get()
        return TLSStream(channel: asyncChannel, trust: trust, host: canonical)
    }

    /// Refuses a port no TCP socket can have, before anything else: NIO would trap on it, and a SOCKS5 request would
    /// carry it truncated to 16 bits (another port than the one asked for).
    static func checkPort(_ port: Int, host: String) throws(BulwarkError) {
        guard (1...65_535).contains(port) else {
            throw BulwarkError(.invalidURL, host: host, detail: "the port \(port) is not a TCP port (1-65535)")
        }
    }

    /// Connects under the stream-relevant fields of a client's configuration (``Configuration/init(_:)``), so the
    /// stream follows the same policy as the client.
    public static func connect(
        host: String,
        port: Int,
        configuration: BulwarkClient.Configuration,
        applicationProtocols: [String] = [],
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> TLSStream {
        try await Self.connect(
            host: host,
            port: port,
            configuration: Configuration(configuration),
            applicationProtocols: applicationProtocols,
            eventLoopGroup: eventLoopGroup
        )
    }

    /// Writes bytes.
    public func write(_ buffer: ByteBuffer) async throws {
        do {
            try await self.channel.outbound.write(buffer)
        } catch {
            throw HTTPExchangeHandler.map(error, host: self.host)
        }
    }

    /// The next bytes from the server, or nil once it closed the stream.
    public func read() async throws -> ByteBuffer? {
        var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        let state = self.reader.withLockedValue { state -> ReaderState in
            let current = state
            if case .idle = current { state = .reading }
            return current
        }
        switch state {
        case .idle(let current): iterator = current
        case .finished: return nil
        case .reading:
            throw BulwarkError(.invalidResponse, host: self.host, detail: "concurrent reads on one TLSStream")
        }
        do {
            let next = try await iterator.next()
            let finalIterator = iterator
            self.reader.withLockedValue { $0 = next == nil ? .finished : .idle(finalIterator) }
            return next
        } catch {
            self.reader.withLockedValue { $0 = .finished }
            throw HTTPExchangeHandler.map(error, host: self.host)
        }
    }

    /// Closes the stream (TLS close_notify, then the socket).
    public func close() async throws {
        self.channel.outbound.finish()
        try? await self.channel.channel.close()
    }
}
