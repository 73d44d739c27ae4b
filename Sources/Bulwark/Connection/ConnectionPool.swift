import NIOConcurrencyHelpers
import NIOCore

/// Keeps connections for reuse, per origin (scheme, host, port) and client identity. One pool belongs to one client, and so to one
/// trust policy: connections are never shared between policies.
///
/// - HTTP/1.1: at most `maximumConnectionsPerHost` per origin; an idle connection is reused; further requests
///   wait for one to come back. A connection is returned only after its response ended with keep-alive.
/// - HTTP/2: one connection per origin carries every request as a stream.
/// - Idle connections close after `idleTimeout`, and are dropped as soon as the server closes them.
///
/// - Sign-out: ``signOut()`` starts a new credential epoch and closes the connections that carried credentials of
///   earlier ones (idle ones at once, busy HTTP/1.1 ones when their exchange ends). A connection marked with an
///   earlier epoch after the sign-out (a request whose lease was taken before it) is retired when it is next looked
///   at: an HTTP/1.1 one when released, an HTTP/2 one by the next ``acquire(_:deadline:)``.
/// - A request waiting for a connection stops waiting at its deadline or when its task is cancelled.
/// - Identity rotation: ``retire(where:)`` retires the keys of a replaced client identity; their connections are
///   drained (idle ones closed now, busy HTTP/1.1 ones when released, HTTP/2 ones when their last stream ends) and
///   never handed out again, and the keys are forgotten once nothing of them is left, so that nothing here keeps the
///   old identity's key alive.
///
/// Every decision is ``ConnectionPoolStateMachine``'s, a value tested without sockets; this class carries the
/// decisions out: it resumes waiting requests, schedules idle and deadline timers, and closes channels. The machine
/// and that bookkeeping live behind one lock; no I/O happens while it is held.
final class ConnectionPool: Sendable {
    /// What a connection is pooled by. Its hash is computed once, when it is made or changed: the pool looks a key
    /// up on every acquire and every release, and hashing its strings, identity and proxy each time cost more than the
    /// rest of those look-ups.
    struct Key: Hashable, Sendable {
        private struct Fields: Hashable, Sendable {
            var scheme: String
            var host: String
            var port: Int
            var identity: ClientIdentity?
            var policyGeneration: Int
            var proxy: ProxyRoute?
        }

        private var fields: Fields {
            didSet { self.hashCode = self.fields.hashValue }
        }
        /// `fields.hashValue`, kept.
        private var hashCode: Int

        var scheme: String {
            get { self.fields.scheme }
            set { self.fields.scheme = newValue }
        }
        var host: String {
            get { self.fields.host }
            set { self.fields.host = newValue }
        }
        var port: Int {
            get { self.fields.port }
            set { self.fields.port = newValue }
        }
        /// The client certificate the connection authenticates with, if any: connections made with different
        /// identities (or with none) are never shared.
        var identity: ClientIdentity? {
            get { self.fields.identity }
            set { self.fields.identity = newValue }
        }
        /// The policy generation the connection was made under (see `PolicyStore`): connections made under a replaced
        /// policy are never shared with requests that read the new one.
        var policyGeneration: Int {
            get { self.fields.policyGeneration }
            set { self.fields.policyGeneration = newValue }
        }
        /// The proxy the connection goes through, if any: connections through different proxies (or none) are never
        /// shared.
        var proxy: ProxyRoute? {
            get { self.fields.proxy }
            set { self.fields.proxy = newValue }
        }

