import NIOConcurrencyHelpers
import NIOCore

/// The requests of a client that have not finished, for a graceful shutdown: a request is in flight from
/// ``BulwarkClient/execute(_:deadline:logger:)`` until its response head (``enter()``, ``leave(_:)``), and each of its
/// exchanges until the exchange completes, response body included (``startExchange(cancel:)``,
/// ``endExchange(_:)``).
///
/// Once ``beginDraining()`` is called, new requests are refused; ``drained(before:)`` waits until nothing is in
/// flight; ``cancelAll(_:)`` fails every exchange still running.
final class InFlightRequests: Sendable {
    private struct State {
        var isDraining = false
        var nextID = 0
        var requests = 0
        /// What fails each exchange in flight, by its number.
        var exchanges: [Int: @Sendable (BulwarkError) -> Void] = [:]
        /// The error every exchange that starts from now on fails with at once, after ``cancelAll(_:)``.
        var cancellation: BulwarkError?
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]

        var isIdle: Bool { self.requests == 0 && self.exchanges.isEmpty }

        mutating func takeWaitersIfIdle() -> [CheckedContinuation<Void, Never>] {
            guard self.isIdle, !self.waiters.isEmpty else { return [] }
            defer { self.waiters = [:] }
            return Array(self.waiters.values)
        }
    }

    private let state = NIOLockedValueBox(State())

    /// Counts a request in; fails with ``BulwarkError/Code/clientShutdown`` once the client is shutting down.
    func enter() throws(BulwarkError) {
        let admitted = self.state.withLockedValue { state in
            guard !state.isDraining else { return false }
            state.requests += 1
            return true
        }
        guard admitted else {
            throw BulwarkError(.clientShutdown, host: nil, detail: "the client is shutting down")
        }
    }

    /// Counts a request out (its response head arrived, or it failed).
    func leave() {
        let waiters = self.state.withLockedValue { state in
            state.requests -= 1
            return state.takeWaitersIfIdle()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Registers an exchange with what fails it; returns its number for ``endExchange(_:)``. After ``cancelAll(_:)``
    /// the exchange is failed at once.
    func startExchange(cancel: @escaping @Sendable (BulwarkError) -> Void) -> Int {
        let (id, cancellation) = self.state.withLockedValue { state in
            state.nextID += 1
            state.exchanges[state.nextID] = cancel
            return (state.nextID, state.cancellation)
        }
        if let cancellation { cancel(cancellation) }
        return id
    }

    /// Removes an exchange that completed or failed. Calling it again for the same number does nothing.
    func endExchange(_ id: Int) {
        let waiters = self.state.withLockedValue { state in
            guard state.exchanges.removeValue(forKey: id) != nil else { return [CheckedContinuation<Void, Never>]() }
            return state.takeWaitersIfIdle()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Refuses every request from now on.
    func beginDraining() {
        self.state.withLockedValue { $0.isDraining = true }
    }

    /// Whether nothing is in flight.
    var isIdle: Bool { self.state.withLockedValue { $0.isIdle } }

    /// Waits until nothing is in flight, or until `deadline`, or until the task is cancelled; returns whether nothing
    /// is in flight.
    func drained(before deadline: NIODeadline) async -> Bool {
        let id = self.state.withLockedValue { state -> Int? in
            guard !state.isIdle else { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return true }
        let remaining = deadline - .now()
        guard remaining > .zero else { return self.isIdle }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let idle = self.state.withLockedValue { state in
                            if state.isIdle { return true }
                            state.waiters[id] = continuation
                            return false
                        }
                        if idle {
                            continuation.resume()
                        } else if Task.isCancelled {
                            // Cancelled before the waiter was registered: the handler found nothing to resume.
                            self.state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
                        }
                    }
                } onCancel: {
                    self.state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
                }
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(remaining.nanoseconds))
            }
            await group.next()
            group.cancelAll()
        }
        return self.isIdle
    }

    /// Fails every exchange in flight with `error`, and every exchange that starts from now on.
    func cancelAll(_ error: BulwarkError) {
        let cancels = self.state.withLockedValue { state in
            state.cancellation = error
            return Array(state.exchanges.values)
        }
        for cancel in cancels { cancel(error) }
    }

    /// One exchange's place in the registry: started once the exchange is under way, ended when it completed or
    /// failed. The two may come in either order (a small response can complete before the registration is made):
    /// an exchange ended first is never registered. Ending it again does nothing.
    final class Registration: Sendable {
        private enum State {
            case idle
            case started(InFlightRequests, Int)
            case ended
        }

        private let state = NIOLockedValueBox(State.idle)

        init() {}

        func start(in registry: InFlightRequests, cancel: @escaping @Sendable (BulwarkError) -> Void) {
            let ended = self.state.withLockedValue { state -> Bool in
                if case .ended = state { return true }
                return false
            }
            guard !ended else { return }
            let id = registry.startExchange(cancel: cancel)
            let endedMeanwhile = self.state.withLockedValue { state -> Bool in
                if case .ended = state { return true }
                state = .started(registry, id)
                return false
            }
            if endedMeanwhile { registry.endExchange(id) }
        }

        func end() {
            let registered = self.state.withLockedValue { state -> (InFlightRequests, Int)? in
                defer { state = .ended }
                if case .started(let registry, let id) = state { return (registry, id) }
                return nil
            }
            if let (registry, id) = registered { registry.endExchange(id) }
        }
    }
}
