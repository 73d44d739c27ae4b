import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Bulwark

/// Issue 21, "What must be shown": a client pinned to key A, the server rotates to key B, an update bundle adding B
/// arrives from a local bundle server, and requests keep succeeding with no restart; the connection made under the
/// old policy is not reused; a malicious bundle (valid signature, older version) changes nothing; and the updater's
/// own fetching never uses a bundle's policy.
@Suite("Policy updates end to end over real TLS on loopback")
struct PolicyUpdaterEndToEndTests {
    static let protocols: [[String]] = [["h2"], ["http/1.1"]]

    /// Polls `condition` for up to five seconds (channels are released after their close completes).
    func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    func get(_ client: BulwarkClient, _ url: String) async throws -> BulwarkResponse {
        let response = try await client.execute(BulwarkRequest(url: url), timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response
    }

    func url(_ server: TestHTTPSServer) -> String {
        "https://\(PolicyUpdaterFixture.apiHost):\(server.port)/hello"
    }

    @Test("pinned to A, the server rotates to B, a bundle adds B: requests keep succeeding", arguments: Self.protocols)
    func rotation(alpn: [String]) async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let chainA = try TestChain.make(host: PolicyUpdaterFixture.apiHost)
        let chainB = try TestChain.make(host: PolicyUpdaterFixture.apiHost)
        let serverA = try await TestHTTPSServer.start(configuration: .init(chain: chainA, alpn: alpn))
        let serverB = try await TestHTTPSServer.start(configuration: .init(chain: chainB, alpn: alpn))
        let monitor = RecordingEventMonitor()
        // The application's client: pinned to A, and resolving the bundle host too (to show it does not trust it).
        var configuration = try PolicyUpdaterFixture.client(
            pinning: [chainA],
            ports: [serverA.port, serverB.port],
            monitor: monitor
        ).configuration
        configuration.resolveOverrides[.init(host: PolicyUpdaterFixture.bundleHost, port: fixture.bundleServer.port)] =
            "127.0.0.1"
        let client = BulwarkClient(configuration: configuration)
        let updater = try fixture.updater(for: client)
        #expect(updater.start() == .builtIn)

        for _ in 0..<2 { #expect(try await self.get(client, self.url(serverA)).status == .ok) }
        #expect(serverA.acceptedConnections == 1)
        #expect(client.openConnectionCount == 1)
        // B is not pinned yet.
        let refused = await #expect(throws: BulwarkError.self) { try await self.get(client, self.url(serverB)) }
        #expect(refused?.code == .trustRefused)
        let refusedByB = serverB.acceptedConnections

        // The update adds B's pin; it arrives from the bundle server, fetched under the updater's own pins.
        let v2 = try PolicyUpdaterFixture.policy([PolicyUpdaterFixture.apiHost: [chainA, chainB]])
        fixture.bundleServer.serve(try fixture.bundle(v2, version: 2))
        #expect(await updater.update() == .applied(version: 2))
        #expect(client.policyBundleVersion == 2)
        let updated = try #require(monitor.events.last)
        #expect(updated.shortDescription == "policy_updated")
        #expect(updated.details[.connectionsClosed] == .number(1), "the idle connection made under the old policy")

        // No restart: A still works, on a new connection (the old one is not reused), and B now works too.
        #expect(try await self.get(client, self.url(serverA)).status == .ok)
        #expect(serverA.acceptedConnections == 2)
        #expect(try await self.get(client, self.url(serverB)).status == .ok)
        #expect(try await self.eventually { client.openConnectionCount == 2 && client.pool.keyCount == 2 })
        #expect(try await self.eventually { serverA.openConnections == 1 }, "the old connection was closed")

        // The server rotates to B for good.
        try await serverA.shutdown()
        for _ in 0..<3 { #expect(try await self.get(client, self.url(serverB)).status == .ok) }
        let acceptedByB = serverB.acceptedConnections
        #expect(acceptedByB == refusedByB + 1, "one connection to B since the update, reused")

        // A malicious bundle: validly signed, but an older version pinning A only. Nothing changes.
        fixture.bundleServer.serve(
            try fixture.bundle(try PolicyUpdaterFixture.policy([PolicyUpdaterFixture.apiHost: [chainA]]), version: 1)
        )
        guard case .refused(let refusal) = await updater.update() else {
            Issue.record("the older bundle was not refused")
            return
        }
        #expect(refusal.reason == .rollback)
        #expect(monitor.events.last?.shortDescription == "policy_update_refused:rollback")
        #expect(client.policyBundleVersion == 2)
        #expect(try await self.get(client, self.url(serverB)).status == .ok)
        #expect(serverB.acceptedConnections == acceptedByB, "the pooled connection to B was kept")

        // The bundle's policy is the application's only: it does not pin the bundle server, yet the updater fetched
        // from it after applying it (the refusal above was a rollback, not a fetch failure), and the application's
        // client does not trust the bundle server.
        let bundleURL = fixture.bundleServer.url(host: PolicyUpdaterFixture.bundleHost)
        let untrusted = await #expect(throws: BulwarkError.self) { try await self.get(client, bundleURL) }
        #expect(untrusted?.code == .trustRefused)

        await updater.shutdown()
        await client.shutdown()
        try await serverB.shutdown()
        try await fixture.tearDown()
    }

    @Test("a bundle that trusts another server for the bundle host does not change how the updater fetches")
    func fetchIgnoresTheBundlePolicy() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let impostorChain = try TestChain.make(host: PolicyUpdaterFixture.bundleHost)
        let impostor = try await StaticContentServer.start(
            chain: impostorChain.presentedChain,
            privateKey: impostorChain.leaf.privateKey
        )
        var configuration = try PolicyUpdaterFixture.client(pinning: []).configuration
        configuration.resolveOverrides[.init(host: PolicyUpdaterFixture.bundleHost, port: impostor.port)] = "127.0.0.1"
        let client = BulwarkClient(configuration: configuration)
        // The bundle pins the impostor's key for the bundle host (in the application's policy).
        let policy = try PolicyUpdaterFixture.policy([PolicyUpdaterFixture.bundleHost: [impostorChain]])
        let updater = try fixture.updater(for: client)
        updater.start()
        fixture.bundleServer.serve(try fixture.bundle(policy, version: 3))
        #expect(await updater.update() == .applied(version: 3))
        // The application's client now trusts the impostor...
        let response = try await client.execute(
            BulwarkRequest(url: impostor.url(host: PolicyUpdaterFixture.bundleHost)),
            timeout: .seconds(30)
        )
        #expect(response.status == .notFound)
        // ...but an updater with the same fixed configuration, sent to the impostor, refuses it.
        impostor.serve(try fixture.bundle(policy, version: 4))
        let sentAway = try fixture.updater(
            for: client,
            url: impostor.url(host: PolicyUpdaterFixture.bundleHost),
            fetchPorts: [impostor.port]
        )
        sentAway.start()
        guard case .refused(let refusal) = await sentAway.update() else {
            Issue.record("the impostor's bundle was fetched")
            return
        }
        #expect(refusal.reason == .fetchFailed)
        #expect(client.policyBundleVersion == 3)
        await sentAway.shutdown()
        await updater.shutdown()
        await client.shutdown()
        try await impostor.shutdown()
        try await fixture.tearDown()
    }

    @Test(
        "a redirect hop after an update runs under the policy its request started with: one or the other, never a mix"
    )
    func redirectKeepsItsPolicy() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let chainA = try TestChain.make(host: PolicyUpdaterFixture.apiHost)
        let chainB = try TestChain.make(host: PolicyUpdaterFixture.apiHost)
        let serverA = try await TestHTTPSServer.start(configuration: .init(chain: chainA))
        let serverB = try await TestHTTPSServer.start(configuration: .init(chain: chainB))
        let monitor = RecordingEventMonitor()
        var configuration = try PolicyUpdaterFixture.client(
            pinning: [chainA],
            ports: [serverA.port, serverB.port],
            monitor: monitor
        ).configuration
        configuration.redirects.allowedPorts = [serverB.port]
        // The update arrives while the request is between its two hops.
        let installing = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
        configuration.redirects.handler = { _, _ in
            installing.withLockedValue { $0 }?()
            return .follow
        }
        let client = BulwarkClient(configuration: configuration)
        let updater = try fixture.updater(for: client)
        updater.start()
        let v2 = try fixture.bundle(
            try PolicyUpdaterFixture.policy([PolicyUpdaterFixture.apiHost: [chainA, chainB]]),
            version: 2
        )
        installing.withLockedValue { $0 = { _ = updater.install(v2) } }
        let target = "https://\(PolicyUpdaterFixture.apiHost):\(serverB.port)/hello"
        let redirecting = "https://\(PolicyUpdaterFixture.apiHost):\(serverA.port)/redirect/302?to=\(target)"
        // The first hop ran under the old policy, so does the second: B is not pinned there.
        let refused = await #expect(throws: BulwarkError.self) { try await self.get(client, redirecting) }
        #expect(refused?.code == .trustRefused)
        #expect(client.policyBundleVersion == 2)
        #expect(monitor.events.contains { $0.kind == .policyUpdated })
        // A request that starts now runs under the new policy.
        installing.withLockedValue { $0 = nil }
        let response = try await self.get(client, redirecting)
        #expect(response.status == .ok)
        #expect(response.redirects.count == 1)
        await updater.shutdown()
        await client.shutdown()
        try await serverA.shutdown()
        try await serverB.shutdown()
        try await fixture.tearDown()
    }

