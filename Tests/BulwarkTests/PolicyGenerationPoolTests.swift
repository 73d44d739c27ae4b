import Testing

@testable import Bulwark

/// The pool's part in policy updates, as ``ConnectionPoolStateMachine`` decides it: a key of a replaced policy hands
/// nothing out; a request that keeps its replaced policy gets a one-off connection, never pooled.
@Suite("Connection pool state machine: replaced policies")
struct PolicyGenerationPoolTests {
    typealias FakeConnection = ConnectionPoolStateMachineTests.FakeConnection
    typealias Machine = ConnectionPoolStateMachine<String, FakeConnection, FakeConnection>

    static let old = "https://api.bulwark.test:443 generation 0"

    func isConnect(_ action: Machine.AcquireAction) -> Bool {
        if case .connect = action { return true }
        return false
    }

    func isStale(_ action: Machine.AcquireAction) -> Bool {
        if case .stale = action { return true }
        return false
    }

    @Test("a retired key gives a one-off connection when asked, which closes when released and is then forgotten")
    func oneOffConnection() {
        var machine = Machine(maximumConnectionsPerHost: 1)
        #expect(self.isConnect(machine.acquire(Self.old).action))
        _ = machine.connectedHTTP1(Self.old)
        let connection = FakeConnection("old")
        guard case .keepIdle = machine.release(connection, key: Self.old, reusable: true) else {
            Issue.record("not kept idle")
            return
        }
        let (idle, _, _) = machine.retire { $0 == Self.old }
        #expect(idle.map(\.connection.name) == ["old"])
        #expect(machine.keyCount == 0, "nothing of the retired key is left")
        // The pool says the key belongs to a replaced policy (`retired: true`), as ConnectionPool does.
        #expect(self.isStale(machine.acquire(Self.old, retired: true).action))
        // The request that started under the old policy: a new connection, beyond the per-host limit's reach.
        #expect(self.isConnect(machine.acquire(Self.old, evenIfRetired: true, retired: true).action))
        _ = machine.connectedHTTP1(Self.old)
        guard case .close = machine.release(FakeConnection("one-off"), key: Self.old, reusable: true) else {
            Issue.record("a one-off connection was kept")
            return
        }
        #expect(machine.keyCount == 0)
        #expect(machine.openConnectionCount == 0)
    }

    @Test("a key the machine forgot is retired again when the pool says it belongs to a replaced policy")
    func forgottenKeyStaysRetired() {
        var machine = Machine(maximumConnectionsPerHost: 2)
        #expect(self.isStale(machine.acquire(Self.old, retired: true).action))
        #expect(machine.keyCount == 0, "nothing is kept for it")
        #expect(self.isConnect(machine.acquire(Self.old, evenIfRetired: true, retired: true).action))
        #expect(machine.isRetired(Self.old))
        _ = machine.connectedHTTP2(FakeConnection("h2"), key: Self.old)
        #expect(machine.keyCount == 0, "an HTTP/2 connection of a retired key is not kept")
    }
}
