import NIOCore

/// Gathers the bytes an HTTP/2 connection writes during one turn of its event loop into one buffer and flushes them
/// once, at the end of the turn: the requests that many tasks start on a shared connection at the same time leave
/// in one TLS record and one `write` system call, instead of one of each per request.
///
/// Sits between the TLS handler and the HTTP/2 handler. NIOHTTP2 writes each frame as a buffer of its own, and flushes
/// the connection for every stream that flushes outside a read; NIOSSL encrypts each buffer it is given as a record
/// of its own. So 32 requests started by 32 tasks cost the server 32 records to decrypt, 32 reads and, as each request
/// then arrives alone, 32 answers written one by one. Gathered, the server reads them in one record and answers them
/// in one write. A turn with one request costs one task on the event loop more than flushing at once, and no copy:
/// only a second small buffer in the same turn is copied next to the first.
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

    func flush(context: ChannelHandlerContext) {
        guard !self.flushScheduled else { return }
        self.flushScheduled = true
        // After the tasks already queued on the event loop: the requests they start join this flush.
        context.eventLoop.assumeIsolated().execute {
            guard !self.removed else { return }
            self.flushScheduled = false
            self.writeGathered(context: context)
            context.flush()
        }
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
