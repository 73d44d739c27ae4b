import NIOConcurrencyHelpers

/// Hands the result of an exchange (its response head, or its failure) from the connection's event loop to the task
/// that waits for it, without a task on the event loop.
///
/// Awaiting an `EventLoopFuture` from a task (`get()`, or `flatMap` from off the loop) registers its callback with the
/// event loop's `execute`, which takes the loop's lock and, when the loop sleeps waiting for the response, wakes it
/// for nothing: one more event-loop task and eventfd write per request. Here the loop completes the handoff in its own
/// callbacks, and the task waits on a lock and a continuation: whichever comes second resumes the task.
///
/// The first result wins. Until the exchange has started (``exchangeStarted()``), ``abandon(_:)`` fails the wait at
/// once (cancellation, the deadline, a shutdown past its grace period); once it has, the exchange itself is failed
/// instead, and its failure ends the wait, as before the exchange existed.
final class ExchangeHandoff<Value: Sendable>: Sendable {
    private enum State {
        /// No result, nobody waiting yet.
        case pending(started: Bool)
        /// The task waits.
        case waiting(UnsafeContinuation<Value, any Error>, started: Bool)
        /// A result nobody took yet.
        case done(Result<Value, any Error>)
        /// The task has its result.
        case taken
    }

    private let state = NIOLockedValueBox(State.pending(started: false))

    init() {}

    /// Completes the handoff, if it is not complete yet.
    func complete(_ result: Result<Value, any Error>) {
        let waiting = self.state.withLockedValue { state -> UnsafeContinuation<Value, any Error>? in
            switch state {
            case .pending:
                state = .done(result)
                return nil
            case .waiting(let continuation, _):
                state = .taken
                return continuation
            case .done, .taken:
                return nil
            }
        }
        waiting?.resume(with: result)
    }

    /// The exchange started on its connection: ``abandon(_:)`` no longer ends the wait.
    func exchangeStarted() {
        self.state.withLockedValue { state in
            switch state {
            case .pending: state = .pending(started: true)
            case .waiting(let continuation, _): state = .waiting(continuation, started: true)
            case .done, .taken: break
            }
        }
    }

    /// Fails the wait with `error` if the exchange has not started.
    func abandon(_ error: any Error) {
        let waiting = self.state.withLockedValue { state -> UnsafeContinuation<Value, any Error>? in
            switch state {
            case .pending(started: false):
                state = .done(.failure(error))
                return nil
            case .waiting(let continuation, started: false):
                state = .taken
                return continuation
            case .pending(started: true), .waiting(_, started: true), .done, .taken:
                return nil
            }
        }
        waiting?.resume(throwing: error)
    }

    /// The result, once it is there. Called once.
    func value() async throws -> Value {
        try await withUnsafeThrowingContinuation { continuation in
            self.wait(with: continuation)
        }
    }

    /// Resumes `continuation` with the result, now or when it comes. Not inlined: inlined into the caller, its
    /// temporary states would take slots in the caller's async frame, which stays allocated while it waits.
    @inline(never)
    private func wait(with continuation: UnsafeContinuation<Value, any Error>) {
        let ready = self.state.withLockedValue { state -> Result<Value, any Error>? in
            switch state {
            case .pending(let started):
                state = .waiting(continuation, started: started)
                return nil
            case .done(let result):
                state = .taken
                return result
            case .waiting, .taken:
                preconditionFailure("an exchange's result is awaited once")
            }
        }
        if let ready { continuation.resume(with: ready) }
    }
}
