import NIOCore

/// Holds the flushes that end the TLS handshake and sends them as one: the client's Finished, which NIOSSL flushes
/// the moment the handshake completes, and a new connection's first request, written from the callback of that
/// completion, leave in one `write` system call and one TCP segment instead of two, so the server reads them together
/// rather than waking for each.
///
/// NIOSSL completes the handshake in an event-loop task of its own, scheduled when the custom verification callback's
/// promise completes (never within the read that brought the certificates). ``verificationCompleted()``, called on
/// the event loop after that task was scheduled, holds the flushes from then on; ``handshakeCompleted()``, called
/// after the completion's callbacks (the request's write) ran, flushes once and removes the handler. So that nothing
/// waits for a completion that does not come (a TLS 1.2 handshake, whose client flight follows verification and
/// precedes the server's Finished; a failure), a task scheduled after NIOSSL's flushes whatever is held when it runs,
/// in the same turn of the event loop. Flushes made during a read are held to the end of the read, as Netty's
/// `FlushConsolidationHandler` does.
///
/// Sits below the TLS handler, on the socket's side, so it holds encrypted records, never plaintext. Writes and
/// flushes outside these windows (the ClientHello) pass at once, and once removed an established connection flushes as
/// before. A close, or the channel going inactive, first flushes what is held, so that a TLS alert written before a
/// close is sent.
final class HandshakeFlushCoalescer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var context: ChannelHandlerContext?
    private var reading = false
    private var holding = false
    private var holdsFlush = false
    private var completed = false

    /// The certificate verification's promise completed, and NIOSSL scheduled the task that resumes the handshake:
    /// hold flushes until the handshake completes, or at the latest until a task scheduled now runs.
    func verificationCompleted() {
        guard let context = self.context, !self.completed else { return }
        self.holding = true
        context.eventLoop.assumeIsolated().execute {
            self.holding = false
            if !self.reading { self.releaseFlush() }
        }
    }

    /// The handshake completed and its callbacks ran: flush once and step aside (at the end of the read, when it
    /// completed within one).
    func handshakeCompleted() {
        self.completed = true
        guard !self.reading else { return }
        self.holding = false
        self.stepAside()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.reading = false
        self.holding = false
        self.releaseFlush()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.reading = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        self.reading = false
        if self.completed {
            self.holding = false
            self.stepAside()
        } else if !self.holding {
            self.releaseFlush()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.reading = false
        self.holding = false
        self.releaseFlush()
        context.fireChannelInactive()
    }

    func flush(context: ChannelHandlerContext) {
        if self.reading || self.holding {
            self.holdsFlush = true
        } else {
            context.flush()
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        self.reading = false
        self.holding = false
        self.releaseFlush()
        context.close(mode: mode, promise: promise)
    }

    private func stepAside() {
        guard let context = self.context else { return }
        self.releaseFlush()
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }

    private func releaseFlush() {
        guard self.holdsFlush, let context = self.context else { return }
        self.holdsFlush = false
        context.flush()
    }
}
