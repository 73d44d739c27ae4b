import NIOCore

/// Gathers the bytes an HTTP/2 connection writes during one turn of its event loop into one buffer and flushes them
/// once, at the end of the turn, while the connection carries more than one stream: the requests that many tasks start
/// on a shared connection at the same time leave in one TLS record and one `write` system call, instead of one of each
/// per request.
///
/// Sits between the TLS handler and the HTTP/2 handler. NIOHTTP2 writes each frame as a buffer of its own, and flushes
/// the connection for every stream that flushes outside a read; NIOSSL encrypts each buffer it is given as a record
/// of its own. So 32 requests started by 32 tasks cost the server 32 records to decrypt, 32 reads and, as each request
/// then arrives alone, 32 answers written one by one. Gathered, the server reads them in one record and answers them
/// in one write.
///
/// Deferring a flush buys something only when another stream may write in the same turn: while another stream is open
/// (``openStreams``, kept by ``HTTP2Connection``), or when more than one stream ended since the last flush (a batch of
/// responses was read: their tasks are about to start the next requests, the first of which finds no other stream
/// open). Otherwise (one request at a time, or the connection's own frames between requests) a flush goes out at
/// once, as without this handler: deferring it would cost a task and one more turn of the event loop (an
/// `epoll_wait`) per request, and add that to the request's latency.
///
/// Buffers larger than ``maximumCopiedBytes`` (request bodies) are not copied: the gathered bytes go first, then the
/// large buffer, in order. A close writes and flushes what was gathered before it.
final class WriteCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// The largest buffer copied into the gathered one; larger ones pass through as they are.
    static let maximumCopiedBytes = 4096
    /// The most bytes gathered into one buffer (one TLS record holds 16 KiB of plaintext).
    static let maximumGatheredBytes = 16 * 1024

    /// The streams open on the connection, counted by ``HTTP2Connection`` on the event loop.
    private(set) var openStreams = 0
    /// The streams that ended since the connection last flushed.
    private(set) var streamsEndedSinceFlush = 0

    private var gathered: ByteBuffer?
    private var gatheredIsCopy = false
    private var gatheredPromise: EventLoopPromise<Void>?
    private var flushScheduled = false
    private var removed = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var buffer) = self.unwrapOutboundIn(data),
            buffer.readableBytes <= Self.maximumCopiedBytes
        else {
            self.writeGathered(context: context)
            context.write(data, promise: promise)
            return
        }
        guard var gathered = self.gathered else {
            self.gathered = buffer
            self.gatheredIsCopy = false
            self.gatheredPromise = promise
            return
        }
        if gathered.readableBytes + buffer.readableBytes > Self.maximumGatheredBytes {
            self.writeGathered(context: context)
            self.gathered = buffer
            self.gatheredIsCopy = false
            self.gatheredPromise = promise
            return
        }
        self.gathered = nil
        if !self.gatheredIsCopy {
            // The first buffer belongs to the HTTP/2 handler: gather into a buffer of our own.
            var copy = context.channel.allocator.buffer(capacity: 2 * (gathered.readableBytes + buffer.readableBytes))
            copy.writeBuffer(&gathered)
            gathered = copy
            self.gatheredIsCopy = true
        }
        gathered.writeBuffer(&buffer)
        self.gathered = gathered
        self.gatheredPromise.setOrCascade(to: promise)
    }

    /// A stream of the connection was opened (call on the event loop).
    func streamOpened() {
        self.openStreams += 1
    }

    /// A stream of the connection was closed (call on the event loop).
    func streamClosed() {
        self.openStreams -= 1
        self.streamsEndedSinceFlush += 1
    }

    /// Whether a flush now waits for the end of the turn: only when other requests may join it (see the type's
    /// description).
    var defersFlush: Bool {
        self.openStreams > 1 || self.streamsEndedSinceFlush > 1
    }

    func flush(context: ChannelHandlerContext) {
        guard !self.flushScheduled else { return }
        guard self.defersFlush else {
            // No other request is about to add to this turn's writes: flush now, without a task.
            self.flushGathered(context: context)
            return
        }
        self.flushScheduled = true
        // After the tasks already queued on the event loop: the requests they start join this flush.
        context.eventLoop.assumeIsolated().execute {
            guard !self.removed else { return }
            self.flushScheduled = false
            self.flushGathered(context: context)
        }
    }

    private func flushGathered(context: ChannelHandlerContext) {
        self.streamsEndedSinceFlush = 0
        self.writeGathered(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if self.gathered != nil || self.flushScheduled {
            self.writeGathered(context: context)
            context.flush()
        }
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.writeGathered(context: context)
        if self.flushScheduled { context.flush() }
        self.removed = true
    }

    private func writeGathered(context: ChannelHandlerContext) {
        guard let gathered = self.gathered else { return }
        let promise = self.gatheredPromise
        self.gathered = nil
        self.gatheredPromise = nil
        context.write(self.wrapOutboundOut(.byteBuffer(gathered)), promise: promise)
    }
}
