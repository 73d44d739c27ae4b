import Testing

@testable import Bulwark

/// The pool's rules, as ``ConnectionPoolStateMachine`` decides them: no sockets, no clocks, no tasks.
@Suite("Connection pool state machine")
struct ConnectionPoolStateMachineTests {
    final class FakeConnection: PoolableConnection, CustomStringConvertible {
        let name: String
        var isOpen = true
        /// The earliest sign-out epoch of the credentials that went over it.
        var credentialEpoch: Int?

        init(_ name: String) { self.name = name }

        func carriedCredentials(before epoch: Int) -> Bool { self.credentialEpoch.map { $0 < epoch } ?? false }

        var description: String { self.name }
    }

    typealias Machine = ConnectionPoolStateMachine<String, FakeConnection, FakeConnection>

    static let key = "https://api.bulwark.test:443"

    /// Whether `action` is `.connect`.
    func isConnect(_ action: Machine.AcquireAction) -> Bool {
        if case .connect = action { return true }
        return false
    }

    func isWait(_ action: Machine.AcquireAction) -> Bool {
        if case .wait = action { return true }
        return false
    }

    /// The HTTP/1.1 connection leased by `action`, if any, and whether it is a reused one.
    func leasedHTTP1(_ action: Machine.AcquireAction) -> (FakeConnection, Bool)? {
        if case .lease(.http1(let connection), let reused, _) = action { return (connection, reused) }
        return nil
    }

    func leasedHTTP2(_ action: Machine.AcquireAction) -> FakeConnection? {
        if case .lease(.http2(let connection), _, _) = action { return connection }
        return nil
    }

    /// Opens one HTTP/1.1 connection through a connect slot and returns it.
    func openHTTP1(_ machine: inout Machine, _ name: String) -> FakeConnection {
        let step1 = machine.acquire(Self.key)
        #expect(self.isConnect(step1.action))
        _ = machine.connectedHTTP1(Self.key)
        return FakeConnection(name)
    }

