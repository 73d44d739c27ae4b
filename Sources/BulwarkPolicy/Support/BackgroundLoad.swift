/// A job run at most once, in the background, and the callbacks waiting for its end: the index of the system trust
/// roots (``SystemTrustRootsLoading``), for which a handshake timer that runs out while the verification waits runs
/// once more.
///
/// Until ``start()`` is called the load is *settled*: nothing waits for a load nobody asked for.
package final class BackgroundLoad: Sendable {
    private struct State {
        var started = false
        var finished = false
        var waiters: [@Sendable () -> Void] = []
    }

    private let state = LockedValue(State())
    private let job: @Sendable () async -> Void

    /// A load that runs `job` once ``start()`` is called.
    package init(_ job: @escaping @Sendable () async -> Void) {
        self.job = job
    }

    /// Starts the job in a detached task, the first time only; returns at once.
    package func start() {
        let first = self.state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        Task.detached(priority: .userInitiated) {
            await self.job()
            let waiters = self.state.withLock { state in
                state.finished = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter() }
        }
    }

    /// Whether nothing is to be waited for: the job was never started, or it has finished.
    package var isSettled: Bool {
        self.state.withLock { !$0.started || $0.finished }
    }

    /// Calls `body` once the load is settled: at once (on the caller's thread) if it is, otherwise on the thread that
    /// finished the job.
    package func whenSettled(_ body: @escaping @Sendable () -> Void) {
        let now = self.state.withLock { state in
            if !state.started || state.finished { return true }
            state.waiters.append(body)
            return false
        }
        if now { body() }
    }
}
