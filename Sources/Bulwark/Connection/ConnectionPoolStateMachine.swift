/// What the pool asks of a connection it holds: who it is, whether it is still open, and whether credentials of a
/// signed-out session went over it. ``HTTP1Connection`` and ``HTTP2Connection`` conform; tests use plain objects.
protocol PoolableConnection: AnyObject {
    /// Whether the connection is still open and takes new requests (a server may close an idle connection at any
    /// moment; an HTTP/2 connection that drains, after the server's GOAWAY, takes none).
    var isOpen: Bool { get }
    /// Whether credentials of a session that ended before `epoch` went over this connection.
    func carriedCredentials(before epoch: Int) -> Bool
}

/// The connection pool's decisions as a value: which connection a request gets, when a new one is opened, who waits,
/// what is kept idle and what is closed. It does no I/O, holds no lock, starts no timer and resumes no task: each
/// event returns an action, and ``ConnectionPool`` carries it out (closing channels, scheduling idle and deadline
/// timers, resuming waiting requests). So every rule of the pool is tested without sockets or clocks.
///
/// The rules:
/// - HTTP/1.1: at most `maximumConnectionsPerHost` connections per key, open or being opened; an idle one is reused
///   (most recently returned first); further requests wait, first come first served.
/// - Until an origin is known to speak HTTP/1.1, a second request waits for the first connection instead of dialling
///   more connections that may all turn out to be HTTP/2.
/// - HTTP/2: one connection per key carries every request. One found not open (it drains after the server's GOAWAY)
///   or replaced by a newer one is handed out no more; sign-out and shutdown still close it until its close is
///   reported.
/// - Sign-out starts a new credential epoch; connections that carried credentials of an earlier one are never
///   handed out again.
/// - A retired key (its client identity was replaced) hands nothing out: its idle connections close at once, busy
///   HTTP/1.1 ones when released, its HTTP/2 connection drains; a request asking for it is told to choose its key
///   again. Once nothing of it is left, the key is forgotten (so that nothing keeps the old identity's key alive).
/// - After shutdown nothing is handed out and nothing waits.
struct ConnectionPoolStateMachine<Key: Hashable, HTTP1: PoolableConnection, HTTP2: PoolableConnection> {
    /// A connection handed to a request.
    enum Leased {
        case http1(HTTP1)
        case http2(HTTP2)
    }

    /// An idle HTTP/1.1 connection; `generation` names this idle period, `since` is when it began (in the pool's
    /// clock, nanoseconds).
    struct Idle {
        var connection: HTTP1
        var generation: Int
        var since: UInt64 = 0
    }

    fileprivate struct PerKey {
        var idle: [Idle] = []
        /// HTTP/1.1 connections open or being opened, idle ones included.
        var open = 0
        var knownHTTP1 = false
        var http2: HTTP2?
        /// Waiting requests, by id, in arrival order.
        var waiters: [Int] = []
        /// Nothing is handed out for this key any more (see ``retire(_:)``).
        var retired = false

        /// A retired key with nothing open, idle or waiting: nothing needs it any more.
        var isForgettable: Bool {
            self.retired && self.open <= 0 && self.idle.isEmpty && self.http2 == nil && self.waiters.isEmpty
        }
    }

    fileprivate var keys: [Key: PerKey] = [:]
    /// HTTP/2 connections no longer handed out that may still carry streams until they close: drained (their key
    /// retired) or found not open by ``acquire(_:evenIfRetired:retired:)`` (the server's GOAWAY, or a close not yet
    /// reported by ``closedHTTP2(_:key:)``). Sign-out and shutdown still close them.
    private var drainingHTTP2: [HTTP2] = []
    private var generation = 0
    private(set) var isShutdown = false
    /// Incremented by each sign-out.
    private(set) var credentialEpoch = 0
    let maximumConnectionsPerHost: Int

    init(maximumConnectionsPerHost: Int) {
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
    }

    // MARK: Acquiring

