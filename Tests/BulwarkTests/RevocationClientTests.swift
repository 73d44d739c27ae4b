import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

/// The client with revocation checking against a real TLS server: a revoked leaf ends the request before any byte
/// of it is sent, with a `certificate_revoked` event; a good chain answers with `revocation_checked` events.
@Suite("The client checks revocation with loaded lists")
struct RevocationClientTests {
    let chain: TestChain

    init() throws {
        self.chain = try TestChain.make(host: Harness.host)
    }

    func store(revokingLeaf: Bool) throws -> RevocationStore {
        let store = RevocationStore()
        for (issuer, revoked) in [
            (self.chain.root, [Certificate]()),
            (self.chain.intermediate!, revokingLeaf ? [self.chain.leaf.certificate] : []),
        ] {
            var builder = CRLBuilder(
                issuer: issuer.certificate.subject,
                thisUpdate: Date() - 3_600,
                nextUpdate: Date() + 86_400
            )
            builder.entries = revoked.map { .init($0.serialNumber, revokedAt: Date() - 60, reason: 1) }
            let key = try P256.Signing.PrivateKey(pemRepresentation: issuer.privateKeyPEM)
            try store.load(crl: Array(builder.pem(signedWith: key).utf8))
        }
        return store
    }

    @Test func aRevokedLeafIsRefusedBeforeTheRequestIsSent() async throws {
        let server = try await Harness.server(self.chain)
        let monitor = RecordingEventMonitor()
        let evaluator = RevocationTrustEvaluator(
            .default(roots: .custom([self.chain.root.certificate])),
            store: try self.store(revokingLeaf: true)
        )
        let client = try Harness.client(for: server, evaluator: evaluator) { $0.eventMonitor = monitor }
        let error = await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        #expect(String(describing: error as Any).contains("was revoked at"))
        #expect(error?.trustRefusal?.reasons.map(\.code) == ["revoked"])
        #expect(monitor.events.contains { $0.kind == .certificateRevoked })
        #expect(server.receivedApplicationBytes == 0)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test func aGoodChainAnswersWithRevocationCheckedEvents() async throws {
        let server = try await Harness.server(self.chain)
        let monitor = RecordingEventMonitor()
        let evaluator = RevocationTrustEvaluator(
            .default(roots: .custom([self.chain.root.certificate])),
            store: try self.store(revokingLeaf: false)
        )
        let client = try Harness.client(for: server, evaluator: evaluator) { $0.eventMonitor = monitor }
        let (response, body) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        #expect(body == "hello")
        #expect(monitor.events.filter { $0.kind == .revocationChecked }.count == 2)
        await client.shutdown()
        try await server.shutdown()
    }
}