    @Test func aSecondRequestWaitsUntilTheFirstConnectionShowsTheProtocol() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        let step2 = machine.acquire(Self.key)
        #expect(self.isConnect(step2.action))
        // The origin may speak HTTP/2: the second request does not dial a connection of its own yet.
        let step3 = machine.acquire(Self.key)
        #expect(self.isWait(step3.action))
        let step4 = machine.enqueueWaiter(1, key: Self.key)
        #expect(step4 == .enqueued)
        // HTTP/1.1 it is: the waiter is woken to try again, and now may dial.
        let step5 = machine.connectedHTTP1(Self.key)
        #expect(step5 == [1])
        let step6 = machine.acquire(Self.key)
        #expect(self.isConnect(step6.action))
        #expect(machine.openConnectionCount == 2)
    }

    @Test func http2CarriesEveryRequestAndItsWaitersGetIt() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        let step7 = machine.acquire(Self.key)
        #expect(self.isConnect(step7.action))
        let step8 = machine.acquire(Self.key)
        #expect(self.isWait(step8.action))
        let step9 = machine.enqueueWaiter(7, key: Self.key)
        #expect(step9 == .enqueued)
        let h2 = FakeConnection("h2")
        let step10 = machine.connectedHTTP2(h2, key: Self.key)
        #expect(step10.waiters == [7] && step10.replaced == nil)
        let step11 = machine.acquire(Self.key)
        #expect(self.leasedHTTP2(step11.action) === h2)
        #expect(machine.openConnectionCount == 1)
        // Closed by the server: the next request opens a new one.
        h2.isOpen = false
        let step12 = machine.acquire(Self.key)
        #expect(self.isConnect(step12.action))
        machine.closedHTTP2(h2, key: Self.key)
        #expect(machine.openConnectionCount == 1)
    }

    @Test func thePerHostLimitHoldsAndWaitersAreServedInOrder() {
        var machine = Machine(maximumConnectionsPerHost: 2)
        let first = self.openHTTP1(&machine, "first")
        _ = self.openHTTP1(&machine, "second")
        let step13 = machine.acquire(Self.key)
        #expect(self.isWait(step13.action))
        let step14 = machine.enqueueWaiter(1, key: Self.key)
        #expect(step14 == .enqueued)
        let step15 = machine.acquire(Self.key)
        #expect(self.isWait(step15.action))
        let step16 = machine.enqueueWaiter(2, key: Self.key)
        #expect(step16 == .enqueued)
        #expect(machine.openConnectionCount == 2)
        guard case .handOff(let handed) = machine.release(first, key: Self.key, reusable: true) else {
            Issue.record("expected a hand-off")
            return
        }
        #expect(handed == 1)
        // A connection that cannot be reused is closed, and its slot goes to the next waiter.
        guard case .close(let woken) = machine.release(first, key: Self.key, reusable: false) else {
            Issue.record("expected a close")
            return
        }
        #expect(woken == 2)
        #expect(machine.openConnectionCount == 1)
    }

    @Test func idleConnectionsAreReusedAndClosedByTheirOwnTimerOnly() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        let connection = self.openHTTP1(&machine, "c")
        let step16 = machine.release(connection, key: Self.key, reusable: true, now: 1_000)
        guard case .keepIdle(let generation) = step16 else {
            Issue.record("expected the connection to be kept idle")
            return
        }
        #expect(machine.isIdle(Self.key, generation: generation))
        let acquired = machine.acquire(Self.key)
        let leased = self.leasedHTTP1(acquired.action)
        #expect(leased?.0 === connection)
        #expect(leased?.1 == true)
        guard case .lease(_, _, let idleGeneration) = acquired.action else { return }
        #expect(idleGeneration == generation)
        // The timer fires while the connection is in use: nothing is closed, the timer lapses.
        let step17 = machine.idleTimerFired(connection, key: Self.key, now: 1_500, timeout: 1_000)
        #expect(step17 == .notIdle)
        guard case .keepIdle(let second) = machine.release(connection, key: Self.key, reusable: true, now: 1_800)
        else { return }
        #expect(second != generation)
        // A timer set for the first idle period fires: the connection is idle, but only since 1,800.
        let step18 = machine.idleTimerFired(connection, key: Self.key, now: 2_000, timeout: 1_000)
        #expect(step18 == .checkAgain(at: 2_800))
        #expect(machine.idleConnections(Self.key).first === connection)
        let step19 = machine.idleTimerFired(connection, key: Self.key, now: 2_800, timeout: 1_000)
        #expect(step19 == .close)
        #expect(machine.idleConnections(Self.key).isEmpty)
        #expect(machine.openConnectionCount == 0)
        // Closed once: a late timer finds nothing.
        let step20 = machine.idleTimerFired(connection, key: Self.key, now: 5_000, timeout: 1_000)
        #expect(step20 == .notIdle)
    }

    @Test func anIdleConnectionIsClosedOnlyAfterTheWholeTimeoutSinceItsLastRelease() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        let first = self.openHTTP1(&machine, "first")
        let second = self.openHTTP1(&machine, "second")
        _ = machine.release(first, key: Self.key, reusable: true, now: 0)
        _ = machine.release(second, key: Self.key, reusable: true, now: 400)
        // One timer each: the first connection's closes it, the second's is told to wait for its own expiry.
        let step21 = machine.idleTimerFired(first, key: Self.key, now: 1_000, timeout: 1_000)
        #expect(step21 == .close)
        let step22 = machine.idleTimerFired(second, key: Self.key, now: 1_000, timeout: 1_000)
        #expect(step22 == .checkAgain(at: 1_400))
        #expect(machine.idleConnections(Self.key).map(\.name) == ["second"])
        #expect(machine.openConnectionCount == 1)
        // A timeout that never ends closes nothing.
        let step23 = machine.idleTimerFired(second, key: Self.key, now: 5_000, timeout: .max)
        #expect(step23 == .notIdle)
        #expect(machine.openConnectionCount == 1)
    }

    @Test func anIdleConnectionTheServerClosedIsSkippedAndItsSlotFreed() {
        var machine = Machine(maximumConnectionsPerHost: 1)
        let connection = self.openHTTP1(&machine, "c")
        _ = machine.release(connection, key: Self.key, reusable: true)
        connection.isOpen = false
        let acquired = machine.acquire(Self.key)
        #expect(acquired.closedIdle.map(\.connection).elementsEqual([connection], by: ===))
        #expect(self.isConnect(acquired.action))
        // Its close notification comes later: nothing is counted twice.
        let step19 = machine.closedHTTP1(connection, key: Self.key)
        #expect(step19.idleGeneration == nil)
        #expect(machine.openConnectionCount == 1)
    }

    @Test func theServerClosingAnIdleConnectionWakesAWaiter() {
        var machine = Machine(maximumConnectionsPerHost: 1)
        let connection = self.openHTTP1(&machine, "c")
        _ = machine.release(connection, key: Self.key, reusable: true)
        let step20 = machine.enqueueWaiter(3, key: Self.key)
        #expect(step20 == .enqueued)
        let (generation, wake) = machine.closedHTTP1(connection, key: Self.key)
        #expect(generation != nil)
        #expect(wake == 3)
        #expect(machine.openConnectionCount == 0)
    }

    @Test func aFailedConnectFreesItsSlotAndWakesAWaiter() {
        var machine = Machine(maximumConnectionsPerHost: 1)
        let step21 = machine.acquire(Self.key)
        #expect(self.isConnect(step21.action))
        let step22 = machine.enqueueWaiter(5, key: Self.key)
        #expect(step22 == .enqueued)
        let step23 = machine.connectFailed(Self.key)
        #expect(step23 == 5)
        #expect(machine.openConnectionCount == 0)
        let step24 = machine.acquire(Self.key)
        #expect(self.isConnect(step24.action))
    }

    @Test func aWaiterThatLeftIsNotWokenAndCannotLeaveTwice() {
        var machine = Machine(maximumConnectionsPerHost: 1)
        let step25 = machine.acquire(Self.key)
        #expect(self.isConnect(step25.action))
        let step26 = machine.enqueueWaiter(1, key: Self.key)
        #expect(step26 == .enqueued)
        let step27 = machine.enqueueWaiter(2, key: Self.key)
        #expect(step27 == .enqueued)
        let step28 = machine.removeWaiter(1, key: Self.key)
        #expect(step28)
        let step29 = machine.removeWaiter(1, key: Self.key)
        #expect(!step29)
        let step30 = machine.connectFailed(Self.key)
        #expect(step30 == 2)
        // Woken waiters are no longer in line: a late deadline finds nothing to remove.
        let step31 = machine.removeWaiter(2, key: Self.key)
        #expect(!step31)
    }

    /// Found by the attack review (helper-27): an HTTP/2 connection the pool no longer hands out (the server's GOAWAY)
    /// may carry streams until it closes. Sign-out and shutdown must still close it, and it still counts as open until
    /// its close is reported. Before, the pool forgot it when a request found it draining.
    @Test func aDrainingHTTP2ConnectionIsStillClosedBySignOutAndShutdown() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        _ = machine.acquire(Self.key)
        let credentialed = FakeConnection("credentialed")
        credentialed.credentialEpoch = 0
        _ = machine.connectedHTTP2(credentialed, key: Self.key)
        credentialed.isOpen = false
        #expect(self.isConnect(machine.acquire(Self.key).action))
        let plain = FakeConnection("plain")
        _ = machine.connectedHTTP2(plain, key: Self.key)
        #expect(machine.openConnectionCount == 2)
        let (_, signedOut) = machine.signOut()
        #expect(signedOut.elementsEqual([credentialed], by: ===))
        #expect(machine.openConnectionCount == 1)
        plain.isOpen = false
        #expect(self.isConnect(machine.acquire(Self.key).action))
        #expect(machine.openConnectionCount == 2, "the draining connection and the slot")
        let other = FakeConnection("other")
        _ = machine.connectedHTTP2(other, key: Self.key)
        let (_, closed, _) = machine.shutdown()
        #expect(Set(closed.map(ObjectIdentifier.init)) == [ObjectIdentifier(plain), ObjectIdentifier(other)])
        machine.closedHTTP2(plain, key: Self.key)
        machine.closedHTTP2(other, key: Self.key)
        #expect(machine.openConnectionCount == 0)
    }

    /// Found by the attack review (helper-28): two connections dialled side by side (the origin had spoken HTTP/1.1)
    /// may both speak HTTP/2. The newer carries the key's requests; the older was forgotten, open, out of sign-out's
    /// and shutdown's reach. Now it is handed back to drain, and stays within their reach until it closes.
    @Test func anHTTP2ConnectionReplacedByAnotherDrains() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        let http1 = self.openHTTP1(&machine, "h1")
        #expect(self.isConnect(machine.acquire(Self.key).action))
        #expect(self.isConnect(machine.acquire(Self.key).action))
        let older = FakeConnection("older")
        older.credentialEpoch = 0
        let newer = FakeConnection("newer")
        #expect(machine.connectedHTTP2(older, key: Self.key).replaced == nil)
        #expect(machine.connectedHTTP2(newer, key: Self.key).replaced === older)
        #expect(self.leasedHTTP2(machine.acquire(Self.key).action) === newer)
        #expect(machine.openConnectionCount == 3, "the HTTP/1.1 connection, the newer and the draining older")
        #expect(machine.signOut().http2.elementsEqual([older], by: ===))
        _ = machine.release(http1, key: Self.key, reusable: false)
        #expect(machine.openConnectionCount == 1)
    }

    /// A draining connection's close is reported: it no longer counts.
    @Test func aDrainingHTTP2ConnectionIsForgottenWhenItCloses() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        _ = machine.acquire(Self.key)
        let h2 = FakeConnection("h2")
        _ = machine.connectedHTTP2(h2, key: Self.key)
        h2.isOpen = false
        #expect(self.isConnect(machine.acquire(Self.key).action))
        #expect(machine.openConnectionCount == 2)
        machine.closedHTTP2(h2, key: Self.key)
        #expect(machine.openConnectionCount == 1)
        #expect(machine.signOut().http2.isEmpty)
    }

    @Test func signOutClosesCredentialedIdleAndHTTP2ConnectionsOnly() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        let credentialed = self.openHTTP1(&machine, "credentialed")
        let plain = self.openHTTP1(&machine, "plain")
        credentialed.credentialEpoch = 0
        _ = machine.release(credentialed, key: Self.key, reusable: true)
        _ = machine.release(plain, key: Self.key, reusable: true)
        let otherKey = "https://cdn.bulwark.test:443"
        let step32 = machine.acquire(otherKey)
        #expect(self.isConnect(step32.action))
        let h2 = FakeConnection("h2")
        h2.credentialEpoch = 0
        _ = machine.connectedHTTP2(h2, key: otherKey)
        let (idle, http2) = machine.signOut()
        #expect(idle.map(\.connection).elementsEqual([credentialed], by: ===))
        #expect(http2.elementsEqual([h2], by: ===))
        #expect(machine.idleConnections(Self.key).elementsEqual([plain], by: ===))
        #expect(machine.credentialEpoch == 1)
        #expect(machine.openConnectionCount == 1)
    }

    @Test func aConnectionMarkedAfterSignOutIsNeverHandedOutAgain() {
        var machine = Machine(maximumConnectionsPerHost: 4)
        // HTTP/1.1: leased before the sign-out, marked with the old epoch after it, released afterwards.
        let connection = self.openHTTP1(&machine, "c")
        _ = machine.signOut()
        connection.credentialEpoch = 0
        guard case .close = machine.release(connection, key: Self.key, reusable: true) else {
            Issue.record("a connection that carried a signed-out session's credentials must be closed")
            return
        }
        // HTTP/2: retired by the next acquire.
        let otherKey = "https://cdn.bulwark.test:443"
        let step33 = machine.acquire(otherKey)
        #expect(self.isConnect(step33.action))
        let h2 = FakeConnection("h2")
        _ = machine.connectedHTTP2(h2, key: otherKey)
        _ = machine.signOut()
        h2.credentialEpoch = 1
        let acquired = machine.acquire(otherKey)
        #expect(acquired.retiredHTTP2 === h2)
        #expect(self.isConnect(acquired.action))
    }

    @Test func afterShutdownNothingIsHandedOutAndNothingWaits() {
        var machine = Machine(maximumConnectionsPerHost: 1)
        let connection = self.openHTTP1(&machine, "c")
        let step34 = machine.enqueueWaiter(9, key: Self.key)
        #expect(step34 == .enqueued)
        let (idle, http2, waiters) = machine.shutdown()
        #expect(idle.isEmpty)
        #expect(http2.isEmpty)
        #expect(waiters == [9])
        guard case .failShutdown = machine.acquire(Self.key).action else {
            Issue.record("expected shutdown")
            return
        }
        let step35 = machine.enqueueWaiter(10, key: Self.key)
        #expect(step35 == .failShutdown)
        // The busy connection is closed when it comes back, never kept.
        guard case .close = machine.release(connection, key: Self.key, reusable: true) else {
            Issue.record("expected a close after shutdown")
            return
        }
    }

    // MARK: Retiring keys (a client identity replaced)

    func isStale(_ action: Machine.AcquireAction) -> Bool {
        if case .stale = action { return true }
        return false
    }

    @Test func retiringAKeyClosesItsIdleConnectionsAndTellsItsRequestsToChooseAgain() {
        var machine = Machine(maximumConnectionsPerHost: 2)
        let idle = self.openHTTP1(&machine, "idle")
        let step40 = machine.release(idle, key: Self.key, reusable: true)
        guard case .keepIdle(let generation) = step40 else {
            Issue.record("expected the connection kept idle, got \(step40)")
            return
        }
        let other = "https://other.bulwark.test:443"
        #expect(self.isConnect(machine.acquire(other).action))
        _ = machine.connectedHTTP1(other)
        let (closed, http2, waiters) = machine.retire { $0 == Self.key }
        #expect(closed.count == 1 && closed.first?.connection === idle)
        #expect(closed.map(\.generation) == [generation])
        #expect(http2.isEmpty)
        #expect(waiters.isEmpty)
        // Nothing of the key is left, so it is forgotten: a request that still asks for it (it chose its key before
        // the update) may dial, which the executor checks against the current identity.
        #expect(machine.keyCount == 1)
        #expect(machine.openConnectionCount == 1)
    }

    @Test func aBusyConnectionOfARetiredKeyClosesWhenReleasedAndItsWaitersAreWoken() {
        var machine = Machine(maximumConnectionsPerHost: 1)
        let busy = self.openHTTP1(&machine, "busy")
        #expect(self.isWait(machine.acquire(Self.key).action))
        let step41 = machine.enqueueWaiter(1, key: Self.key)
        #expect(step41 == .enqueued)
        let (closed, _, waiters) = machine.retire { $0 == Self.key }
        #expect(closed.isEmpty)
        #expect(waiters == [1])
        #expect(machine.isRetired(Self.key))
        // While the busy connection lives, the key stays retired: requests are told to choose again, and a request
        // told to wait before the retirement does not stay in line.
        #expect(self.isStale(machine.acquire(Self.key).action))
        let step42 = machine.enqueueWaiter(2, key: Self.key)
        #expect(step42 == .retry)
        guard case .close(let wake) = machine.release(busy, key: Self.key, reusable: true) else {
            Issue.record("expected the busy connection of a retired key to close")
            return
        }
        #expect(wake == nil)
        #expect(machine.keyCount == 0)
        #expect(machine.openConnectionCount == 0)
    }

    @Test func anHTTP2ConnectionOfARetiredKeyIsHandedToBeDrainedAndOneOpenedLateIsNotKept() {
        var machine = Machine(maximumConnectionsPerHost: 2)
        #expect(self.isConnect(machine.acquire(Self.key).action))
        let h2 = FakeConnection("h2")
        _ = machine.connectedHTTP2(h2, key: Self.key)
        #expect(self.leasedHTTP2(machine.acquire(Self.key).action) === h2)
        let (_, drained, _) = machine.retire { $0 == Self.key }
        #expect(drained.count == 1 && drained.first === h2)
        #expect(machine.keyCount == 0)
        // A connection dialled before the retirement and opened after it serves its own request only.
        let late = "https://late.bulwark.test:443"
        #expect(self.isConnect(machine.acquire(late).action))
        _ = machine.retire { $0 == late }
        #expect(machine.isRetired(late))
        let lateConnection = FakeConnection("late")
        _ = machine.connectedHTTP2(lateConnection, key: late)
        #expect(machine.keyCount == 0)
        // Both drain: open until their close is reported.
        #expect(machine.openConnectionCount == 2)
        machine.closedHTTP2(h2, key: Self.key)
        machine.closedHTTP2(lateConnection, key: late)
        #expect(machine.openConnectionCount == 0)
    }

    @Test func aKeySelectedAgainIsNoLongerRetired() {
        var machine = Machine(maximumConnectionsPerHost: 2)
        let busy = self.openHTTP1(&machine, "busy")
        _ = machine.retire { $0 == Self.key }
        #expect(self.isStale(machine.acquire(Self.key).action))
        // The identity is selected again (rotated back): the key serves again, and its busy connection is kept.
        _ = machine.retire { _ in false }
        #expect(!machine.isRetired(Self.key))
        guard case .keepIdle = machine.release(busy, key: Self.key, reusable: true) else {
            Issue.record("expected the connection of a key selected again to be kept")
            return
        }
        #expect(self.leasedHTTP1(machine.acquire(Self.key).action)?.0 === busy)
    }
}