    /// What a request asking for a connection gets.
    enum AcquireAction {
        /// Use this connection now; `reused` is true for a connection that served a request before, and
        /// `idleGeneration` names the idle timer to cancel, if it came from the idle list.
        case lease(Leased, reused: Bool, idleGeneration: Int?)
        /// Open a new connection (a slot is taken): then ``connectedHTTP1(_:)``, ``connectedHTTP2(_:key:)`` or
        /// ``connectFailed(_:)``.
        case connect
        /// Wait: call ``enqueueWaiter(_:key:)``.
        case wait
        /// The pool is shut down.
        case failShutdown
        /// The key is retired (its client identity was replaced): choose the key again.
        case stale
    }

    /// The decision for a request to `key`, and what to close on the way: idle connections the server closed
    /// (their idle timers to cancel) and an HTTP/2 connection retired by a sign-out.
    struct Acquired {
        var action: AcquireAction
        var closedIdle: [Idle] = []
        var retiredHTTP2: HTTP2?
        /// The key's HTTP/2 connection, found draining or closed: it joins the draining ones.
        fileprivate var notOpenHTTP2: HTTP2?
    }

    /// Decides what a request for `key` gets.
    ///
    /// With `evenIfRetired`, a retired key gives a slot for a one-off connection (it closes after its exchange, as
    /// every connection of a retired key does) instead of ``AcquireAction/stale``.
    /// `retired` says the key is retired even if the machine does not know it yet (a key of a replaced policy asked
    /// for after it was forgotten).
    mutating func acquire(_ key: Key, evenIfRetired: Bool = false, retired: Bool = false) -> Acquired {
        guard !self.isShutdown else { return Acquired(action: .failShutdown) }
        if retired || self.keys[key]?.retired == true {
            if retired { self.keys[key, default: PerKey()].retired = true }
            guard evenIfRetired else {
                self.forgetIfDone(key)
                return Acquired(action: .stale)
            }
            self.keys[key]?.open += 1
            return Acquired(action: .connect)
        }
        let epoch = self.credentialEpoch
        let maximum = self.maximumConnectionsPerHost
        // In place (one look-up, and the key's arrays are not copied, as they would be in a copy of its entry).
        let acquired = Self.acquire(
            &self.keys[key, default: PerKey()],
            credentialEpoch: epoch,
            maximumConnections: maximum
        )
        if let notOpen = acquired.notOpenHTTP2 { self.drainingHTTP2.append(notOpen) }
        return acquired
    }

    /// ``acquire(_:evenIfRetired:retired:)`` for a key that is not retired, on its entry.
    private static func acquire(
        _ perKey: inout PerKey,
        credentialEpoch: Int,
        maximumConnections: Int
    ) -> Acquired {
        var result = Acquired(action: .wait)
        if let http2 = perKey.http2 {
            if http2.carriedCredentials(before: credentialEpoch) {
                // Marked with a signed-out session's credentials after that sign-out ran.
                result.retiredHTTP2 = http2
                perKey.http2 = nil
            } else if http2.isOpen {
                result.action = .lease(.http2(http2), reused: true, idleGeneration: nil)
                return result
            } else {
                // Draining (the server's GOAWAY) or closed: its streams may still run until it closes.
                result.notOpenHTTP2 = http2
                perKey.http2 = nil
            }
        }
        while let idle = perKey.idle.popLast() {
            if idle.connection.isOpen {
                result.action = .lease(.http1(idle.connection), reused: true, idleGeneration: idle.generation)
                return result
            }
            result.closedIdle.append(idle)
            perKey.open -= 1
        }
        let protocolUnknown = !perKey.knownHTTP1 && perKey.open > 0
        if !protocolUnknown && perKey.open < maximumConnections {
            perKey.open += 1
            result.action = .connect
        }
        return result
    }

    /// What becomes of a request that was told to wait.
    enum EnqueueAction: Equatable {
        /// It waits in line.
        case enqueued
        /// The pool is shut down: fail it.
        case failShutdown
        /// The key was retired since it was told to wait: it asks again (and is told to choose its key again).
        case retry
    }

