import NIOCore
import NIOPosix

/// Finds out which TLS version a server that refused every version Bulwark offers does speak, so that the error
/// can say "offered only TLS 1.0" instead of only "no version in common".
///
/// A server that implements TLS 1.3's version negotiation answers a client offering only TLS 1.2 and 1.3 with a
/// bare protocol-version alert, which names no version. The probe opens one more TCP connection to the same
/// address, sends a ClientHello in the TLS 1.2 style (no `supported_versions` extension, the cipher suites old
/// servers have), reads the server's first record — a ServerHello carries the version the server chose — and
/// closes. It sends nothing else, evaluates no certificate and is never used for a request; it runs only after a
/// handshake failed on the protocol version, and within the request's deadline.
enum TLSVersionProbe {
    /// A protocol version as it appears in a ServerHello.
    struct Version: Equatable, Sendable {
        let wire: UInt16

        var name: String {
            switch self.wire {
            case 0x0300: return "SSL 3.0"
            case 0x0301: return "TLS 1.0"
            case 0x0302: return "TLS 1.1"
            case 0x0303: return "TLS 1.2"
            case 0x0304: return "TLS 1.3"
            default: return "an unknown protocol version"
            }
        }

        func isBelow(_ minimum: BulwarkClient.TLSOptions.Version) -> Bool {
            switch minimum {
            case .tls12: return self.wire < 0x0303
            case .tls13: return self.wire < 0x0304
            }
        }
    }

    /// The version the server at `host`:`port` (connected to at `connectHost`) chooses for a TLS 1.2-style hello,
    /// or nil when it answers with an alert, anything else, or nothing within `timeout`. Never fails.
    static func offeredVersion(
        on eventLoop: any EventLoop,
        connectHost: String,
        port: Int,
        serverName: String?,
        timeout: TimeAmount
    ) -> EventLoopFuture<Version?> {
        let promise = eventLoop.makePromise(of: Version?.self)
        let hello = Self.clientHello(serverName: serverName)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture(withResultOf: {
                    try channel.pipeline.syncOperations.addHandler(ProbeHandler(hello: hello, promise: promise))
                })
            }
        let timer = eventLoop.scheduleTask(in: timeout) { promise.succeed(nil) }
        Connector.connect(bootstrap, host: connectHost, port: port).whenComplete { result in
            switch result {
            case .success(let channel):
                promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
            case .failure:
                promise.succeed(nil)
            }
        }
        return promise.futureResult.always { _ in timer.cancel() }
    }

    /// The ServerHello's version in the first bytes the server sent, `.some(nil)` when they say no version will
    /// come (an alert, or not TLS), nil when more bytes are needed.
    static func parse(_ bytes: ByteBuffer) -> Version?? {
        guard let type = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return nil }
        guard type == 0x16 else { return .some(nil) }  // an alert, or not a handshake record
        guard bytes.readableBytes >= 11,
            let handshake = bytes.getInteger(at: bytes.readerIndex + 5, as: UInt8.self),
            let version = bytes.getInteger(at: bytes.readerIndex + 9, as: UInt16.self)
        else { return nil }
        return handshake == 0x02 ? .some(Version(wire: version)) : .some(nil)
    }

    /// A ClientHello offering TLS 1.0 to 1.2 (legacy version 1.2, no `supported_versions`), the ECDHE and RSA
    /// cipher suites of TLS 1.0 to 1.2 servers, and the extensions an ECDHE suite needs.
    static func clientHello(serverName: String?) -> [UInt8] {
        func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func u24(_ value: Int) -> [UInt8] { [UInt8(value >> 16 & 0xFF)] + u16(value) }
        func vector16(_ bytes: [UInt8]) -> [UInt8] { u16(bytes.count) + bytes }
        func vector8(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count)] + bytes }
        func extensionBlock(_ type: Int, _ body: [UInt8]) -> [UInt8] { u16(type) + vector16(body) }

        let suites: [Int] = [
            0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8, 0xC009, 0xC013, 0xC00A, 0xC014, 0x009C, 0x009D,
            0x002F, 0x0035, 0x000A, 0x00FF,
        ]
        var extensions: [UInt8] = []
        if let serverName, serverName.utf8.count < 256 {
            extensions += extensionBlock(0x0000, vector16([0x00] + vector16(Array(serverName.utf8))))
        }
        extensions += extensionBlock(0x000A, vector16(u16(0x001D) + u16(0x0017) + u16(0x0018)))  // groups
        extensions += extensionBlock(0x000B, vector8([0x00]))  // uncompressed points
        let schemes = [0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0203, 0x0201]
        extensions += extensionBlock(0x000D, vector16(schemes.flatMap(u16)))
        var body: [UInt8] = [0x03, 0x03]
        body += (0..<32).map { _ in UInt8.random(in: 0...255) }
        body += [0x00]  // no session id
        body += vector16(suites.flatMap(u16))
        body += vector8([0x00])  // null compression
        body += vector16(extensions)
        let handshake = [0x01] + u24(body.count) + body
        return [0x16, 0x03, 0x01] + u16(handshake.count) + handshake
    }

    /// Sends the hello when connected; completes the promise with the first answer (or nil when the connection
    /// ends first).
    private final class ProbeHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        private let hello: [UInt8]
        private let promise: EventLoopPromise<Version?>
        private var received: ByteBuffer?

        init(hello: [UInt8], promise: EventLoopPromise<Version?>) {
            self.hello = hello
            self.promise = promise
        }

        func channelActive(context: ChannelHandlerContext) {
            let hello = context.channel.allocator.buffer(bytes: self.hello)
            context.writeAndFlush(self.wrapOutboundOut(hello), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = self.unwrapInboundIn(data)
            self.received.setOrWriteBuffer(&bytes)
            if let received = self.received, let answer = TLSVersionProbe.parse(received) {
                self.promise.succeed(answer)
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.promise.succeed(nil)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            self.promise.succeed(nil)
            context.close(promise: nil)
        }
    }
}
