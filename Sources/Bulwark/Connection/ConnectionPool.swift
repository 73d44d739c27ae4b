import NIOConcurrencyHelpers
import NIOCore

/// Keeps connections for reuse, per origin (scheme, host, port). One pool belongs to one client, and so to one
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
///
/// All state lives behind one lock; no I/O happens while it is held.
final class ConnectionPool: Sendable {
    struct Key: Hashable, Sendable {
        var scheme: String
        var host: String
        var port: Int
    }

    /// A connection handed to one request.
    struct Lease: Sendable {
        var connection: PooledConnection
        /// Whether the connection served a request before (a reused connection may have been closed by the server
        /// meanwhile, which makes a retry on a fresh connection safe for replayable requests).
        var isReused: Bool
    }

    private struct Idle {
        var connection: HTTP1Connection
        var generation: Int
        /// Closes the connection when it stays idle; cancelled as soon as the connection is used again, so that
        /// no timer outlives its purpose (NIO cancels timers by searching its timer queue).
        var timer: Scheduled<Void>?
    }

    private struct PerKey {
        var idle: [Idle] = []
        var open = 0
        /// Whether the origin spoke HTTP/1.1 on its last new connection. Until the first connection tells,
        /// further requests wait for it rather than dial more connections that may all turn out to be HTTP/2.
        var knownHTTP1 = false
        var http2: HTTP2Connection?
        var waiters: [Waiter] = []
    }

    /// A request waiting for a connection: resumed with a lease, with nil (try again: a slot may be free), or with
    /// an error (deadline, cancellation, shutdown).
    private struct Waiter {
        var id: Int
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

    private struct State {
        var keys: [Key: PerKey] = [:]
        var generation = 0
        var isShutdown = false
        /// Incremented by each sign-out; connections record the epoch of the credentials they carried.
        var credentialEpoch = 0
        var nextWaiterID = 0
    }

    private let state = NIOLockedValueBox(State())
    private let options: BulwarkClient.PoolOptions
    /// Runs the waiters' deadline timers.
    private let eventLoopGroup: any EventLoopGroup

    init(options: BulwarkClient.PoolOptions, eventLoopGroup: any EventLoopGroup) {
        self.options = options
        self.eventLoopGroup = eventLoopGroup
    }