    /// Puts waiter `id` in line for `key`.
    mutating func enqueueWaiter(_ id: Int, key: Key) -> EnqueueAction {
        guard !self.isShutdown else { return .failShutdown }
        guard self.keys[key]?.retired != true else { return .retry }
        self.keys[key, default: PerKey()].waiters.append(id)
        return .enqueued
    }

    /// Takes waiter `id` out of line (its deadline passed, or its task was cancelled); false when it is no longer
    /// waiting (it was resumed already).
    mutating func removeWaiter(_ id: Int, key: Key) -> Bool {
        guard let index = self.keys[key]?.waiters.firstIndex(of: id) else { return false }
        self.keys[key]?.waiters.remove(at: index)
        return true
    }

    // MARK: New connections

    /// A new HTTP/1.1 connection for a ``AcquireAction/connect`` slot is open: it is leased to the request that
    /// opened it. The waiters to wake (they try again: the origin is now known to speak HTTP/1.1, so they may dial
    /// connections of their own).
    mutating func connectedHTTP1(_ key: Key) -> [Int] {
        guard self.keys[key]?.knownHTTP1 == false else { return [] }
        self.keys[key]?.knownHTTP1 = true
        let waiters = self.keys[key]?.waiters ?? []
        self.keys[key]?.waiters = []
        return waiters
    }

    /// A new connection for a ``AcquireAction/connect`` slot spoke HTTP/2: it serves every request to `key` from
    /// now on. The waiters to hand it to, and the key's earlier HTTP/2 connection it replaces, to drain.
    /// A connection of a retired key is not kept: it serves the request that opened it and then drains (see
    /// ``isRetired(_:)``).
    mutating func connectedHTTP2(_ connection: HTTP2, key: Key) -> (waiters: [Int], replaced: HTTP2?) {
        var perKey = self.keys[key, default: PerKey()]
        perKey.open -= 1
        perKey.knownHTTP1 = false
        // Two connections dialled side by side (the origin had spoken HTTP/1.1) may both speak HTTP/2: the newer one
        // carries the key's requests, and the older one drains (helper-28: it was forgotten, open, out of sign-out's
        // and shutdown's reach).
        var replaced: HTTP2?
        if let old = perKey.http2, old !== connection {
            replaced = old
            self.drainingHTTP2.append(old)
        }
        perKey.http2 = perKey.retired ? nil : connection
        if perKey.retired { self.drainingHTTP2.append(connection) }
        let waiters = perKey.waiters
        perKey.waiters = []
        self.keys[key] = perKey
        self.forgetIfDone(key)
        return (waiters, replaced)
    }

    /// A ``AcquireAction/connect`` slot's connection could not be opened: the slot is free again. The waiter to
    /// wake, if any.
    mutating func connectFailed(_ key: Key) -> Int? {
        self.keys[key]?.open -= 1
        defer { self.forgetIfDone(key) }
        return self.popWaiter(key)
    }

    // MARK: Returning and closing

    /// What happens to an HTTP/1.1 connection given back after its exchange.
    enum ReleaseAction {
        /// Hand it to this waiter.
        case handOff(waiter: Int)
        /// Keep it idle; schedule its idle timer for this generation.
        case keepIdle(generation: Int)
        /// Close it, and wake this waiter (a slot is free).
        case close(wake: Int?)
    }

    ///
    /// - Parameter now: The time, in the clock ``idleTimerFired(_:key:now:timeout:)`` is given.
    mutating func release(_ connection: HTTP1, key: Key, reusable: Bool, now: UInt64 = 0) -> ReleaseAction {
        let epoch = self.credentialEpoch
        let isShutdown = self.isShutdown
        // In place, as in `acquire`.
        let (action, forgettable) = Self.release(
            connection,
            from: &self.keys[key, default: PerKey()],
            reusable: reusable && !isShutdown,
            credentialEpoch: epoch,
            generation: &self.generation,
            now: now
        )
        if forgettable { self.keys[key] = nil }
        return action
    }

