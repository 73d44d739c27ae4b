/// The back pressure of one streamed request body between the task that produces it and the connection's event loop,
/// as a value: how many bytes the task has handed to the event loop that are not yet written into the channel, whether
/// the channel can take more, and when the producer waits. It does no I/O; ``RequestBodyWriter`` holds it under a lock
/// and carries its decisions out (``RequestBodyFlowTests`` check them without a channel).
///
/// The producer waits only when the event loop lags behind by more than ``highWatermark`` bytes or the channel cannot
/// take more (its own write buffer is full, or an HTTP/2 stream's flow-control window is closed), and resumes once the
/// event loop has caught up to ``lowWatermark`` bytes and the channel can take more. So a producer faster than the
/// connection wakes once per few chunks rather than once per chunk, and the bytes between it and the socket stay
/// bounded: at most ``highWatermark`` plus one chunk handed over, plus what the channel holds up to its own watermark.
struct RequestBodyFlow<Waiter> {
    /// More bytes than this handed to the event loop and not yet written: the producer waits.
    ///
    /// The gap between the two watermarks sets how often a producer faster than the connection is woken: once per
    /// 768 KiB written. With 256 and 64 KiB (once per 192 KiB) a 1 GiB upload in 64 KiB chunks made 13,585 `futex`
    /// calls, with these 7,375, and took 0.228–0.244 s instead of 0.275–0.332 s (2026-11-28, BENCHMARKS.md). The
    /// megabyte handed over is at most a few milliseconds of the connection's work.
    static var highWatermark: Int { 1024 * 1024 }
    /// A waiting producer resumes once no more than this many bytes wait for the event loop.
    static var lowWatermark: Int { 256 * 1024 }

    /// Bytes handed to the event loop and not yet written into the channel.
    private(set) var queuedBytes = 0
    /// Bytes written into the channel since the event loop last flushed it (``flushes(afterWriting:)``).
    private(set) var unflushedBytes = 0
    /// The event loop flushes at the latest once this many written bytes wait unflushed: a quarter of
    /// ``highWatermark``, so that the socket gets bytes while the producer still runs ahead.
    static var flushInterval: Int { highWatermark / 4 }
    /// Whether the channel could take more when the event loop last looked.
    private(set) var channelWritable = true
    /// The error that ended the body, if it ended.
    private(set) var failure: BulwarkError?
    /// Whether the body ended because the server answered before it was all sent.
    private(set) var serverAnswered = false
    private var waiter: Waiter?

    init() {}

    enum SubmitAction {
        /// Hand the chunk to the event loop and go on producing.
        case proceed
        /// Hand the chunk to the event loop, then wait (``wait(_:)``) before the next one.
        case proceedThenWait
        /// The body already failed: throw this error and write nothing.
        case fail(BulwarkError)
    }

    /// The producer hands `count` bytes to the event loop.
    mutating func submit(_ count: Int) -> SubmitAction {
        if let failure = self.failure { return .fail(failure) }
        self.queuedBytes += count
        return self.mayProceed(below: Self.highWatermark) ? .proceed : .proceedThenWait
    }

    enum WaitAction {
        /// The producer waits: `waiter` is kept until the event loop catches up or the body fails.
        case suspend
        /// The producer may go on now.
        case resume
        /// The body failed meanwhile.
        case fail(BulwarkError)
    }

    /// The producer, told to wait by ``submit(_:)``, waits with `waiter`, unless the event loop caught up meanwhile.
    mutating func wait(_ waiter: Waiter) -> WaitAction {
        if let failure = self.failure { return .fail(failure) }
        if self.mayProceed(below: Self.lowWatermark) { return .resume }
        precondition(self.waiter == nil, "a request body has one producer")
        self.waiter = waiter
        return .suspend
    }

    /// The event loop wrote `count` of the handed bytes into the channel, which `channelWritable` tells can take more
    /// or not: the waiter to resume, if the producer may go on now.
    mutating func written(_ count: Int, channelWritable: Bool) -> Waiter? {
        self.queuedBytes -= count
        self.channelWritable = channelWritable
        return self.resumable()
    }

    /// Whether the event loop, which has just written `count` handed bytes into the channel (after
    /// ``written(_:channelWritable:)``), flushes now: when no handed bytes are on their way to it, so that the chunks
    /// handed over together leave in one flush, or when ``flushInterval`` bytes wait unflushed. A producer that keeps
    /// ahead of the event loop keeps bytes on their way for ever: without the interval the body would never reach the
    /// socket, the channel would never fill, and the whole body would pile up in the client.
    mutating func flushes(afterWriting count: Int) -> Bool {
        self.unflushedBytes += count
        guard self.queuedBytes == 0 || self.unflushedBytes >= Self.flushInterval else { return false }
        self.unflushedBytes = 0
        return true
    }

    /// The channel's writability changed: the waiter to resume, if the producer may go on now.
    mutating func writabilityChanged(_ channelWritable: Bool) -> Waiter? {
        self.channelWritable = channelWritable
        return self.resumable()
    }

    /// The body fails with `error` (the exchange failed, the connection closed, or the server answered before the body
    /// was all sent, `serverAnswered`): the waiter to fail, if one waits. Later submissions fail with the first error.
    mutating func fail(_ error: BulwarkError, serverAnswered: Bool = false) -> Waiter? {
        if self.failure == nil {
            self.failure = error
            self.serverAnswered = serverAnswered
        }
        defer { self.waiter = nil }
        return self.waiter
    }

    private func mayProceed(below watermark: Int) -> Bool {
        self.channelWritable && self.queuedBytes <= watermark
    }

    private mutating func resumable() -> Waiter? {
        guard self.waiter != nil, self.mayProceed(below: Self.lowWatermark) else { return nil }
        defer { self.waiter = nil }
        return self.waiter
    }
}

extension RequestBodyFlow: Sendable where Waiter: Sendable {}
