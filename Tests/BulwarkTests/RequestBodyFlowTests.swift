import Testing

@testable import Bulwark

/// The back pressure of a streamed request body (``RequestBodyFlow``), without a channel: the producer goes on while
/// the event loop keeps up, waits when it lags by more than the high watermark or the channel is full, and resumes
/// once the event loop has caught up to the low watermark; a failure reaches it at once.
@Suite("Request body flow: when the producer of a streamed body waits")
struct RequestBodyFlowTests {
    typealias Flow = RequestBodyFlow<Int>
    static let chunk = 64 * 1024
    static let error = BulwarkError(.remoteConnectionClosed, host: "api.bulwark.test")

    /// A connection that keeps up never makes the producer wait: no wake-up of the producing task per chunk.
    @Test func aProducerIsNotStoppedWhileTheEventLoopKeepsUp() {
        var flow = Flow()
        for _ in 0..<1000 {
            let action = flow.submit(Self.chunk)
            guard case .proceed = action else {
                Issue.record("the producer was stopped: \(action)")
                return
            }
            let resumed = flow.written(Self.chunk, channelWritable: true)
            #expect(resumed == nil)
        }
        #expect(flow.queuedBytes == 0)
    }

    /// The bytes handed over and not yet written are bounded: past the high watermark the producer waits, and it is
    /// resumed once, when the event loop is down to the low watermark, not once per chunk written.
    @Test func aProducerAheadOfTheEventLoopWaitsUntilItCatchesUp() {
        var flow = Flow()
        var handed = 0
        while case .proceed = flow.submit(Self.chunk) { handed += 1 }
        #expect((handed + 1) * Self.chunk > Flow.highWatermark)
        #expect(handed * Self.chunk <= Flow.highWatermark)
        let action = flow.wait(7)
        guard case .suspend = action else {
            Issue.record("the producer did not wait: \(action)")
            return
        }
        var resumed: [Int] = []
        while flow.queuedBytes > 0 {
            if let waiter = flow.written(Self.chunk, channelWritable: true) { resumed.append(waiter) }
            if resumed.isEmpty { #expect(flow.queuedBytes > Flow.lowWatermark) }
        }
        #expect(resumed == [7], "resumed once, at the low watermark")
    }

    /// A producer faster than the connection is woken rarely: after it waits, the event loop must write at least
    /// half a megabyte before it resumes it. Each wake-up is a thread hop and a scheduler round trip on both sides
    /// (``RequestBodyFlow/highWatermark`` gives the measurements).
    @Test func aProducerAheadOfTheConnectionIsWokenOncePerHalfMegabyteAtMost() {
        var flow = Flow()
        var handed = 0
        var written = 0
        var resumes = 0
        var waiting = false
        while written < 4096 * Self.chunk {
            if !waiting {
                handed += Self.chunk
                if case .proceedThenWait = flow.submit(Self.chunk) {
                    guard case .suspend = flow.wait(handed) else {
                        Issue.record("the producer ahead of the event loop did not wait")
                        return
                    }
                    waiting = true
                }
                continue
            }
            written += Self.chunk
            if flow.written(Self.chunk, channelWritable: true) != nil {
                resumes += 1
                waiting = false
            }
        }
        #expect(resumes > 0)
        #expect(resumes * 512 * 1024 <= written, "\(resumes) wake-ups for \(written) bytes written")
        #expect(handed - written <= Flow.highWatermark + Self.chunk, "the bytes handed over stay bounded")
    }

    /// The event loop may catch up between the producer's submission and its wait: the producer then goes on at
    /// once instead of waiting for news that already came.
    @Test func aWaitAfterTheEventLoopCaughtUpDoesNotSuspend() {
        var flow = Flow()
        while case .proceed = flow.submit(Self.chunk) {}
        while flow.queuedBytes > 0 {
            let resumed = flow.written(Self.chunk, channelWritable: true)
            #expect(resumed == nil)
        }
        let action = flow.wait(1)
        guard case .resume = action else {
            Issue.record("the producer waited although the event loop had caught up: \(action)")
            return
        }
    }

    /// A channel that cannot take more (a full socket buffer, a closed HTTP/2 window) stops the producer after the
    /// chunk in hand, however few bytes wait, until its writability comes back.
    @Test func aFullChannelStopsTheProducerUntilItIsWritableAgain() {
        var flow = Flow()
        guard case .proceed = flow.submit(Self.chunk) else {
            Issue.record("the first chunk was held back")
            return
        }
        let early = flow.written(Self.chunk, channelWritable: false)
        #expect(early == nil)
        guard case .proceedThenWait = flow.submit(Self.chunk) else {
            Issue.record("the producer went on into a full channel")
            return
        }
        guard case .suspend = flow.wait(3) else {
            Issue.record("the producer did not wait for the full channel")
            return
        }
        let whileFull = flow.written(Self.chunk, channelWritable: false)
        #expect(whileFull == nil, "still full")
        let writable = flow.writabilityChanged(true)
        #expect(writable == 3)
        let again = flow.writabilityChanged(true)
        #expect(again == nil, "resumed once")
    }

    /// A failure (the connection closed, the deadline, cancellation) resumes a waiting producer with the error, and
    /// every later chunk fails with the first error without being handed over.
    @Test func aFailureReachesTheWaitingProducerAndEveryLaterWrite() {
        var flow = Flow()
        while case .proceed = flow.submit(Self.chunk) {}
        guard case .suspend = flow.wait(5) else {
            Issue.record("the producer did not wait")
            return
        }
        let failed = flow.fail(Self.error)
        #expect(failed == 5)
        let failedAgain = flow.fail(BulwarkError(.cancelled, host: "api.bulwark.test"))
        #expect(failedAgain == nil)
        let queued = flow.queuedBytes
        guard case .fail(let error) = flow.submit(Self.chunk) else {
            Issue.record("a chunk was handed over after the failure")
            return
        }
        #expect(error.code == .remoteConnectionClosed, "the first error is kept")
        #expect(flow.queuedBytes == queued)
        guard case .fail = flow.wait(6) else {
            Issue.record("a producer waited on a failed body")
            return
        }
        #expect(flow.failure?.code == .remoteConnectionClosed)
    }

    /// The server's early answer ends the body as a failure does, and is remembered as that: the request then has its
    /// answer. A failure that came first is not turned into an early answer.
    @Test func anEarlyAnswerIsTold() {
        var answered = Flow()
        _ = answered.submit(Self.chunk)
        let waiter = answered.fail(Self.error, serverAnswered: true)
        #expect(waiter == nil)
        #expect(answered.serverAnswered)
        guard case .fail = answered.submit(Self.chunk) else {
            Issue.record("a chunk was handed over after the answer")
            return
        }
        var failed = Flow()
        _ = failed.fail(Self.error)
        _ = failed.fail(Self.error, serverAnswered: true)
        #expect(!failed.serverAnswered)
    }

    /// The chunks handed over together leave in one flush: the event loop flushes after the last of them, when no
    /// more are on their way.
    @Test func theLastOfTheChunksHandedOverTogetherFlushes() {
        var flow = Flow()
        for _ in 0..<3 { _ = flow.submit(Self.chunk) }
        var flushes: [Bool] = []
        for _ in 0..<3 {
            _ = flow.written(Self.chunk, channelWritable: true)
            flushes.append(flow.flushes(afterWriting: Self.chunk))
        }
        #expect(flushes == [false, false, true])
        #expect(flow.unflushedBytes == 0)
    }

    /// A producer that keeps ahead of the event loop keeps chunks on their way for ever (it is resumed at the low
    /// watermark, before the event loop has caught up): the event loop still flushes at least every
    /// ``RequestBodyFlow/flushInterval`` bytes, so the body reaches the socket as it is produced, and the last chunk
    /// flushes. Without the interval, a 256 MiB upload once held 129 MiB in the client.
    @Test func aProducerThatKeepsAheadIsFlushedAtLeastEveryInterval() {
        var flow = Flow()
        _ = flow.submit(Self.chunk)
        var unflushed = 0
        var most = 0
        var flushCount = 0
        for _ in 0..<1000 {
            _ = flow.submit(Self.chunk)
            _ = flow.written(Self.chunk, channelWritable: true)
            unflushed += Self.chunk
            most = max(most, unflushed)
            if flow.flushes(afterWriting: Self.chunk) {
                unflushed = 0
                flushCount += 1
            }
        }
        #expect(most <= Flow.flushInterval)
        #expect(flushCount >= 1000 * Self.chunk / Flow.flushInterval)
        _ = flow.written(Self.chunk, channelWritable: true)
        let last = flow.flushes(afterWriting: Self.chunk)
        #expect(last, "the last chunk flushes")
        #expect(flow.queuedBytes == 0)
    }
}