    /// ``release(_:key:reusable:)`` on the key's entry; also whether the entry can be forgotten now.
    private static func release(
        _ connection: HTTP1,
        from perKey: inout PerKey,
        reusable: Bool,
        credentialEpoch: Int,
        generation: inout Int,
        now: UInt64
    ) -> (ReleaseAction, Bool) {
        let retired = perKey.retired || connection.carriedCredentials(before: credentialEpoch)
        guard reusable, !retired, connection.isOpen else {
            perKey.open -= 1
            let wake = perKey.waiters.isEmpty ? nil : perKey.waiters.removeFirst()
            return (.close(wake: wake), perKey.isForgettable)
        }
        if !perKey.waiters.isEmpty {
            return (.handOff(waiter: perKey.waiters.removeFirst()), perKey.isForgettable)
        }
        generation += 1
        perKey.idle.append(Idle(connection: connection, generation: generation, since: now))
        return (.keepIdle(generation: generation), perKey.isForgettable)
    }

    /// What the idle timer of a connection leads to.
    enum IdleCheck: Equatable {
        /// The connection was idle for the whole timeout: it is forgotten; close it.
        case close
        /// The connection is idle, but has not been for the whole timeout: check again at this time.
        case checkAgain(at: UInt64)
        /// The connection is not idle (in use, or gone): its timer lapses; it gets one when it is next kept idle.
        case notIdle
    }

    /// The idle timer of `connection` fired at `now`. A connection keeps one timer while it goes back and forth
    /// between requests (none is set or cancelled per request): when it fires, the connection closes if it has been
    /// idle for `timeout` since it was last released, and is checked again when that time comes otherwise.
    mutating func idleTimerFired(_ connection: HTTP1, key: Key, now: UInt64, timeout: UInt64) -> IdleCheck {
        guard let index = self.keys[key]?.idle.firstIndex(where: { $0.connection === connection }),
            let since = self.keys[key]?.idle[index].since
        else { return .notIdle }
        let (expiry, overflow) = since.addingReportingOverflow(timeout)
        if overflow {
            // A timeout that never ends.
            return .notIdle
        }
        if now < expiry {
            return .checkAgain(at: expiry)
        }
        self.keys[key]?.idle.remove(at: index)
        self.keys[key]?.open -= 1
        self.forgetIfDone(key)
        return .close
    }

    /// Whether the connection of `generation` is still idle (its timer is still wanted).
    func isIdle(_ key: Key, generation: Int) -> Bool {
        self.keys[key]?.idle.contains { $0.generation == generation } ?? false
    }

    /// An HTTP/1.1 connection closed (the server, a timeout, anything): forgotten if it was idle. The idle
    /// generation whose timer to cancel and the waiter to wake, if any.
    mutating func closedHTTP1(_ connection: HTTP1, key: Key) -> (idleGeneration: Int?, wake: Int?) {
        guard let index = self.keys[key]?.idle.firstIndex(where: { $0.connection === connection }) else {
            return (nil, nil)
        }
        let idle = self.keys[key]?.idle.remove(at: index)
        self.keys[key]?.open -= 1
        defer { self.forgetIfDone(key) }
        return (idle?.generation, self.popWaiter(key))
    }

    /// An HTTP/2 connection closed: forgotten if it is the key's, or a draining one.
    mutating func closedHTTP2(_ connection: HTTP2, key: Key) {
        if self.keys[key]?.http2 === connection { self.keys[key]?.http2 = nil }
        self.drainingHTTP2.removeAll { $0 === connection }
    }

    // MARK: Retiring keys

    /// Retires every key `isStale` says is stale, and brings back any retired key it no longer says is (an identity
    /// selected again). For the newly retired keys, what to do now: the idle HTTP/1.1 connections to close (their
    /// timers to cancel), the HTTP/2 connections to drain (close once their last stream ends), and the waiters to
    /// wake (they ask again, and are told to choose their key again). Busy HTTP/1.1 connections close when released.
    mutating func retire(_ isStale: (Key) -> Bool) -> (idle: [Idle], http2: [HTTP2], waiters: [Int]) {
        var idle: [Idle] = []
        var http2: [HTTP2] = []
        var waiters: [Int] = []
        for (key, var perKey) in self.keys {
            let stale = isStale(key)
            defer {
                self.keys[key] = perKey
                self.forgetIfDone(key)
            }
            guard stale != perKey.retired else { continue }
            perKey.retired = stale
            guard stale else { continue }
            idle += perKey.idle
            perKey.open -= perKey.idle.count
            perKey.idle = []
            if let connection = perKey.http2 { http2.append(connection) }
            perKey.http2 = nil
            waiters += perKey.waiters
            perKey.waiters = []
        }
        self.drainingHTTP2 += http2
        return (idle, http2, waiters)
    }

