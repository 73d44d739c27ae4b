import NIOCore
import NIOTLS

/// Closes a connection that has seen no application reads or writes for `timeout`, counting from the end of the TLS
/// handshake (so a slow handshake is not mistaken for an idle connection). Sits right after the TLS handler.
///
/// The clock runs whenever no byte moves, including while a request waits for its response (`/slow/MS`).
final class IdleConnectionCloserHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    private let timeout: TimeAmount
    private var isArmed = false
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            self.isArmed = true
            self.restartTimer(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.restartTimer(context: context)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        self.restartTimer(context: context)
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.stopTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.stopTimer()
    }

    private func restartTimer(context: ChannelHandlerContext) {
        guard self.isArmed else { return }
        self.timer?.cancel()
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: self.timeout) {
            self.isArmed = false
            context.close(promise: nil)
        }
    }

    private func stopTimer() {
        self.isArmed = false
        self.timer?.cancel()
        self.timer = nil
    }
}
