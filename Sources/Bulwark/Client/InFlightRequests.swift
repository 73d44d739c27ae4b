import NIOConcurrencyHelpers
import NIOCore

/// The requests of a client that have not finished, for a graceful shutdown: a request is in flight from
/// ``BulwarkClient/execute(_:deadline:logger:)`` until its response head (``enter()``, ``leave(_:)``), and each of its
/// exchanges until the exchange completes, response body included (a ``Registration``).
///
/// Once ``beginDraining()`` is called, new requests are refused; ``drained(before:)`` waits until nothing is in
/// flight; ``cancelAll(_:)`` fails every exchange still running.
final class InFlightRequests: Sendable {
    private struct State {
        var isDraining = false
        var nextID = 0
        var requests = 0
        /// The exchanges in flight, in no order: each registration knows its index here, so that it is added and
        /// removed without a look-up (this happens twice per request).
        var exchanges: [Registration] = []
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

    /// Registers the exchange of `registration` with what fails it. After ``cancelAll(_:)`` the exchange is failed
    /// at once. Nothing happens for a registration that ended already.
    fileprivate func start(_ registration: Registration, cancel: @escaping @Sendable (BulwarkError) -> Void) {
        let (registered, cancellation) = self.state.withLockedValue { state -> (Bool, BulwarkError?) in
            guard case .idle = registration.stage else { return (false, nil) }
            registration.stage = .started(index: state.exchanges.count)
            registration.cancel = cancel
            state.exchanges.append(registration)
            return (true, state.cancellation)
        }
        if registered, let cancellation { cancel(cancellation) }
    }

    /// Removes the exchange of `registration`, which completed or failed. Ending it again does nothing.
    fileprivate func end(_ registration: Registration) {
        let waiters = self.state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            guard case .started(let index) = registration.stage else {
                registration.stage = .ended
                return []
            }
            registration.stage = .ended
            registration.cancel = nil
            let last = state.exchanges.removeLast()
            if last !== registration {
                state.exchanges[index] = last
                last.stage = .started(index: index)
            }
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
            return state.exchanges.compactMap(\.cancel)
        }
        for cancel in cancels { cancel(error) }
    }

    /// One exchange's place in the registry: started once the exchange is under way, ended when it completed or
    /// failed. The two may come in either order (a small response can complete before the registration is made):
    /// an exchange ended first is never registered. Ending it again does nothing.
    ///
    /// `@unchecked Sendable`: its variables are read and written only under its registry's lock.
    final class Registration: @unchecked Sendable {
        fileprivate enum Stage {
            case idle
            /// Registered, at this index of the registry's exchanges.
            case started(index: Int)
            case ended
        }

        private let registry: InFlightRequests
        fileprivate var stage = Stage.idle
        /// What fails the exchange, while it is registered.
        fileprivate var cancel: (@Sendable (BulwarkError) -> Void)?

        /// A registration in `registry`, not yet started.
        init(in registry: InFlightRequests) {
            self.registry = registry
        }

        /// Registers the exchange with what fails it (see ``InFlightRequests/cancelAll(_:)``).
        func start(cancel: @escaping @Sendable (BulwarkError) -> Void) {
            self.registry.start(self, cancel: cancel)
        }

        /// Ends the exchange's registration.
        func end() {
            self.registry.end(self)
        }
    }
}