    /// Whether `key` is retired.
    func isRetired(_ key: Key) -> Bool {
        self.keys[key]?.retired ?? false
    }

    /// The number of keys the machine holds (retired keys are forgotten once nothing of them is left).
    var keyCount: Int { self.keys.count }

    private mutating func forgetIfDone(_ key: Key) {
        if self.keys[key]?.isForgettable == true { self.keys[key] = nil }
    }

    // MARK: Sign-out and shutdown

    /// Starts a new credential epoch. The connections to close now: idle HTTP/1.1 ones and HTTP/2 ones that carried
    /// credentials of an earlier epoch (busy HTTP/1.1 ones are closed when released).
    mutating func signOut() -> (idle: [Idle], http2: [HTTP2]) {
        self.credentialEpoch += 1
        let epoch = self.credentialEpoch
        var idleClosed: [Idle] = []
        var http2Closed: [HTTP2] = []
        for (key, var perKey) in self.keys {
            let retired = perKey.idle.filter { $0.connection.carriedCredentials(before: epoch) }
            perKey.idle.removeAll { $0.connection.carriedCredentials(before: epoch) }
            perKey.open -= retired.count
            idleClosed += retired
            if let http2 = perKey.http2, http2.carriedCredentials(before: epoch) {
                http2Closed.append(http2)
                perKey.http2 = nil
            }
            self.keys[key] = perKey
        }
        http2Closed += self.drainingHTTP2.filter { $0.carriedCredentials(before: epoch) }
        self.drainingHTTP2.removeAll { $0.carriedCredentials(before: epoch) }
        return (idleClosed, http2Closed)
    }

    /// Shuts the pool down. What to close (idle connections, whose timers to cancel, and HTTP/2 connections) and the
    /// waiters to fail.
    mutating func shutdown() -> (idle: [Idle], http2: [HTTP2], waiters: [Int]) {
        self.isShutdown = true
        var idle: [Idle] = []
        var http2: [HTTP2] = []
        var waiters: [Int] = []
        for (key, perKey) in self.keys {
            idle += perKey.idle
            if let connection = perKey.http2 { http2.append(connection) }
            waiters += perKey.waiters
            self.keys[key]?.idle = []
            self.keys[key]?.waiters = []
            self.keys[key]?.http2 = nil
        }
        http2 += self.drainingHTTP2
        self.drainingHTTP2 = []
        return (idle, http2, waiters)
    }

    // MARK: Figures

    /// Connections open or being opened, idle ones and HTTP/2 ones (draining ones too) included.
    var openConnectionCount: Int {
        self.keys.values.reduce(self.drainingHTTP2.count) { $0 + $1.open + ($1.http2 == nil ? 0 : 1) }
    }

    /// The idle connections of `key`, oldest first.
    func idleConnections(_ key: Key) -> [HTTP1] {
        self.keys[key]?.idle.map(\.connection) ?? []
    }

    /// The waiters of `key`, in line.
    func waiters(_ key: Key) -> [Int] {
        self.keys[key]?.waiters ?? []
    }

    private mutating func popWaiter(_ key: Key) -> Int? {
        self.keys[key]?.waiters.isEmpty == false ? self.keys[key]?.waiters.removeFirst() : nil
    }
}

extension ConnectionPoolStateMachine: Sendable where Key: Sendable, HTTP1: Sendable, HTTP2: Sendable {}
extension ConnectionPoolStateMachine.Idle: Sendable where HTTP1: Sendable {}
extension ConnectionPoolStateMachine.PerKey: Sendable where HTTP1: Sendable, HTTP2: Sendable {}
