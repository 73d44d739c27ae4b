import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// The revocation evaluator over a verified root → intermediate → leaf chain, with lists signed by the chain's own
/// CA keys.
@Suite("Revocation checking with revocation lists: hard and soft")
struct RevocationTrustEvaluatorTests {
    let chain = Chains[.valid]
    /// Whole seconds, as revocation lists state times.
    let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))

    func list(
        by issuer: TestIdentity,
        revoking: [Certificate] = [],
        thisUpdate: Date? = nil,
        nextUpdate: Date? = nil
    ) throws -> CertificateRevocationList {
        var builder = CRLBuilder(
            issuer: issuer.certificate.subject,
            thisUpdate: thisUpdate ?? self.now - 3_600,
            nextUpdate: nextUpdate ?? self.now + 86_400
        )
        builder.entries = revoking.map { .init($0.serialNumber, revokedAt: self.now - 600, reason: 1) }
        let key = try P256.Signing.PrivateKey(pemRepresentation: issuer.privateKeyPEM)
        return try CertificateRevocationList(derEncoded: builder.der(signedWith: key))
    }

    func store(_ lists: [CertificateRevocationList]) -> RevocationStore {
        let store = RevocationStore()
        for list in lists { store.load(list) }
        return store
    }

    func evaluate(
        _ store: RevocationStore,
        mode: RevocationTrustEvaluator.Mode,
        host: String = Chains.host
    ) async
        -> TrustDecision
    {
        let evaluator = RevocationTrustEvaluator(
            .default(roots: Chains.roots(self.chain)),
            method: .crl,
            mode: mode,
            store: store
        )
        return await evaluator.evaluate(self.chain.presentedChain, forHost: host, at: self.now)
    }

    var intermediate: TestIdentity { self.chain.intermediate! }

    @Test func everyCertificateFoundGoodIsTrustedWithNoticesAndHoldsUntilTheEarliestNextUpdate() async throws {
        let soon = self.now + 600
        let store = self.store([
            try self.list(by: self.chain.root),
            try self.list(by: self.intermediate, nextUpdate: soon),
        ])
        let decision = await self.evaluate(store, mode: .hard)
        let trusted = try #require(decision.trustedChain)
        #expect(trusted.notices.map(\.code) == ["revocation_checked", "revocation_checked"])
        #expect(trusted.validUntil == soon)
        #expect(String(describing: trusted.notices[0]).contains("is not revoked, according to"))
        // The names are kept unformatted on the handshake path and formatted when read: the same words as before.
        let checks = trusted.notices.compactMap(\.revocationCheck)
        for (check, (certificate, issuer)) in zip(
            checks,
            [(self.chain.leaf, self.intermediate), (self.intermediate, self.chain.root)]
        ) {
            #expect(check.certificate == String(describing: certificate.certificate.subject))
            #expect(check.serialNumber == String(describing: certificate.certificate.serialNumber))
            #expect(check.status.source == String(describing: issuer.certificate.subject))
        }
        #expect(checks.count == 2)
    }

    @Test func aRevokedLeafIsRefusedInBothModesSayingWhoRevokedItAndWhen() async throws {
        let store = self.store([
            try self.list(by: self.chain.root),
            try self.list(by: self.intermediate, revoking: [self.chain.leaf.certificate]),
        ])
        for mode in [RevocationTrustEvaluator.Mode.hard, .soft] {
            let refusal = try #require(await self.evaluate(store, mode: mode).refusal, "\(mode)")
            let reason = try #require(refusal.reasons.first)
            #expect(reason.code == "revoked")
            #expect(reason.certificate == String(describing: self.chain.leaf.certificate.subject))
            let text = String(describing: refusal)
            #expect(text.contains("was revoked at"), "\(text)")
            #expect(text.contains("key compromise"), "\(text)")
            #expect(text.contains(String(describing: self.intermediate.certificate.subject)), "\(text)")
        }
    }

    @Test func aRevokedIntermediateIsRefused() async throws {
        let store = self.store([
            try self.list(by: self.chain.root, revoking: [self.intermediate.certificate]),
            try self.list(by: self.intermediate),
        ])
        let refusal = try #require(await self.evaluate(store, mode: .soft).refusal)
        #expect(refusal.reasons.first?.certificate == String(describing: self.intermediate.certificate.subject))
    }

    @Test func anUnknownStatusRefusesInHardModeAndIsANoticeInSoftMode() async throws {
        let empty = RevocationStore()
        let hard = try #require(await self.evaluate(empty, mode: .hard).refusal)
        #expect(hard.reasons.map(\.code) == ["revocation_unknown"])
        #expect(String(describing: hard).contains("no revocation list of"), "\(hard)")
        let soft = try #require(await self.evaluate(empty, mode: .soft).trustedChain)
        #expect(soft.notices.map(\.code) == ["revocation_unknown", "revocation_unknown"])
        #expect(soft.notices.allSatisfy { $0.eventKind == .revocationUnknown })
    }

    @Test func aStaleListIsAnUnknownStatus() async throws {
        let store = self.store([
            try self.list(by: self.chain.root),
            try self.list(by: self.intermediate, thisUpdate: self.now - 86_400 * 8, nextUpdate: self.now - 86_400),
        ])
        let hard = try #require(await self.evaluate(store, mode: .hard).refusal)
        #expect(String(describing: hard).contains("out of date"), "\(hard)")
        let soft = try #require(await self.evaluate(store, mode: .soft).trustedChain)
        #expect(soft.notices.map(\.code) == ["revocation_unknown", "revocation_checked"])
    }

    @Test func theBaseEvaluatorsRefusalIsReturnedUnchanged() async throws {
        let decision = await self.evaluate(RevocationStore(), mode: .hard, host: "elsewhere.bulwark.test")
        #expect(decision.refusal?.reasons.map(\.code) == ["hostname_mismatch"])
    }

    @Test func theNewestListOfAnIssuerThatVerifiesAnswers() throws {
        let store = RevocationStore()
        let newer = try self.list(by: self.intermediate, revoking: [self.chain.leaf.certificate])
        let older = try self.list(by: self.intermediate, thisUpdate: self.now - 7_200)
        store.load(newer)
        store.load(older)
        #expect(store.count == 1)
        #expect(store.lists(issuedBy: self.intermediate.certificate.subject).count == 2)
        let status = store.status(
            of: self.chain.leaf.certificate,
            issuer: self.intermediate.certificate,
            at: self.now
        )
        #expect(try status?.get().revocation != nil)
        #expect(throws: RevocationError.self) { try store.load(crl: [0x30, 0x03, 0x02, 0x01]) }
        #expect(store.count == 1)
    }
}
