import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import NIOTLS

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens connections: TCP, then TLS with Bulwark's trust callback, SNI and ALPN, then the HTTP/1.1 or HTTP/2
/// pipeline the server chose.
///
/// A refused chain ends the handshake with a ``BulwarkError/Code/trustRefused`` error carrying the refusal; the
/// connection is never retried, and no request byte is written before the handshake completed.
struct Connector: Sendable {
    var settings: ConnectionSettings
    let eventLoopGroup: any EventLoopGroup
    let reporter: PinFailureReporter?
    /// Trusted decisions reused across this client's handshakes; nil when the configuration turns it off.
    var decisionCache: TrustDecisionCache?
    /// The certificates this client's servers presented, parsed (decoding only; see ``CertificateParseCache``).
    let parsedCertificates = CertificateParseCache()
    /// The TLS contexts of handshakes, each lent to one handshake at a time (see ``HandshakeContexts``).
    let handshakeContexts = HandshakeContexts()
    /// The proxies that asked for credentials (see ``openTunnel(through:host:port:on:deadline:)``).
    let proxyAuthentication = ProxyAuthenticationMemory()
    /// The TLS context of connections to HTTPS proxies (see ``proxyTLS(for:trust:)``).
    let proxyTLSContext = ProxyTLSContext()
    private static let nextID = NIOLockedValueBox(0)

    /// A connector for `settings`.
    ///
    /// - Throws: ``BulwarkError`` for TLS options NIOSSL would stop the process on, or a resolve override that is not
    ///   an address; NIOSSL's error when it refuses the TLS options.
    init(
        settings: ConnectionSettings,
        eventLoopGroup: any EventLoopGroup,
        reporter: PinFailureReporter? = nil
    ) throws {
        self.settings = settings
        self.eventLoopGroup = eventLoopGroup
        self.reporter = reporter
        self.decisionCache = settings.trustDecisionCache.map { TrustDecisionCache(options: $0) }
        try Self.validate(settings.tls, host: nil)
        if let error = settings.resolveOverrides.validationError { throw error }
        // The first context of connections offering no client certificate (a server asking for one is reported, and
        // gets none), made here so that options the TLS library refuses are refused when the client is made.
        let signal = CertificateRequestSignal()
        let context = try Self.handshakeContext(settings: settings, host: nil, identity: nil, signal: signal)
        self.handshakeContexts.giveBack(
            HandshakeContexts.Lent(kind: .withoutCertificate, context: context, certificateRequest: signal)
        )
    }

    /// A connector for the connection settings of `configuration`.
    init(
        configuration: BulwarkClient.Configuration,
        eventLoopGroup: any EventLoopGroup,
        reporter: PinFailureReporter? = nil
    ) throws {
        try self.init(settings: ConnectionSettings(configuration), eventLoopGroup: eventLoopGroup, reporter: reporter)
    }

    /// Checks what NIOSSL would not: it stops the process on a cipher list BoringSSL refuses, and an empty one is
    /// the only such list the typed ``BulwarkClient/TLSOptions/CipherSuite`` values can make.
    static func validate(_ options: BulwarkClient.TLSOptions, host: String?) throws(BulwarkError) {
        if let suites = options.cipherSuites, suites.isEmpty {
            throw BulwarkError(
                .tlsHandshakeFailed,
                host: host,
                detail: "invalid TLS options: the cipher suite list is empty; leave it nil for BoringSSL's defaults"
            )
        }
    }

    /// The error for TLS options NIOSSL refused when the client was made, in words. The library's own text goes to
    /// ``BulwarkError/debugDescription`` only.
    static func invalidTLSOptions(_ error: any Error, options: BulwarkClient.TLSOptions, host: String?) -> BulwarkError
    {
        if let error = error as? BulwarkError { return error }
        return BulwarkError(
            .tlsHandshakeFailed,
            host: host,
            detail: "invalid TLS options: the TLS library refused them",
            underlying: String(reflecting: error)
        )
    }

