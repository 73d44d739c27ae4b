import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOSSL
import Testing

@testable import Bulwark

/// Issue 20, rotation: ``BulwarkClient/updateClientIdentity(_:for:sessionBound:)`` and sign-out of session-bound
/// identities, against the in-process TLS server that requires a client certificate (nginx shows which certificate
/// each request carried: `ClientIdentityRotationInteropTests`).
@Suite("Client identity rotation over real TLS on loopback (in-process server)")
struct ClientIdentityRotationClientTests {
    static let protocols: [[String]] = [["h2"], ["http/1.1"]]

    /// Weak references to what holds an identity's key: the identity's key material and BoringSSL's key object
    /// (which the TLS contexts made for the identity retain too).
    final class KeyWatch: @unchecked Sendable {
        weak var material: ClientIdentity.Material?
        weak var privateKey: NIOSSLPrivateKey?

        init(_ identity: ClientIdentity) {
            self.material = identity.material
            self.privateKey = identity.material.privateKey
        }

        var isFreed: Bool { self.material == nil && self.privateKey == nil }
    }

    /// Polls `condition` for up to five seconds (channels are released after their close completes).
    func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    @Test(
        "a replaced identity: new connections use the new one, the old connections drain, the old key is freed",
        arguments: Self.protocols
    )
    func replaced(alpn: [String]) async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: alpn)
        let monitor = RecordingEventMonitor()
        // The first identity exists only inside the client (and the watch's weak references).
        let (client, watch) = try {
            let first = try ClientCertificates.identity(
                try ClientCertificates.leaf(harness.clientCA, commonName: "one")
            )
            let client = try harness.client(for: server, identities: [Harness.host: first], monitor: monitor)
            return (client, KeyWatch(first))
        }()
        for _ in 0..<2 {
            let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
            #expect(response.status == .ok)
        }
        #expect(client.openConnectionCount == 1)
        let drained = client.updateClientIdentity(harness.identity, for: try HostPattern(Harness.host))
        #expect(drained == 1)
        let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        let sent = monitor.events.filter { $0.kind == .clientCertificateSent }
        #expect(sent.map { $0.details[.certificate]?.text } == ["CN=one", "CN=device-42"])
        #expect(client.clientIdentities.identity(forHost: Harness.host)?.identity == harness.identity)
        #expect(client.configuration.clientIdentities.identity(forHost: Harness.host)?.identity == harness.identity)
        // The old connection closed and the pool forgot its key; the TLS context of the old identity is gone; so is
        // the old key object (BoringSSL zeroizes a key as it frees it).
        #expect(try await self.eventually { client.openConnectionCount == 1 && client.pool.keyCount == 1 })
        #expect(client.connector?.handshakeContexts.identityCount == 1)
        #expect(try await self.eventually { watch.isFreed }, "the replaced identity's key is still referenced")
        let updated = monitor.events.filter { $0.kind == .clientIdentityUpdated }
        #expect(updated.count == 1)
        #expect(updated.first?.details[.pattern]?.text == Harness.host)
        #expect(updated.first?.details[.fingerprint]?.text == harness.identity.fingerprint)
        #expect(updated.first?.details[.connectionsClosed] == .number(1))
        let keyLines = ClientCertificates.base64Lines(harness.leaf.privateKeyPEM)
        for event in updated {
            let text = event.description + event.details.map { "\($0.key)=\($0.value)" }.joined()
            for line in keyLines { #expect(!text.contains(line)) }
        }
        await client.shutdown()
        try await server.shutdown()
    }

    @Test("a response being read while its identity is replaced completes; its connection closes after it")
    func busyConnectionDrains() async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: ["http/1.1"])
        let second = try ClientCertificates.identity(try ClientCertificates.leaf(harness.clientCA, commonName: "two"))
        let client = try harness.client(for: server, identities: [Harness.host: harness.identity])
        let response = try await client.execute(
            BulwarkRequest(url: Harness.url(server, "/bytes/4194304")),
            timeout: .seconds(60)
        )
        // Busy: nothing to close now, and the response still arrives whole.
        #expect(client.updateClientIdentity(second, for: try HostPattern(Harness.host)) == 0)
        let body = try await response.body.collect(upTo: 64 << 20)
        #expect(body.readableBytes > 0)
        #expect(try await self.eventually { client.openConnectionCount == 0 && client.pool.keyCount == 0 })
        let (next, _) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(next.status == .ok)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test("signOut() removes session-bound identities and drains their connections", arguments: Self.protocols)
    func signOutDropsSessionBound(alpn: [String]) async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: alpn)
        let monitor = RecordingEventMonitor()
        let client = try harness.client(for: server, identities: [:], monitor: monitor)
        let (watch, drained) = try {
            let session = try ClientCertificates.identity(try ClientCertificates.leaf(harness.clientCA))
            return (KeyWatch(session), try client.updateClientIdentity(session, for: Harness.host, sessionBound: true))
        }()
        #expect(drained == 0)
        #expect(client.clientIdentities.isSessionBound(try HostPattern(Harness.host)))
        let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        let summary = await client.signOut()
        #expect(summary.clientIdentities == 1)
        #expect(summary.connectionsClosed == 1)
        #expect(summary.description.hasSuffix(", 1 client identities"))
        let signOut = monitor.events.first { $0.kind == .signOut }
        #expect(signOut?.details[.clientIdentities] == .number(1))
        #expect(client.clientIdentities.isEmpty)
        #expect(try await self.eventually { watch.isFreed }, "the session's key is still referenced")
        // The server requires a certificate; none is offered any more.
        await Harness.expectError(.clientCertificateRejected) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }

    @Test("an identity that is not session-bound survives sign-out; a bad pattern changes nothing")
    func notSessionBoundAndBadPattern() async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: ["http/1.1"])
        let client = try harness.client(for: server, identities: [Harness.host: harness.identity])
        #expect(throws: HostPatternError.self) {
            try client.updateClientIdentity(nil, for: "bad pattern with spaces")
        }
        let summary = await client.signOut()
        #expect(summary.clientIdentities == 0)
        #expect(client.clientIdentities.identity(forHost: Harness.host)?.identity == harness.identity)
        let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        // Removing it: nothing is offered, and the server refuses.
        client.updateClientIdentity(nil, for: try HostPattern(Harness.host))
        #expect(client.clientIdentities.isEmpty)
        await Harness.expectError(.clientCertificateRejected) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }
}
