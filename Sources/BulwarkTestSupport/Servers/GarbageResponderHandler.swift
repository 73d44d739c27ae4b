import NIOCore

/// Answers a connection with plain-text bytes instead of a TLS ServerHello, then closes it after a while.
final class GarbageResponderHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What the server writes: an HTTP/1.1 response head followed by junk, none of it a TLS record.
    static let garbage = Array("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\nnot TLS \u{1}\u{2}\u{3} junk\r\n".utf8)

    private let closeAfter: TimeAmount
    private var responded = false

    init(closeAfter: TimeAmount) {
        self.closeAfter = closeAfter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            self.respond(context: context)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        self.respond(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Discard whatever the client sends (its ClientHello).
    }

    private func respond(context: ChannelHandlerContext) {
        guard !self.responded else { return }
        self.responded = true
        let buffer = context.channel.allocator.buffer(bytes: Self.garbage)
        context.writeAndFlush(self.wrapOutboundOut(buffer), promise: nil)
        context.eventLoop.assumeIsolated().scheduleTask(in: self.closeAfter) {
            context.close(promise: nil)
        }
    }
}
