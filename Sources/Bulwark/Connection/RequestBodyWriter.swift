import NIOConcurrencyHelpers
import NIOCore

/// Sends the chunks of one streamed request body from the task that produces them to the exchange handler on the
/// connection's event loop, with back pressure (``RequestBodyFlow``) instead of a round trip per chunk.
///
/// Awaiting each chunk's write meant two thread wake-ups per chunk (the task's hop to the event loop, and the event
/// loop's resumption of the task once the write was done) and no overlap between producing the next chunk and
/// encrypting this one: a 256 MiB upload in 64 KiB chunks cost 8,000 context switches and 4,000 event-loop wake-ups
/// that AsyncHTTPClient does not make. Here ``write(_:)`` hands the chunk over and returns at once while the connection
/// keeps up, and suspends only when it falls behind; unlike AsyncHTTPClient, whose producer runs on until the channel
/// reports that it cannot take more, the bytes handed over are bounded (``RequestBodyFlow/highWatermark``), so memory
/// stays flat whatever the producer's speed.
///
/// A failure of the exchange (the connection closing, the deadline, cancellation) reaches the producer at its next
/// ``write(_:)`` or while it waits; ``end()`` reports it too, so a body is never taken as sent when it was not.
final class RequestBodyWriter: Sendable {
    private let handler: NIOLoopBound<HTTPExchangeHandler>
    private let flow = NIOLockedValueBox(RequestBodyFlow<UnsafeContinuation<Void, any Error>>())

    /// The number of the exchange this body belongs to on its handler (``HTTPExchangeHandler/exchangeNumber``): the
    /// handler writes nothing of a writer whose exchange is not the one in flight.
    let exchange: UInt64
    private let endState: NIOLoopBoundBox<End>

    /// Whether the body reached its end on the connection.
    enum End {
        case open
        /// Its last chunk completed the declared length, and the request ended with it.
        case byLength
        /// Its end was written.
        case written
    }

    init(handler: NIOLoopBound<HTTPExchangeHandler>, exchange: UInt64) {
        self.handler = handler
        self.exchange = exchange
        self.endState = .makeBoxSendingValue(.open, eventLoop: handler.eventLoop)
    }

    /// On the event loop, by the handler.
    var end: End {
        get { self.endState.value }
        set { self.endState.value = newValue }
    }

    /// Hands one chunk to the connection; suspends while the connection is behind.
    func write(_ buffer: ByteBuffer) async throws {
        let count = buffer.readableBytes
        let action = self.flow.withLockedValue { $0.submit(count) }
        if case .fail(let error) = action { throw error }
        let handler = self.handler
        handler.eventLoop.execute { handler.value.writeBodyChunk(buffer, writer: self) }
        guard case .proceedThenWait = action else { return }
        // The continuation is made outside the lock, which is taken again inside (a continuation made while holding
        // a lock can deadlock the runtime: swiftlang/swift#85668).
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            switch self.flow.withLockedValue({ $0.wait(continuation) }) {
            case .suspend: break
            case .resume: continuation.resume()
            case .fail(let error): continuation.resume(throwing: error)
            }
        }
    }

    /// Ends the body, and returns once the end is written (or throws why the body did not reach the connection). A
    /// write after it throws (a producer's task may outlive it): the connection may serve another request by then.
    func end() async throws {
        if let failure = self.flow.withLockedValue({ $0.failure }) { throw failure }
        let handler = self.handler
        let promise = handler.eventLoop.makePromise(of: Void.self)
        handler.eventLoop.execute { handler.value.endBody(writer: self, promise: promise) }
        defer {
            let ended = BulwarkError(.requestBodyFailed, host: nil, detail: "a write came after the body's end")
            self.flow.withLockedValue { $0.fail(ended) }?.resume(throwing: ended)
        }
        try await promise.futureResult.get()
    }

    /// On the event loop: `count` handed bytes were written into the channel. Returns whether to flush the channel
    /// now (``RequestBodyFlow/flushes(afterWriting:)``).
    func written(_ count: Int, channelWritable: Bool) -> Bool {
        let (waiter, flush) = self.flow.withLockedValue { flow in
            (flow.written(count, channelWritable: channelWritable), flow.flushes(afterWriting: count))
        }
        waiter?.resume()
        return flush
    }

    /// On the event loop: the channel's writability changed.
    func writabilityChanged(_ channelWritable: Bool) {
        self.flow.withLockedValue { $0.writabilityChanged(channelWritable) }?.resume()
    }

    /// The body fails with `error`: a waiting producer is resumed with it, and later writes throw it.
    func fail(_ error: BulwarkError) {
        self.flow.withLockedValue { $0.fail(error) }?.resume(throwing: error)
    }

    /// The server answered before the whole body was sent: the rest is refused with `error`, and the response stands
    /// (``serverAnsweredFirst``).
    func serverAnswered(_ error: BulwarkError) {
        self.flow.withLockedValue { $0.fail(error, serverAnswered: true) }?.resume(throwing: error)
    }

    /// Whether the body ended because the server answered before it was all sent; the request then has its answer.
    var serverAnsweredFirst: Bool {
        self.flow.withLockedValue { $0.serverAnswered }
    }
}
