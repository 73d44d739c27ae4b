import BulwarkPolicy
import NIOCore
import NIOTLS

/// Sets up a tunnel through a proxy on a new connection: sends the `CONNECT` request (HTTP proxy) or runs the SOCKS5
/// negotiation, reads the answer with ``HTTPConnectResponseParser`` or ``SOCKS5Handshake``, then removes itself and
/// completes `promise`. The handler that comes next (TLS) sees only bytes that arrive after that.
///
/// Behind the TLS handler of an HTTPS proxy it starts when that handshake completed (the proxy's certificate trusted),
/// not when the connection is up: nothing is written to a proxy before it is trusted. Without a tunnel to set up (a
/// plain-HTTP request through an HTTPS proxy) it only waits for that handshake.
///
/// Credentials are written from their secret box straight into the connection's outbound buffer.
final class ProxyTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Negotiation {
        case httpConnect(HTTPConnectResponseParser)
        case socks5(SOCKS5Handshake)
        /// No tunnel: the connection to the (HTTPS) proxy is all that is wanted.
        case none
    }

    /// What the handshake ended with: the tunnel, or a failure.
    private let promise: EventLoopPromise<Void>
    private var proto: Negotiation
    /// The origin as `host:port` (request target of `CONNECT`).
    private let target: String
    /// Sent with the `CONNECT` request (HTTP) or offered (SOCKS5); nil for none.
    private let credentials: ProxyCredentials?
    /// Whether the handler waits for a TLS handshake with the proxy before it starts.
    private let afterTLS: Bool
    private var started = false
    private var done = false

    /// - Parameters:
    ///   - tunnel: Whether to set up a tunnel to `host`:`port`; without one, the handler only waits for the proxy's
    ///     TLS handshake (an HTTPS proxy) and completes.
    init(
        kind: ProxyEndpoint.Kind,
        host: String,
        port: Int,
        credentials: ProxyCredentials?,
        tunnel: Bool = true,
        promise: EventLoopPromise<Void>
    ) {
        self.promise = promise
        self.credentials = credentials
        self.target = HandshakeFailure.authority(host: host, port: port)
        self.afterTLS = kind == .https
        switch kind {
        case _ where !tunnel: self.proto = .none
        case .http, .https: self.proto = .httpConnect(HTTPConnectResponseParser())
        case .socks5:
            self.proto = .socks5(SOCKS5Handshake(host: host, port: port, offersCredentials: credentials != nil))
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive, !self.afterTLS { self.start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if !self.afterTLS { self.start(context: context) }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        if self.afterTLS, let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            self.start(context: context)
        }
    }

    private func start(context: ChannelHandlerContext) {
        guard !self.started else { return }
        self.started = true
        var buffer = context.channel.allocator.buffer(capacity: 256)
        switch self.proto {
        case .none:
            self.succeed(context: context)
            return
        case .httpConnect:
            buffer.writeString("CONNECT \(self.target) HTTP/1.1\r\nHost: \(self.target)\r\n")
            if let credentials = self.credentials {
                buffer.writeString("Proxy-Authorization: Basic ")
                _ = credentials.withBasicBytes { Base64Writer.write($0, into: &buffer) }
                buffer.writeString("\r\n")
            }
            buffer.writeString("\r\n")
        case .socks5(var handshake):
            buffer.writeBytes(handshake.start())
            self.proto = .socks5(handshake)
        }
        context.writeAndFlush(self.wrapOutboundOut(buffer), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.done else { return }
        let bytes = self.unwrapInboundIn(data).readableBytesView
        do {
            switch self.proto {
            case .none:
                // A plain-HTTP exchange through the proxy starts only after this handler is gone.
                throw ProxyHandshakeFailure.bytesAfterTunnel(count: bytes.count)
            case .httpConnect(var parser):
                let outcome = try parser.receive(bytes)
                self.proto = .httpConnect(parser)
                guard case .head(let head, let trailing) = outcome else { return }
                switch head.status {
                case 200..<300:
                    guard trailing == 0 else { throw ProxyHandshakeFailure.bytesAfterTunnel(count: trailing) }
                    self.succeed(context: context)
                case 407:
                    throw ProxyHandshakeFailure.httpAuthRequired(
                        challenges: head.challenges.map { self.repeatsCredentials($0) ? "(withheld)" : $0 }
                    )
                default:
                    let reason =
                        self.repeatsCredentials(head.reason)
                        ? "(the proxy's reason phrase is withheld: it repeats the proxy credentials)" : head.reason
                    throw ProxyHandshakeFailure.httpRefused(status: head.status, reason: reason)
                }
            case .socks5(var handshake):
                let action = try handshake.receive(bytes)
                self.proto = .socks5(handshake)
                switch action {
                case .needMore:
                    return
                case .send(let bytes):
                    context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
                case .sendAuthentication:
                    var buffer = context.channel.allocator.buffer(capacity: 520)
                    let written: Void? = self.credentials?.withUsernameAndPassword { username, password in
                        SOCKS5Handshake.authenticationRequest(username: username, password: password) {
                            buffer.writeBytes($0)
                        }
                    }
                    guard written != nil else { throw ProxyHandshakeFailure.socksAuthFailed(status: 0xFF) }
                    context.writeAndFlush(self.wrapOutboundOut(buffer), promise: nil)
                case .established(let trailing):
                    guard trailing == 0 else { throw ProxyHandshakeFailure.bytesAfterTunnel(count: trailing) }
                    self.succeed(context: context)
                }
            }
        } catch {
            self.fail(context: context, error)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail(context: context, ProxyHandshakeFailure.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(context: context, error)
    }

    private func succeed(context: ChannelHandlerContext) {
        self.done = true
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        self.promise.succeed()
    }

    /// Whether `text`, sent by the proxy, holds the password or the `Basic` token of the credentials sent to it. Such
    /// text is withheld from errors: a proxy (or, for a plain `http://` proxy, anyone on the path) that reflects them
    /// must not carry a secret into errors and logs.
    private func repeatsCredentials(_ text: String) -> Bool {
        guard let credentials = self.credentials, !text.isEmpty else { return false }
        let shown = Array(text.utf8)
        let password = credentials.withUsernameAndPassword { _, password in Self.contains(shown, password) }
        if password == true { return true }
        var token = ByteBuffer()
        _ = credentials.withBasicBytes { Base64Writer.write($0, into: &token) }
        defer { token.setRepeatingByte(0, count: token.writerIndex, at: 0) }
        return token.withUnsafeReadableBytes { Self.contains(shown, $0) }
    }

    private static func contains(_ text: [UInt8], _ secret: UnsafeRawBufferPointer) -> Bool {
        guard !secret.isEmpty, secret.count <= text.count else { return false }
        for start in 0...(text.count - secret.count) {
            var index = 0
            while index < secret.count, text[start + index] == secret[index] { index += 1 }
            if index == secret.count { return true }
        }
        return false
    }

    private func fail(context: ChannelHandlerContext, _ error: any Error) {
        guard !self.done else { return }
        self.done = true
        self.promise.fail(error)
        context.close(promise: nil)
    }
}

/// Base64 (RFC 4648, with padding) written straight into a buffer, so that a secret is never held in a `String`.
enum Base64Writer {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func write(_ bytes: UnsafeRawBufferPointer, into buffer: inout ByteBuffer) {
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = UInt32(bytes[index])
            let b1 = remaining > 1 ? UInt32(bytes[index + 1]) : 0
            let b2 = remaining > 2 ? UInt32(bytes[index + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            buffer.writeInteger(Self.alphabet[Int(triple >> 18 & 0x3F)])
            buffer.writeInteger(Self.alphabet[Int(triple >> 12 & 0x3F)])
            buffer.writeInteger(remaining > 1 ? Self.alphabet[Int(triple >> 6 & 0x3F)] : UInt8(ascii: "="))
            buffer.writeInteger(remaining > 2 ? Self.alphabet[Int(triple & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
    }
}
