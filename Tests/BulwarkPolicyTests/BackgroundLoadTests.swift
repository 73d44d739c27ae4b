import BulwarkPolicy
import BulwarkTestHelpers
import Foundation
import Testing

/// The one-time background load a handshake timer waits for (issue 43: the system roots are parsed once per process,
/// in the background, never inside the handshake timeout).
@Suite("A load run once in the background, and its waiters")
struct BackgroundLoadTests {
    /// A job that runs until `release` is called, counting its runs.
    final class GatedJob: Sendable {
        let runs = LockedValue(0)
        let gate = LockedValue<CheckedContinuation<Void, Never>?>(nil)
        let entered = LockedValue(false)

        func run() async {
            self.runs.withLock { $0 += 1 }
            await withCheckedContinuation { continuation in
                self.gate.set(continuation)
                self.entered.set(true)
            }
        }

        func release() async {
            while !self.entered.current { await Task.yield() }
            self.gate.withLock { $0?.resume() }
        }
    }

    @Test("a load never started is settled, and a waiter runs at once")
    func notStartedIsSettled() {
        let load = BackgroundLoad {}
        #expect(load.isSettled)
        let called = LockedValue(false)
        load.whenSettled { called.set(true) }
        #expect(called.current)
    }

    @Test("waiters run once, when the job ends; a second start runs nothing")
    func waitersRunWhenTheJobEnds() async {
        let job = GatedJob()
        let load = BackgroundLoad { await job.run() }
        load.start()
        load.start()
        #expect(!load.isSettled)
        let calls = LockedValue(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            load.whenSettled {
                calls.withLock { $0 += 1 }
                done.resume()
            }
            #expect(calls.current == 0, "a waiter ran before the job ended")
            Task { await job.release() }
        }
        #expect(load.isSettled)
        load.whenSettled { calls.withLock { $0 += 1 } }
        #expect(calls.current == 2)
        load.start()
        #expect(job.runs.current == 1)
    }
}