        init(
            scheme: String,
            host: String,
            port: Int,
            identity: ClientIdentity? = nil,
            policyGeneration: Int = 0,
            proxy: ProxyRoute? = nil
        ) {
            let fields = Fields(
                scheme: scheme,
                host: host,
                port: port,
                identity: identity,
                policyGeneration: policyGeneration,
                proxy: proxy
            )
            self.fields = fields
            self.hashCode = fields.hashValue
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.hashCode == rhs.hashCode && lhs.fields == rhs.fields
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.hashCode)
        }
    }

    /// A connection handed to one request.
    struct Lease: Sendable {
        var connection: PooledConnection
        /// Whether the connection served a request before (a reused connection may have been closed by the server
        /// meanwhile, which makes a retry on a fresh connection safe for replayable requests).
        var isReused: Bool
    }

    /// A request waiting for a connection: resumed with a lease, with nil (try again: a slot may be free), or with
    /// an error (deadline, cancellation, shutdown).
    private struct Waiter {
        var continuation: CheckedContinuation<Lease?, any Error>
        /// Ends the wait at the request's deadline; cancelled when the waiter is resumed otherwise.
        var deadlineTimer: Scheduled<Void>?

        func resume(returning lease: Lease?) {
            self.deadlineTimer?.cancel()
            self.continuation.resume(returning: lease)
        }

        func resume(throwing error: any Error) {
            self.deadlineTimer?.cancel()
            self.continuation.resume(throwing: error)
        }
    }

    private typealias StateMachine = ConnectionPoolStateMachine<Key, HTTP1Connection, HTTP2Connection>

    /// The decisions (``ConnectionPoolStateMachine``) and what carries them out: the waiting requests' continuations
    /// and the idle connections' timers, by the ids the machine uses.
    private struct State {
        var machine: StateMachine
        var waiters: [Int: Waiter] = [:]
        /// The idle timer of each HTTP/1.1 connection that has one, by the connection. A connection keeps its timer
        /// while it serves requests one after the other (setting one at each release and cancelling it at each
        /// acquire cost a task on the event loop per request, and the cancellation, from the request's thread, a
        /// wake-up of the loop): when it fires, the connection closes if it stayed idle for the whole timeout, the
        /// timer is set again for the rest of it if it is idle since less, and lapses if it is in use. Removed (and
        /// cancelled) when the connection closes or the pool lets go of it.
        var idleTimers: [ObjectIdentifier: Scheduled<Void>] = [:]
        var nextWaiterID = 0
        /// Keys of an older policy generation are retired whatever ``retire(where:)`` is told (see
        /// ``retire(policyGenerationsBelow:where:)``).
        var minimumPolicyGeneration = 0

        /// Takes the continuations of `ids` out, in order.
        mutating func takeWaiters(_ ids: [Int]) -> [Waiter] {
            ids.compactMap { self.waiters.removeValue(forKey: $0) }
        }
    }

    private let state: NIOLockedValueBox<State>
    private let options: BulwarkClient.PoolOptions
    /// Runs the waiters' deadline timers.
    private let eventLoopGroup: any EventLoopGroup

    init(options: BulwarkClient.PoolOptions, eventLoopGroup: any EventLoopGroup) {
        self.options = options
        self.eventLoopGroup = eventLoopGroup
        self.state = NIOLockedValueBox(
            State(machine: StateMachine(maximumConnectionsPerHost: options.maximumConnectionsPerHost))
        )
    }

    /// What ``acquire(_:)`` gives a request.
    enum Acquired: Sendable {
        /// A connection to use now: an idle or HTTP/2 one, or one released to this request.
        case leased(Lease)
        /// A slot for a new connection: open one, then hand it to ``connected(_:key:)``, or call
        /// ``connectFailed(_:)`` if it cannot be opened. One of the two must follow.
        case connect
        /// The key was retired (its client identity was replaced): choose the key again.
        case stale

        /// Whether this is a connection that served a request before.
        var isReused: Bool {
            if case .leased(let lease) = self { return lease.isReused }
            return false
        }
    }

    /// A connection for `key`: an idle or HTTP/2 one when there is one, a slot for a new one while under the
    /// per-host limit, or the next one released.
    ///
    /// The pool does not open connections itself, so that the caller can go on from the new connection's event
    /// loop (start its request there) without a hop back to its task.
    ///
    /// - Throws: ``BulwarkError`` with ``BulwarkError/Code/deadlineExceeded`` when `deadline` passes while waiting,
    ///   ``BulwarkError/Code/cancelled`` when the task is cancelled while waiting, or
    ///   ``BulwarkError/Code/clientShutdown``.
    ///
    /// - Parameter evenIfRetired: For a retired key, a slot for a one-off connection instead of ``Acquired/stale``:
    ///   for a request that keeps the policy it started with after that policy was replaced.
    func acquire(_ key: Key, deadline: NIODeadline? = nil, evenIfRetired: Bool = false) async throws -> Acquired {
        while true {
            let (acquired, timers) = self.state.withLockedValue { state in
                let acquired = state.machine.acquire(
                    key,
                    evenIfRetired: evenIfRetired,
                    retired: key.policyGeneration < state.minimumPolicyGeneration
                )
                // Counted under the lock that hands it out, so that a drain never closes it under this request.
                if case .lease(.http2(let connection), _, _) = acquired.action { connection.leaseTaken() }
                // A leased idle connection keeps its timer (see `State.idleTimers`).
                let timers = acquired.closedIdle.compactMap {
                    state.idleTimers.removeValue(forKey: ObjectIdentifier($0.connection))
                }
                return (acquired, timers)
            }
            for timer in timers { timer.cancel() }
            acquired.retiredHTTP2?.channel.close(promise: nil)
            switch acquired.action {
            case .lease(.http1(let connection), let reused, _):
                return .leased(Lease(connection: .http1(connection), isReused: reused))
            case .lease(.http2(let connection), let reused, _):
                return .leased(Lease(connection: .http2(connection), isReused: reused))
            case .connect:
                return .connect
            case .stale:
                return .stale
            case .failShutdown:
                throw BulwarkError(.clientShutdown, host: key.host)
            case .wait:
                if let handed = try await self.wait(for: key, deadline: deadline) { return .leased(handed) }
            }
        }
    }

    /// Waits for a connection of `key` to be handed over or for a slot to free up (nil), until `deadline` or the
    /// task's cancellation.
    private func wait(for key: Key, deadline: NIODeadline?) async throws -> Lease? {
        if let deadline, deadline <= .now() {
            throw BulwarkError(.deadlineExceeded, host: key.host, detail: "while waiting for a connection")
        }
        let id = self.state.withLockedValue { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let timer = deadline.map { deadline in
                    self.eventLoopGroup.any().scheduleTask(deadline: deadline) {
                        self.abandonWait(
                            key: key,
                            id: id,
                            error: BulwarkError(
                                .deadlineExceeded,
                                host: key.host,
                                detail: "while waiting for a connection"
                            )
                        )
                    }
                }
                let enqueued = self.state.withLockedValue { state in
                    let action = state.machine.enqueueWaiter(id, key: key)
                    if action == .enqueued {
                        state.waiters[id] = Waiter(continuation: continuation, deadlineTimer: timer)
                    }
                    return action
                }
                if enqueued == .failShutdown {
                    timer?.cancel()
                    continuation.resume(throwing: BulwarkError(.clientShutdown, host: key.host))
                } else if enqueued == .retry {
                    timer?.cancel()
                    continuation.resume(returning: nil)
                } else if Task.isCancelled {
                    // Cancelled before the waiter was in the list, where the cancellation handler looked for it.
                    self.abandonWait(key: key, id: id, error: BulwarkError(.cancelled, host: key.host))
                }
            }
        } onCancel: {
            self.abandonWait(key: key, id: id, error: BulwarkError(.cancelled, host: key.host))
        }
    }

    /// Ends a wait with `error`, if the waiter is still waiting.
    private func abandonWait(key: Key, id: Int, error: BulwarkError) {
        let waiter = self.state.withLockedValue { state -> Waiter? in
            guard state.machine.removeWaiter(id, key: key) else { return nil }
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.resume(throwing: error)
    }

    /// Takes a new connection opened for a ``Acquired/connect`` slot into the pool and leases it to the request
    /// that opened it. Synchronous, so that it can run in the connection's event-loop callback.
    func connected(_ connection: PooledConnection, key: Key) -> Lease {
        switch connection {
        case .http1(let http1):
            // Now that the origin is known to speak HTTP/1.1, waiters may dial connections of their own.
            let waiters = self.state.withLockedValue { $0.takeWaiters($0.machine.connectedHTTP1(key)) }
            for waiter in waiters { waiter.resume(returning: nil) }
            http1.channel.closeFuture.whenComplete { _ in self.closed(http1, key: key) }
        case .http2(let http2):
            let (waiters, retired, replaced) = self.state.withLockedValue { state in
                let connected = state.machine.connectedHTTP2(http2, key: key)
                let waiters = state.takeWaiters(connected.waiters)
                // The opener's lease and the waiters'.
                for _ in 0...waiters.count { http2.leaseTaken() }
                return (waiters, state.machine.isRetired(key) || state.machine.isShutdown, connected.replaced)
            }
            replaced?.drain()
            for waiter in waiters { waiter.resume(returning: Lease(connection: .http2(http2), isReused: true)) }
            http2.channel.closeFuture.whenComplete { _ in
                self.state.withLockedValue { $0.machine.closedHTTP2(http2, key: key) }
            }
            // Opened for a key retired meanwhile: it serves the request that opened it, then closes.
            if retired { http2.drain() }
        }
        return Lease(connection: connection, isReused: false)
    }

    /// Gives an HTTP/1.1 connection back after its exchange: kept when `reusable`, otherwise closed.
    func release(_ connection: HTTP1Connection, key: Key, reusable: Bool) {
        enum Next {
            case handOff(Waiter?)
            case keptIdle(needsTimer: Bool)
            case close(wake: Waiter?)
        }
        let now = NIODeadline.now().uptimeNanoseconds
        let next: Next = self.state.withLockedValue { state in
            switch state.machine.release(connection, key: key, reusable: reusable, now: now) {
            case .handOff(let id): return .handOff(state.waiters.removeValue(forKey: id))
            case .keepIdle: return .keptIdle(needsTimer: state.idleTimers[ObjectIdentifier(connection)] == nil)
            case .close(let id): return .close(wake: id.flatMap { state.waiters.removeValue(forKey: $0) })
            }
        }
        switch next {
        case .handOff(let waiter):
            waiter?.resume(returning: Lease(connection: .http1(connection), isReused: true))
        case .keptIdle(let needsTimer):
            if needsTimer {
                self.setIdleTimer(connection, key: key, deadline: .uptimeNanoseconds(now) + self.options.idleTimeout)
            }
        case .close(let wake):
            connection.channel.close(promise: nil)
            wake?.resume(returning: nil)
        }
    }

    /// Sets the idle timer of `connection`, kept idle, unless it has one (or is no longer idle) by the time the
    /// timer is made.
    private func setIdleTimer(_ connection: HTTP1Connection, key: Key, deadline: NIODeadline) {
        let timer = connection.channel.eventLoop.scheduleTask(deadline: deadline) {
            self.idleTimerFired(connection, key: key)
        }
        let kept = self.state.withLockedValue { state -> Bool in
            let id = ObjectIdentifier(connection)
            guard state.idleTimers[id] == nil, !state.machine.isShutdown,
                state.machine.idleConnections(key).contains(where: { $0 === connection })
            else { return false }
            state.idleTimers[id] = timer
            return true
        }
        if !kept { timer.cancel() }
    }

    /// The idle timer of `connection` fired: closes it if it stayed idle for the whole timeout, sets the timer for
    /// the rest if it is idle since less, and lets the timer lapse if the connection is in use.
    private func idleTimerFired(_ connection: HTTP1Connection, key: Key) {
        let now = NIODeadline.now().uptimeNanoseconds
        let timeout = UInt64(max(self.options.idleTimeout.nanoseconds, 0))
        let check = self.state.withLockedValue { state -> StateMachine.IdleCheck in
            state.idleTimers[ObjectIdentifier(connection)] = nil
            return state.machine.idleTimerFired(connection, key: key, now: now, timeout: timeout)
        }
        switch check {
        case .close:
            connection.channel.close(promise: nil)
        case .checkAgain(let expiry):
            self.setIdleTimer(connection, key: key, deadline: .uptimeNanoseconds(expiry))
        case .notIdle:
            break
        }
    }

    /// The server (or anything else) closed an HTTP/1.1 connection: forget it if it was idle.
    private func closed(_ connection: HTTP1Connection, key: Key) {
        let (timer, wake) = self.state.withLockedValue { state -> (Scheduled<Void>?, Waiter?) in
            let (_, wake) = state.machine.closedHTTP1(connection, key: key)
            // Its timer, idle or not (a connection in use keeps the timer of its last idle period).
            return (
                state.idleTimers.removeValue(forKey: ObjectIdentifier(connection)),
                wake.flatMap { state.waiters.removeValue(forKey: $0) }
            )
        }
        timer?.cancel()
        wake?.resume(returning: nil)
    }

    /// Gives back a ``Acquired/connect`` slot whose connection could not be opened, and wakes one waiter.
    func connectFailed(_ key: Key) {
        let wake = self.state.withLockedValue { state -> Waiter? in
            state.machine.connectFailed(key).flatMap { state.waiters.removeValue(forKey: $0) }
        }
        wake?.resume(returning: nil)
    }

    /// The number of connections open or being opened, idle ones included.
    var openConnectionCount: Int {
        self.state.withLockedValue { $0.machine.openConnectionCount }
    }

    /// The current sign-out epoch: capture it before attaching credentials to a request, and mark the connection the
    /// request goes over with it (``PooledConnection/markCarriedCredentials(epoch:)``).
    var credentialEpoch: Int {
        self.state.withLockedValue { $0.machine.credentialEpoch }
    }

    /// Starts a new credential epoch and closes every connection that carried credentials of an earlier one: idle
    /// HTTP/1.1 and HTTP/2 connections now (requests still running on such an HTTP/2 connection fail), busy
    /// HTTP/1.1 connections when their exchange ends. Connections that never carried a credential stay.
    ///
    /// - Returns: The number of connections closed now.
    func signOut() async -> Int {
        let channels = self.state.withLockedValue { state -> [any Channel] in
            let (idle, http2) = state.machine.signOut()
            for entry in idle { state.idleTimers.removeValue(forKey: ObjectIdentifier(entry.connection))?.cancel() }
            return idle.map(\.connection.channel) + http2.map(\.channel)
        }
        for channel in channels {
            try? await channel.close()
        }
        return channels.count
    }

    /// Retires the keys `isStale` says are stale (their client identity was replaced or removed), and brings back
    /// retired keys it no longer says are: the stale keys' idle connections close now, busy HTTP/1.1 ones when
    /// their exchange ends, HTTP/2 ones when their last stream ends; requests waiting for them choose again.
    ///
    /// - Returns: The number of connections closed or set to close when idle.
    @discardableResult
    func retire(where isStale: @escaping (Key) -> Bool) -> Int {
        self.retire(policyGenerationsBelow: nil, where: isStale)
    }

    /// ``retire(where:)``, after raising the oldest policy generation kept to `generation`: every key of an older
    /// generation is retired too, now and by every later ``retire(where:)``.
    @discardableResult
    func retire(policyGenerationsBelow generation: Int?, where isStale: @escaping (Key) -> Bool) -> Int {
        let (idle, http2, waiters) = self.state.withLockedValue {
            state -> ([HTTP1Connection], [HTTP2Connection], [Waiter]) in
            if let generation { state.minimumPolicyGeneration = max(state.minimumPolicyGeneration, generation) }
            let minimum = state.minimumPolicyGeneration
            let (idle, http2, waiting) = state.machine.retire { $0.policyGeneration < minimum || isStale($0) }
            for entry in idle { state.idleTimers.removeValue(forKey: ObjectIdentifier(entry.connection))?.cancel() }
            return (idle.map(\.connection), http2, state.takeWaiters(waiting))
        }
        for connection in idle { connection.channel.close(promise: nil) }
        for connection in http2 { connection.drain() }
        for waiter in waiters { waiter.resume(returning: nil) }
        return idle.count + http2.count
    }

    /// The number of keys the pool tracks (for tests: a retired key is forgotten once nothing of it is left).
    var keyCount: Int { self.state.withLockedValue { $0.machine.keyCount } }

    /// Closes every pooled connection and fails waiting requests. Connections serving a request close when the
    /// request ends.
    func shutdown() async {
        let (channels, waiters) = self.state.withLockedValue { state -> ([any Channel], [Waiter]) in
            let (idle, http2, waiting) = state.machine.shutdown()
            for entry in idle { state.idleTimers.removeValue(forKey: ObjectIdentifier(entry.connection))?.cancel() }
            return (idle.map(\.connection.channel) + http2.map(\.channel), state.takeWaiters(waiting))
        }
        for waiter in waiters { waiter.resume(throwing: BulwarkError(.clientShutdown, host: nil)) }
        for channel in channels {
            try? await channel.close()
        }
    }
}

extension HTTP1Connection: PoolableConnection {
    var isOpen: Bool { self.channel.isActive }

    func carriedCredentials(before epoch: Int) -> Bool {
        PooledConnection.http1(self).carriedCredentials(before: epoch)
    }
}

extension HTTP2Connection: PoolableConnection {
    func carriedCredentials(before epoch: Int) -> Bool {
        PooledConnection.http2(self).carriedCredentials(before: epoch)
    }
}