    @Test("a response being read while the policy is replaced completes under the old one; its connection then closes")
    func busyConnectionDrains() async throws {
        let fixture = try await PolicyUpdaterFixture.make()
        let chain = try TestChain.make(host: PolicyUpdaterFixture.apiHost)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain, alpn: ["http/1.1"]))
        let client = try PolicyUpdaterFixture.client(pinning: [chain], ports: [server.port])
        let updater = try fixture.updater(for: client)
        updater.start()
        let response = try await client.execute(
            BulwarkRequest(url: "https://\(PolicyUpdaterFixture.apiHost):\(server.port)/bytes/4194304"),
            timeout: .seconds(60)
        )
        let next = try PolicyUpdaterFixture.policy([PolicyUpdaterFixture.apiHost: [chain]])
        #expect(updater.install(try fixture.bundle(next, version: 2)) == .applied(version: 2))
        #expect(client.openConnectionCount == 1, "busy: nothing closed now")
        // A later identity change re-examines the pool's keys; the old policy's key stays retired.
        #expect(try client.updateClientIdentity(nil, for: "unrelated.bulwark.test") == 0)
        let body = try await response.body.collect(upTo: 64 << 20)
        #expect(body.readableBytes == 4_194_304)
        #expect(try await self.eventually { client.openConnectionCount == 0 && client.pool.keyCount == 0 })
        #expect(
            try await self.get(client, "https://\(PolicyUpdaterFixture.apiHost):\(server.port)/hello").status == .ok
        )
        #expect(server.acceptedConnections == 2)
        await updater.shutdown()
        await client.shutdown()
        try await server.shutdown()
        try await fixture.tearDown()
    }
}