    /// What ``acquire(_:)`` gives a request.
    enum Acquired: Sendable {
        /// A connection to use now: an idle or HTTP/2 one, or one released to this request.
        case leased(Lease)
        /// A slot for a new connection: open one, then hand it to ``connected(_:key:)``, or call
        /// ``connectFailed(_:)`` if it cannot be opened. One of the two must follow.
        case connect

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
    func acquire(_ key: Key, deadline: NIODeadline? = nil) async throws -> Acquired {
        while true {
            enum Action {
                case use(Lease, Scheduled<Void>?)
                case connect
                case wait
            }
            var retired: (any Channel)?
            let action: Action = try self.state.withLockedValue { state in
                guard !state.isShutdown else { throw BulwarkError(.clientShutdown, host: key.host) }
                var perKey = state.keys[key, default: PerKey()]
                defer { state.keys[key] = perKey }
                if let http2 = perKey.http2 {
                    if PooledConnection.http2(http2).carriedCredentials(before: state.credentialEpoch) {
                        // Marked with a signed-out session's credentials after that sign-out ran.
                        retired = http2.channel
                        perKey.http2 = nil
                    } else if http2.channel.isActive {
                        return .use(Lease(connection: .http2(http2), isReused: true), nil)
                    } else {
                        perKey.http2 = nil
                    }
                }
                while let idle = perKey.idle.popLast() {
                    if idle.connection.channel.isActive {
                        return .use(Lease(connection: .http1(idle.connection), isReused: true), idle.timer)
                    }
                    idle.timer?.cancel()
                    perKey.open -= 1
                }
                let protocolUnknown = !perKey.knownHTTP1 && perKey.open > 0
                if !protocolUnknown && perKey.open < self.options.maximumConnectionsPerHost {
                    perKey.open += 1
                    return .connect
                }
                return .wait
            }
            retired?.close(promise: nil)
            switch action {
            case .use(let lease, let timer):
                timer?.cancel()
                return .leased(lease)
            case .connect:
                return .connect
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
                let shutdown = self.state.withLockedValue { state -> Bool in
                    if state.isShutdown { return true }
                    state.keys[key, default: PerKey()].waiters.append(
                        Waiter(id: id, continuation: continuation, deadlineTimer: timer)
                    )
                    return false
                }
                if shutdown {
                    timer?.cancel()
                    continuation.resume(throwing: BulwarkError(.clientShutdown, host: key.host))
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
            guard let index = state.keys[key]?.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.keys[key]?.waiters.remove(at: index)
        }
        waiter?.resume(throwing: error)
    }

    /// Takes a new connection opened for a ``Acquired/connect`` slot into the pool and leases it to the request
    /// that opened it. Synchronous, so that it can run in the connection's event-loop callback.
    func connected(_ connection: PooledConnection, key: Key) -> Lease {
        let channel = connection.channel
        switch connection {
        case .http1(let http1):
            // Now that the origin is known to speak HTTP/1.1, waiters may dial connections of their own.
            let waiters = self.state.withLockedValue { state -> [Waiter] in
                guard state.keys[key]?.knownHTTP1 == false else { return [] }
                state.keys[key]?.knownHTTP1 = true
                let waiters = state.keys[key]?.waiters ?? []
                state.keys[key]?.waiters = []
                return waiters
            }
            for waiter in waiters { waiter.resume(returning: nil) }
            channel.closeFuture.whenComplete { _ in self.closed(http1, key: key) }
        case .http2(let http2):
            let waiters = self.state.withLockedValue { state -> [Waiter] in
                var perKey = state.keys[key, default: PerKey()]
                perKey.open -= 1
                perKey.knownHTTP1 = false
                perKey.http2 = http2
                let waiters = perKey.waiters
                perKey.waiters = []
                state.keys[key] = perKey
                return waiters
            }
            for waiter in waiters { waiter.resume(returning: Lease(connection: .http2(http2), isReused: true)) }
            channel.closeFuture.whenComplete { _ in
                self.state.withLockedValue { state in
                    if state.keys[key]?.http2 === http2 { state.keys[key]?.http2 = nil }
                }
            }
        }
        return Lease(connection: connection, isReused: false)
    }

    /// Gives an HTTP/1.1 connection back after its exchange: kept when `reusable`, otherwise closed.
    func release(_ connection: HTTP1Connection, key: Key, reusable: Bool) {
        enum Next {
            case handOff(Waiter)
            case keptIdle(generation: Int)
            case close(wake: Waiter?)
        }
        let next: Next = self.state.withLockedValue { state in
            var perKey = state.keys[key, default: PerKey()]
            defer { state.keys[key] = perKey }
            let retired = PooledConnection.http1(connection).carriedCredentials(before: state.credentialEpoch)
            guard reusable, !state.isShutdown, !retired, connection.channel.isActive else {
                perKey.open -= 1
                return .close(wake: perKey.waiters.isEmpty ? nil : perKey.waiters.removeFirst())
            }
            if !perKey.waiters.isEmpty {
                return .handOff(perKey.waiters.removeFirst())
            }
            state.generation += 1
            perKey.idle.append(Idle(connection: connection, generation: state.generation))
            return .keptIdle(generation: state.generation)
        }
        switch next {
        case .handOff(let waiter):
            waiter.resume(returning: Lease(connection: .http1(connection), isReused: true))
        case .keptIdle(let generation):
            let timer = connection.channel.eventLoop.scheduleTask(in: self.options.idleTimeout) {
                self.closeIfStillIdle(connection, key: key, generation: generation)
            }
            let stillIdle = self.state.withLockedValue { state -> Bool in
                guard let index = state.keys[key]?.idle.firstIndex(where: { $0.generation == generation }) else {
                    return false
                }
                state.keys[key]?.idle[index].timer = timer
                return true
            }
            if !stillIdle { timer.cancel() }
        case .close(let wake):
            connection.channel.close(promise: nil)
            wake?.resume(returning: nil)
        }
    }

    private func closeIfStillIdle(_ connection: HTTP1Connection, key: Key, generation: Int) {
        let expired = self.state.withLockedValue { state -> Bool in
            guard let index = state.keys[key]?.idle.firstIndex(where: { $0.generation == generation }) else {
                return false
            }
            state.keys[key]?.idle.remove(at: index)
            state.keys[key]?.open -= 1
            return true
        }
        if expired { connection.channel.close(promise: nil) }
    }

    /// The server (or anything else) closed an HTTP/1.1 connection: forget it if it was idle.
    private func closed(_ connection: HTTP1Connection, key: Key) {
        let wake = self.state.withLockedValue { state -> Waiter? in
            guard let index = state.keys[key]?.idle.firstIndex(where: { $0.connection === connection }) else {
                return nil
            }
            state.keys[key]?.idle.remove(at: index).timer?.cancel()
            state.keys[key]?.open -= 1
            return state.keys[key]?.waiters.isEmpty == false ? state.keys[key]?.waiters.removeFirst() : nil
        }
        wake?.resume(returning: nil)
    }

    /// Gives back a ``Acquired/connect`` slot whose connection could not be opened, and wakes one waiter.
    func connectFailed(_ key: Key) {
        let wake = self.state.withLockedValue { state -> Waiter? in
            state.keys[key]?.open -= 1
            return state.keys[key]?.waiters.isEmpty == false ? state.keys[key]?.waiters.removeFirst() : nil
        }
        wake?.resume(returning: nil)
    }

    /// The number of connections open or being opened, idle ones included.
    var openConnectionCount: Int {
        self.state.withLockedValue { state in
            state.keys.values.reduce(0) { $0 + $1.open + ($1.http2 == nil ? 0 : 1) }
        }
    }

    /// The current sign-out epoch: capture it before attaching credentials to a request, and mark the connection the
    /// request goes over with it (``PooledConnection/markCarriedCredentials(epoch:)``).
    var credentialEpoch: Int {
        self.state.withLockedValue { $0.credentialEpoch }
    }

    /// Starts a new credential epoch and closes every connection that carried credentials of an earlier one: idle
    /// HTTP/1.1 and HTTP/2 connections now (requests still running on such an HTTP/2 connection fail), busy
    /// HTTP/1.1 connections when their exchange ends. Connections that never carried a credential stay.
    ///
    /// - Returns: The number of connections closed now.
    func signOut() async -> Int {
        let channels = self.state.withLockedValue { state -> [any Channel] in
            state.credentialEpoch += 1
            let epoch = state.credentialEpoch
            var channels: [any Channel] = []
            for (key, var perKey) in state.keys {
                let (retired, kept) = perKey.idle.reduce(into: ([Idle](), [Idle]())) { split, idle in
                    if PooledConnection.http1(idle.connection).carriedCredentials(before: epoch) {
                        split.0.append(idle)
                    } else {
                        split.1.append(idle)
                    }
                }
                for idle in retired {
                    idle.timer?.cancel()
                    channels.append(idle.connection.channel)
                }
                perKey.idle = kept
                perKey.open -= retired.count
                if let http2 = perKey.http2, PooledConnection.http2(http2).carriedCredentials(before: epoch) {
                    channels.append(http2.channel)
                    perKey.http2 = nil
                }
                state.keys[key] = perKey
            }
            return channels
        }
        for channel in channels {
            try? await channel.close()
        }
        return channels.count
    }

    /// Closes every pooled connection and fails waiting requests. Connections serving a request close when the
    /// request ends.
    func shutdown() async {
        let (channels, waiters) = self.state.withLockedValue { state -> ([any Channel], [Waiter]) in
            state.isShutdown = true
            var channels: [any Channel] = []
            var waiters: [Waiter] = []
            for (key, perKey) in state.keys {
                channels += perKey.idle.map(\.connection.channel)
                for idle in perKey.idle { idle.timer?.cancel() }
                if let http2 = perKey.http2 { channels.append(http2.channel) }
                waiters += perKey.waiters
                state.keys[key]?.idle = []
                state.keys[key]?.waiters = []
                state.keys[key]?.http2 = nil
            }
            return (channels, waiters)
        }
        for waiter in waiters { waiter.resume(throwing: BulwarkError(.clientShutdown, host: nil)) }
        for channel in channels {
            try? await channel.close()
        }
    }
}
