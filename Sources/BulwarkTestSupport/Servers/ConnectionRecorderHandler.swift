import NIOCore
import NIOSSL
import NIOTLS  // transitive via NIOSSL; Package.swift should list the NIOTLS product explicitly

/// Sits right after the TLS handler: counts decrypted application bytes and records completed handshakes.
final class ConnectionRecorderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let recorder: ServerRecorder
    private let connectionID: Int

    init(recorder: ServerRecorder, connectionID: Int) {
        self.recorder = recorder
        self.connectionID = connectionID
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.recorder.applicationBytesReceived(self.unwrapInboundIn(data).readableBytes)
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
}
