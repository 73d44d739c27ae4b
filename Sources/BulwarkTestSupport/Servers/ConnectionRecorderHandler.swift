import NIOCore
import NIOSSL
import NIOTLS  // transitive via NIOSSL; Package.swift should list the NIOTLS product explicitly

/// Sits right after the TLS handler: counts decrypted application bytes, records completed handshakes and, on an
/// HTTP/2 connection, the client's first SETTINGS frame (read from the raw bytes, as the peer sent them).
final class ConnectionRecorderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let recorder: ServerRecorder
    private let connectionID: Int
    /// The connection's first bytes, until the client's first SETTINGS frame is complete (or they are not HTTP/2).
    private var prefix: [UInt8]? = []

    static let http2Preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    init(recorder: ServerRecorder, connectionID: Int) {
        self.recorder = recorder
        self.connectionID = connectionID
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        self.recorder.applicationBytesReceived(buffer.readableBytes)
        if self.prefix != nil {
            self.prefix! += buffer.readableBytesView.prefix(512)
            self.readSettings()
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiatedProtocol) = event {
            let version = try? context.pipeline.syncOperations.nioSSL_tlsVersion()
            self.recorder.handshakeCompleted(
                RecordedHandshake(
                    applicationProtocol: negotiatedProtocol,
                    tlsVersion: version ?? nil,
                    connectionID: self.connectionID
                )
            )
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Parses the SETTINGS frame that follows the preface once its bytes are in (RFC 9113 sections 3.4 and 6.5).
    private func readSettings() {
        guard let bytes = self.prefix else { return }
        let preface = Self.http2Preface
        guard bytes.starts(with: preface.prefix(bytes.count)) else {
            self.prefix = nil  // not HTTP/2
            return
        }
        let header = preface.count
        guard bytes.count >= header + 9 else { return }
        let length = Int(bytes[header]) << 16 | Int(bytes[header + 1]) << 8 | Int(bytes[header + 2])
        guard bytes[header + 3] == 0x4 else {
            self.prefix = nil
            return
        }
        guard bytes.count >= header + 9 + length else { return }
        var settings: [UInt16: UInt32] = [:]
        var offset = header + 9
        while offset + 6 <= header + 9 + length {
            let identifier = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let value = bytes[(offset + 2)..<(offset + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            settings[identifier] = value
            offset += 6
        }
        self.recorder.http2ClientSettingsReceived(settings)
        self.prefix = nil
    }
}