    /// The NIOSSL configuration: TLS 1.2 minimum (NIOSSL's default allows 1.0), our ALPN list, and BoringSSL's
    /// own verification replaced by the trust callback (so no roots are loaded here).
    static func tlsConfiguration(_ options: BulwarkClient.TLSOptions) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = options.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        tls.applicationProtocols = options.applicationProtocols
        tls.trustRoots = .certificates([])
        tls.certificateVerification = .fullVerification
        if let cipherSuites = options.cipherSuites, !cipherSuites.isEmpty {
            tls.cipherSuiteValues = cipherSuites.map(\.niotlsCipher)
        }
        return tls
    }

    /// Opens a TLS connection and, after a trusted handshake, runs `configure` on the event loop in the same
    /// call that reports the handshake's completion: handlers it adds see every byte the server sends after the
    /// handshake (an HTTP/2 SETTINGS frame, a protocol banner), none is lost between the two.
    func connectTLS<Configured: Sendable>(
        host: String,
        port: Int,
        identity: ClientIdentity? = nil,
        configure: @escaping @Sendable (any Channel, String?) throws -> Configured
    ) async throws -> (any Channel, Configured, ServerTrustInfo) {
        try await self.connectTLS(
            host: host,
            port: port,
            on: self.eventLoopGroup.next(),
            identity: identity,
            configure: configure
        ).get()
    }

    /// ``connectTLS(host:port:configure:)`` as a future on `eventLoop`, the connection's event loop: a caller that
    /// goes on with the connection in a callback of this future stays on that loop, without a thread hop.
    ///
    /// The future fails with a ``BulwarkError`` only: ``BulwarkError/Code/trustRefused`` with the refusal, a
    /// connect or handshake timeout, or a connect or handshake failure; with ``BulwarkError/Code/deadlineExceeded``
    /// when `deadline` comes before the connect or handshake timeout runs out.
    ///
    /// - Parameters:
    ///   - identity: The client certificate offered if the server asks for one; nil offers none.
    ///   - proxy: The proxy to tunnel through; the TLS handshake with `host` runs inside the tunnel, unchanged.
    func connectTLS<Configured: Sendable>(
        host: String,
        port: Int,
        on eventLoop: any EventLoop,
        deadline: NIODeadline? = nil,
        identity: ClientIdentity? = nil,
        proxy: ProxyRoute? = nil,
        configure: @escaping @Sendable (any Channel, String?) throws -> Configured
    ) -> EventLoopFuture<(any Channel, Configured, ServerTrustInfo)> {
        let verification = TrustVerification(
            manager: self.settings.trust,
            host: host,
            port: port,
            monitor: self.settings.eventMonitor,
            reporter: self.reporter,
            cache: self.decisionCache,
            parsedCertificates: self.parsedCertificates,
            proxy: proxy
        )
        let handshakePromise = eventLoop.makePromise(of: (Configured, String?).self)
        let serverName = HostName.isIPAddress(host) ? nil : host
        // Lent to this handshake alone: its certificate callback tells whether this server asked for a certificate.
        let lent: HandshakeContexts.Lent
        do {
            lent = try self.lendContext(host: host, sendsServerName: serverName != nil, identity: identity)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let (connectHost, connectPort) = self.resolve(host: host, port: port)
        let connectLimit = Self.limit(self.settings.timeouts.connect, by: deadline)
        let contexts = self.handshakeContexts
        let installTLS: @Sendable (any Channel) throws -> Void = { channel in
            let tlsHandler = try NIOSSLClientHandler(
                context: lent.context,
                serverHostname: serverName,
                // Weakly: NIOSSL keeps this callback for the connection's whole life, and the verification (its
                // decision, its locks, about 380 bytes) is needed only until the handshake ends; the handshake's
                // own callbacks below hold it until then. A callback after that refuses.
                customVerificationCallbackWithMetadata: { [weak verification] certificates, promise in
                    guard let verification else { return promise.succeed(.failed) }
                    verification.verify(certificates, promise: promise)
                }
            )
            // Through an HTTPS proxy the channel holds the proxy's TLS handler too, before this one: its alerts are
            // told from the origin's, and the origin's handler is named.
            if let proxy, proxy.endpoint.kind == .https {
                try channel.pipeline.syncOperations.addHandler(
                    ProxyTLSAlertHandler(host: host, proxy: proxy.authority)
                )
            }
            try channel.pipeline.syncOperations.addHandler(tlsHandler, name: Self.originTLSHandlerName)
            let observer = HandshakeObserver(
                onCompleted: { negotiated in
                    do {
                        handshakePromise.succeed((try configure(channel, negotiated), negotiated))
                    } catch {
                        handshakePromise.fail(error)
                    }
                },
                onFailed: { handshakePromise.fail($0) }
            )
            try channel.pipeline.syncOperations.addHandler(observer)
        }
        let channel: EventLoopFuture<any Channel>
        if let proxy {
            channel = self.openTunnel(through: proxy, host: host, port: port, on: eventLoop, deadline: deadline)
                .flatMapThrowing { channel in
                    do {
                        try installTLS(channel)
                    } catch {
                        channel.close(promise: nil)
                        throw error
                    }
                    return channel
                }
        } else {
            let bootstrap = ClientBootstrap(group: eventLoop)
                .connectTimeout(connectLimit.timeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.recvAllocator, value: Self.receiveAllocator)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try installTLS(channel) }
                }
            channel = Self.connect(bootstrap, host: connectHost, port: connectPort)
        }
        // Connection, handshake timer and handshake are chained on the event loop, so that the caller waits once:
        // every await of an event-loop future is a hop to the task's executor and back, a wake-up of another thread
        // each way, on every new connection.
        let handshakeTimeout = self.settings.timeouts.tlsHandshake
        let minimumVersion = self.settings.tls.minimumVersion
        let rootsLoad = self.settings.rootsLoad
        return
            channel
            .flatMapError { error -> EventLoopFuture<any Channel> in
                handshakePromise.fail(error)
                // No TLS byte went out on this context: it can serve the next handshake.
                contexts.giveBack(lent)
                return eventLoop.makeFailedFuture(
                    Self.mapConnectError(error, host: host, port: port, deadlineBound: connectLimit.deadlineBound)
                )
            }
            .flatMap { channel -> EventLoopFuture<(any Channel, Configured, ServerTrustInfo)> in
                let handshakeLimit = Self.limit(handshakeTimeout, by: deadline)
                // When the handshake's time limit (or the deadline) ends: its timer fires then, and the version probe
                // after a protocol_version alert gets what is left of it, never a window of its own.
                let handshakeEnds = NIODeadline.now() + handshakeLimit.timeout
                let timeout = eventLoop.scheduleTask(deadline: handshakeEnds) {
                    // The server sent its chain and the verification waits for the system roots' index (the first
                    // handshakes of a process): that is not the server's time, and the timer runs once more.
                    if !handshakeLimit.deadlineBound, verification.isVerifying, !rootsLoad.isSettled {
                        let grace = Self.limit(handshakeTimeout, by: deadline)
                        let second = eventLoop.scheduleTask(in: grace.timeout) {
                            let code: BulwarkError.Code = grace.deadlineBound ? .deadlineExceeded : .tlsHandshakeTimeout
                            handshakePromise.fail(BulwarkError(code, host: host, detail: "during the TLS handshake"))
                            channel.close(promise: nil)
                        }
                        handshakePromise.futureResult.whenComplete { _ in second.cancel() }
                        return
                    }
                    let code: BulwarkError.Code =
                        handshakeLimit.deadlineBound ? .deadlineExceeded : .tlsHandshakeTimeout
                    handshakePromise.fail(BulwarkError(code, host: host, detail: "during the TLS handshake"))
                    channel.close(promise: nil)
                }
                // Cancel the moment the handshake ends.
                handshakePromise.futureResult.whenComplete { _ in timeout.cancel() }
                return handshakePromise.futureResult
                    .map { configured, negotiated in
                        let info = ServerTrustInfo(
                            presentedChain: verification.presentedChain,
                            trustedChain: verification.decision?.trustedChain,
                            applicationProtocol: negotiated ?? "http/1.1",
                            certificateRequested: lent.certificateRequest.wasSeen
                        )
                        contexts.giveBack(lent)
                        return (channel, configured, info)
                    }
                    .flatMapError { error -> EventLoopFuture<(any Channel, Configured, ServerTrustInfo)> in
                        channel.close(promise: nil)
                        if let refusal = verification.decision?.refusal {
                            let refused = BulwarkError.trustRefused(refusal, underlying: verification.parseFailures)
                            return eventLoop.makeFailedFuture(refused)
                        }
                        if let error = error as? BulwarkError { return eventLoop.makeFailedFuture(error) }
                        let failure = HandshakeFailure(error, host: host, port: port)
                        // Through a proxy, no probe: it would connect to the origin directly.
                        guard failure.kind == .protocolVersion, proxy == nil else {
                            return eventLoop.makeFailedFuture(failure.error(minimum: minimumVersion))
                        }
                        // Which version the server does speak, to say so: one more hello, in what is left of the
                        // handshake's time limit (or the deadline), so a refused handshake never takes longer than
                        // the limit. (A fixed 2 s once left a loaded machine's error without the version.)
                        return TLSVersionProbe.offeredVersion(
                            on: eventLoop,
                            connectHost: connectHost,
                            port: connectPort,
                            serverName: serverName,
                            timeout: max(handshakeEnds - .now(), .zero)
                        ).flatMapThrowing { offered in
                            throw failure.error(minimum: minimumVersion, offered: offered)
                        }
                    }
            }
    }

    /// Opens an HTTP connection to `target` on `eventLoop`; the future completes on that loop, failed only with a
    /// ``BulwarkError`` (``BulwarkError/Code/deadlineExceeded`` when `deadline` ends connecting or the handshake).
    ///
    /// - Parameters:
    ///   - identity: The client certificate offered if the server asks for one (the pool key's).
    ///   - proxy: The proxy to go through (the pool key's); nil to connect directly.
    func connect(
        to target: RequestTarget,
        on eventLoop: any EventLoop,
        deadline: NIODeadline? = nil,
        identity: ClientIdentity? = nil,
        proxy: ProxyRoute? = nil
    ) -> EventLoopFuture<PooledConnection> {
        let id = Self.nextID.withLockedValue { value in
            value += 1
            return value
        }
        if !target.isTLS {
            return self.connectPlain(to: target, id: id, on: eventLoop, deadline: deadline, proxy: proxy)
        }
        enum Configured: Sendable {
            case http1(NIOLoopBound<HTTPExchangeHandler>)
            case http2(
                NIOLoopBound<NIOHTTP2Handler.StreamMultiplexer>,
                NIOLockedValueBox<BulwarkError?>,
                NIOLockedValueBox<HTTP2Connection.Usage>
            )
        }
        let decompression = self.settings.decompression
        let idleRead = self.settings.timeouts.idleRead
        let host = target.host
        let port = target.port
        return self.connectTLS(
            host: target.host,
            port: target.port,
            on: eventLoop,
            deadline: deadline,
            identity: identity,
            proxy: proxy
        ) {
            channel,
            negotiated in
            let sync = channel.pipeline.syncOperations
            if negotiated == "h2" {
                let (multiplexer, failure, usage) = try Self.addHTTP2Handlers(to: sync, host: host, port: port)
                return Configured.http2(NIOLoopBound(multiplexer, eventLoop: channel.eventLoop), failure, usage)
            }
            let handler = try Self.addHTTP1Handlers(
                to: sync,
                host: host,
                port: port,
                decompression: decompression,
                idleRead: idleRead
            )
            return Configured.http1(NIOLoopBound(handler, eventLoop: channel.eventLoop))
        }.map { channel, configured, trust in
            switch configured {
            case .http2(let multiplexer, let failure, let usage):
                return .http2(
                    HTTP2Connection(
                        channel: channel,
                        multiplexer: multiplexer,
                        trust: trust,
                        host: host,
                        decompression: decompression,
                        idleRead: idleRead,
                        id: id,
                        failure: failure,
                        usage: usage
                    )
                )
            case .http1(let handler):
                return .http1(HTTP1Connection(channel: channel, handler: handler, trust: trust, id: id))
            }
        }
    }

    private func connectPlain(
        to target: RequestTarget,
        id: Int,
        on eventLoop: any EventLoop,
        deadline: NIODeadline?,
        proxy: ProxyRoute?
    ) -> EventLoopFuture<PooledConnection> {
        let (connectHost, connectPort) = self.resolve(host: target.host, port: target.port)
        let connectLimit = Self.limit(self.settings.timeouts.connect, by: deadline)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectLimit.timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.recvAllocator, value: Self.receiveAllocator)
        let decompression = self.settings.decompression
        let idleRead = self.settings.timeouts.idleRead
        let host = target.host
        return self.openPlain(
            bootstrap,
            host: connectHost,
            port: connectPort,
            target: target,
            proxy: proxy,
            on: eventLoop,
            deadline: deadline
        )
        .flatMapErrorThrowing {
            throw Self.mapConnectError($0, host: host, port: target.port, deadlineBound: connectLimit.deadlineBound)
        }
        .flatMapThrowing { channel in
            // On the channel's event loop: the bootstrap's group is that one loop.
            let handler: HTTPExchangeHandler
            do {
                // Through an HTTPS proxy, every TLS alert on this channel is the proxy's.
                if let proxy, proxy.endpoint.kind == .https {
                    try channel.pipeline.syncOperations.addHandler(
                        ProxyTLSAlertHandler(host: host, proxy: proxy.authority)
                    )
                }
                // Below the HTTP encoder: the proxy's token goes into the heads' bytes, never into a String.
                if let proxy, proxy.endpoint.speaksHTTP, let credentials = proxy.credentials {
                    try channel.pipeline.syncOperations.addHandler(ProxyAuthorizationWriter(credentials: credentials))
                }
                handler = try Self.addHTTP1Handlers(
                    to: channel.pipeline.syncOperations,
                    host: host,
                    decompression: decompression,
                    idleRead: idleRead
                )
            } catch {
                channel.close(promise: nil)
                throw BulwarkError(
                    .connectFailed,
                    host: host,
                    detail: "the connection to \(host) could not be set up",
                    underlying: String(reflecting: error)
                )
            }
            let trust = ServerTrustInfo(presentedChain: [], trustedChain: nil, applicationProtocol: "http/1.1")
            return .http1(
                HTTP1Connection(
                    channel: channel,
                    handler: NIOLoopBound(handler, eventLoop: channel.eventLoop),
                    trust: trust,
                    id: id
                )
            )
        }
    }

    /// The handlers of an HTTP/2 connection after TLS. Returns its stream multiplexer and the box that keeps why the
    /// connection failed, for its streams' requests to fail with (they only see it close).
    static func addHTTP2Handlers(
        to sync: ChannelPipeline.SynchronousOperations,
        host: String,
        port: Int
    ) throws -> (
        multiplexer: NIOHTTP2Handler.StreamMultiplexer,
        failure: NIOLockedValueBox<BulwarkError?>,
        usage: NIOLockedValueBox<HTTP2Connection.Usage>
    ) {
        // Between TLS and HTTP/2: what HTTP/2 writes between two flushes leaves in one record.
        try sync.addHandler(WriteCoalescingHandler())
        let multiplexer = try sync.configureHTTP2Pipeline(
            mode: .client,
            connectionConfiguration: Self.http2ConnectionConfiguration,
            streamConfiguration: .init()
        ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
        // The server's GOAWAY drains the connection: no new stream goes on it (RFC 9113 section 6.8).
        let usage = NIOLockedValueBox(HTTP2Connection.Usage())
        try sync.addHandler(HTTP2GoAwayHandler(usage: usage))
        // A server refusing the client certificate (or its absence) after a TLS 1.3 handshake: kept for the
        // streams, which only see the connection close.
        let failure = NIOLockedValueBox<BulwarkError?>(nil)
        try sync.addHandler(ClientCertificateRejectionRecorder(host: host, port: port, rejection: failure))
        // Last: a connection error closes the connection (RFC 9113 section 5.4.1), its reason kept for the streams.
        try sync.addHandler(HTTP2ConnectionErrorHandler(host: host, failure: failure))
        return (multiplexer, failure, usage)
    }

    static func addHTTP1Handlers(
        to sync: ChannelPipeline.SynchronousOperations,
        host: String,
        port: Int? = nil,
        decompression: BulwarkClient.Decompression?,
        idleRead: TimeAmount
    ) throws -> HTTPExchangeHandler {
        // NIO's check of sent heads is left out: the exchange handler checks each head (`HTTP1RequestHeadCheck`)
        // before writing it, in one pass, and refuses it as the request's fault, leaving the connection open.
        try sync.addHTTPClientHandlers(leftOverBytesStrategy: .forwardBytes, enableOutboundHeaderValidation: false)
        return try Self.addResponseHandlers(
            to: sync,
            host: host,
            port: port,
            decompression: decompression,
            idleRead: idleRead,
            checksRequestHeads: true
        )
    }

    /// Adds the decompressor (with its ratio limit) and the exchange handler (with the read timeout and the
    /// decompressed-size limit) to an HTTP/1.1 connection or an HTTP/2 stream.
    static func addResponseHandlers(
        to pipeline: ChannelPipeline.SynchronousOperations,
        host: String,
        port: Int? = nil,
        decompression: BulwarkClient.Decompression?,
        idleRead: TimeAmount,
        checksRequestHeads: Bool = false
    ) throws -> HTTPExchangeHandler {
        if let decompression {
            try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(decompression.maximumRatio)))
        }
        let handler = HTTPExchangeHandler(
            host: host,
            port: port,
            idleRead: idleRead,
            maximumInflatedSize: decompression?.maximumSize ?? .max,
            checksRequestHeads: checksRequestHeads
        )
        try pipeline.addHandler(handler)
        return handler
    }

    /// NIO's defaults (100 concurrent streams, a 16 KiB header list) and `SETTINGS_ENABLE_PUSH = 0` (RFC 9113 section
    /// 6.5.2): Bulwark never accepts server push, so a server must not start sending resources nobody asked for.
    ///
    /// The connection's receive window is 8 MiB, as AsyncHTTPClient's, so that the connection sends a WINDOW_UPDATE
    /// for every 4 MiB received rather than every 32 KiB (every 32nd response of 1 KiB; each one a frame, a TLS record
    /// and a write for the server to read). Each stream keeps the 64 KiB window that bounds what a slow reader holds.
    static let http2ConnectionWindowSize = 8 * 1024 * 1024

    static let http2ConnectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.targetWindowSize = http2ConnectionWindowSize
        configuration.initialSettings = nioDefaultSettings + [HTTP2Setting(parameter: .enablePush, value: 0)]
        // Every header block is checked by HTTP2StreamCodec, the only handler that writes or reads them: requests
        // before they are encoded, responses in the one pass that reads them (NIOHTTP2's checks made two more walks
        // of each block, about 12k instructions per request, and its refusal reached the exchange as the server's
        // reset). HTTP2ResponseFieldTests holds the codec to what NIOHTTP2 refused, over a real NIOHTTP2 connection.
        configuration.headerBlockValidation = .disabled
        return configuration
    }()

    /// Socket reads start at 2 KiB and adapt to what arrives, up to 64 KiB, as NIO's default does. Reads of up to
    /// 256 KiB were tried (2026-11-22/23): a quarter of the event-loop round trips and 10–20 % faster downloads on the
    /// slower machine of those days, but on 2026-11-27's faster one, in alternating runs of the same server, they were
    /// slower (1,318 against 1,444–1,460 MB/s), cost more client CPU (222–241 against 196–201 µs per MiB) and held
    /// 5 MiB more during a download (growth 6.3 against 1.2 MiB). Small responses never grow the reads.
    /// The name of the origin's TLS handler in a connection's pipeline (the proxy's, on an HTTPS proxy, has none).
    static let originTLSHandlerName = "bulwark.origin-tls"

    static let receiveAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 64 * 1024)

    /// Connects to an IP address literal (an IP host, or a `resolveOverrides` address) directly, and to a name
    /// through NIO's resolver and Happy Eyeballs. NIO would resolve a literal too: `getaddrinfo` on a dispatch
    /// thread, then back to the event loop, two thread wake-ups on every new connection for nothing.
    static func connect(_ bootstrap: ClientBootstrap, host: String, port: Int) -> EventLoopFuture<any Channel> {
        var literal = host
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        if HostName.isIPAddress(literal), let address = try? SocketAddress(ipAddress: literal, port: port) {
            return bootstrap.connect(to: address)
        }
        return bootstrap.connect(host: host, port: port)
    }

    /// The address to connect to for a canonical host and port: the configuration's override (an IP address, checked
    /// when the connector was made), or the host itself. Applies to an origin and to a proxy alike, as curl's
    /// `--resolve` does.
    func resolve(host: String, port: Int) -> (String, Int) {
        let endpoint = BulwarkClient.Endpoint(canonicalHost: host, port: port)
        guard let override = self.settings.resolveOverrides[endpoint]?.literal else {
            return (host, port)
        }
        return (override, port)
    }

    /// `timeout`, or the time left until `deadline` when that is shorter (`deadlineBound` then says so, and the
    /// timeout's expiry is reported as the deadline's).
    static func limit(_ timeout: TimeAmount, by deadline: NIODeadline?) -> (timeout: TimeAmount, deadlineBound: Bool) {
        guard let deadline else { return (timeout, false) }
        let left = deadline - .now()
        return left < timeout ? (max(left, .zero), true) : (timeout, false)
    }

    /// A failed TCP connect in words ("could not connect to localhost:8443: connection refused"); NIO's error value,
    /// which names its types, goes to the error's `debugDescription`.
    static func mapConnectError(
        _ error: any Error,
        host: String,
        port: Int? = nil,
        deadlineBound: Bool = false
    ) -> BulwarkError {
        if let error = error as? BulwarkError { return error }
        if let error = error as? ChannelError, case .connectTimeout = error {
            return BulwarkError(deadlineBound ? .deadlineExceeded : .connectTimeout, host: host)
        }
        let authority = port.map { host.contains(":") ? "[\(host)]:\($0)" : "\(host):\($0)" } ?? host
        var why: String?
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first {
                why = (first.error as? IOError).map { Self.words(errno: $0.errnoCode) }
            } else if error.dnsAError != nil || error.dnsAAAAError != nil {
                why = "the name could not be resolved"
            } else {
                why = "the name resolved to no address"
            }
        } else if let error = error as? IOError {
            why = Self.words(errno: error.errnoCode)
        }
        return BulwarkError(
            .connectFailed,
            host: host,
            detail: "could not connect to \(authority)" + (why.map { ": \($0)" } ?? ""),
            underlying: String(reflecting: error)
        )
    }

    /// The C library's text for `errno`, lower-cased ("connection refused").
    static func words(errno code: CInt) -> String {
        let text = String(cString: strerror(code))
        guard let first = text.first else { return "error \(code)" }
        return first.lowercased() + text.dropFirst()
    }
}

/// Reports the end of the TLS handshake (with the negotiated ALPN protocol) synchronously, or its failure when the
/// channel errors or closes first; then removes itself.
final class HandshakeObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let onCompleted: (String?) -> Void
    private let onFailed: (any Error) -> Void

    init(onCompleted: @escaping (String?) -> Void, onFailed: @escaping (any Error) -> Void) {
        self.onCompleted = onCompleted
        self.onFailed = onFailed
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
            self.onCompleted(negotiated)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.onFailed(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.onFailed(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }
}
