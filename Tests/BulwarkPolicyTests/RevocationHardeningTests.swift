import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

// Revocation read as an attacker would: a list nobody can verify must never silence one that verifies, and lists
// that can be told apart (by their distribution point, by the key that signed them) must not evict each other.
@Suite("Revocation hardening")
struct RevocationHardeningTests {
    let chain = Chains[.valid]
    /// Whole seconds, as revocation lists state times.
    let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))

    var intermediate: TestIdentity { self.chain.intermediate! }

    func list(
        by issuer: TestIdentity,
        revoking: [Certificate] = [],
        thisUpdate: Date? = nil,
        extensions: [Certificate.Extension] = []
    ) throws -> CertificateRevocationList {
        var builder = CRLBuilder(
            issuer: issuer.certificate.subject,
            thisUpdate: thisUpdate ?? self.now - 3_600,
            nextUpdate: self.now + 86_400
        )
        builder.entries = revoking.map { .init($0.serialNumber, revokedAt: self.now - 600, reason: 1) }
        builder.extensions += extensions
        let key = try P256.Signing.PrivateKey(pemRepresentation: issuer.privateKeyPEM)
        return try CertificateRevocationList(derEncoded: builder.der(signedWith: key))
    }

    func evaluate(_ store: RevocationStore) async -> TrustDecision {
        let evaluator = RevocationTrustEvaluator(
            .default(roots: Chains.roots(self.chain)),
            method: .crl,
            mode: .hard,
            store: store
        )
        return await evaluator.evaluate(self.chain.presentedChain, forHost: Chains.host, at: self.now)
    }

    /// A freshest-CRL extension (RFC 5280 5.2.6): the list or certificate carrying it names delta lists.
    static func freshestCRL() throws -> Certificate.Extension {
        let points = try CRLBuilder.distributionPoints(["http://crl.example.test/delta.crl"])
        return Certificate.Extension(oid: [2, 5, 29, 46], critical: false, value: points.value)
    }

    /// A server leaf for the chain's host, issued by its intermediate, naming `url` as its CRL distribution point.
    func leaf(_ name: String, distributionPoint url: String) throws -> TestIdentity {
        var blueprint = CertificateBlueprint(
            commonName: name,
            privateKey: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            notBefore: self.now - 3_600,
            notAfter: self.now + 86_400
        )
        blueprint.subjectAlternativeNames = [.dnsName(Chains.host)]
        blueprint.extendedKeyUsage = [.serverAuth]
        blueprint.extraExtensions = [try CRLBuilder.distributionPoints([url])]
        return try blueprint.issue(issuer: self.intermediate)
    }

    /// A CA of the same name as the chain's intermediate, with a key of its own: a forger's, or a re-keyed twin.
    func twin() throws -> TestIdentity {
        try CertificateFactory.issueIntermediate(from: try CertificateFactory.makeRoot())
    }

    @Test("a forged list with a far-future thisUpdate does not silence the genuine one, in either order")
    func forgedFarFutureListDoesNotShadow() async throws {
        let twin = try self.twin()
        #expect(twin.certificate.subject == self.intermediate.certificate.subject)
        let genuine = try self.list(by: self.intermediate, revoking: [self.chain.leaf.certificate])
        let forged = try self.list(by: twin, thisUpdate: self.now + 10 * 365 * 86_400)
        for order in [[genuine, forged], [forged, genuine]] {
            let store = RevocationStore()
            store.load(try self.list(by: self.chain.root))
            for list in order { store.load(list) }
            let refusal = try #require(await self.evaluate(store).refusal)
            #expect(refusal.reasons.map(\.code) == ["revoked"], "\(refusal)")
        }
    }

    @Test("partitioned lists of one issuer, told apart by their distribution point, are all kept and chosen by scope")
    func partitionedListsAreKeptApart() async throws {
        let forLeaves = try self.list(
            by: self.intermediate,
            revoking: [self.chain.leaf.certificate],
            extensions: [try CRLBuilder.issuingDistributionPoint(onlyUserCertificates: true)]
        )
        let forCAs = try self.list(
            by: self.intermediate,
            thisUpdate: self.now - 60,
            extensions: [try CRLBuilder.issuingDistributionPoint(onlyCACertificates: true)]
        )
        for order in [[forLeaves, forCAs], [forCAs, forLeaves]] {
            let store = RevocationStore()
            store.load(try self.list(by: self.chain.root))
            for list in order { store.load(list) }
            let refusal = try #require(await self.evaluate(store).refusal)
            #expect(refusal.reasons.map(\.code) == ["revoked"], "\(refusal)")
        }
    }

    @Test("re-keyed twin issuers of one name keep a list each")
    func twinIssuersKeepAListEach() async throws {
        let twin = try self.twin()
        let store = RevocationStore()
        store.load(try self.list(by: self.chain.root))
        store.load(try self.list(by: self.intermediate, revoking: [self.chain.leaf.certificate]))
        store.load(try self.list(by: twin, thisUpdate: self.now - 60))
        let refusal = try #require(await self.evaluate(store).refusal)
        #expect(refusal.reasons.map(\.code) == ["revoked"], "\(refusal)")
        // The twin's certificates are still judged by the twin's list.
        let twinLeaf = try CertificateFactory.issueLeaf(from: twin)
        let status = try #require(
            store.status(of: twinLeaf.certificate, issuer: twin.certificate, at: self.now, clockSkew: 300)
        )
        #expect(try status.get().revocation == nil)
    }
    @Test("a decision made while a status was unknown holds for 60 s at most, and its notice says so")
    func unknownStatusDecisionIsShortLived() async throws {
        let evaluator = RevocationTrustEvaluator(
            .default(roots: Chains.roots(self.chain)),
            method: .crl,
            mode: .soft,
            store: RevocationStore()
        )
        let decision = await evaluator.evaluate(self.chain.presentedChain, forHost: Chains.host, at: self.now)
        let trusted = try #require(decision.trustedChain)
        #expect(trusted.notices.map(\.code) == ["revocation_unknown", "revocation_unknown"])
        let validUntil = try #require(trusted.validUntil, "a soft-mode pass on an unknown status is cached as long")
        #expect(validUntil <= self.now + 60)
        #expect(trusted.notices.allSatisfy { String(describing: $0).contains("60 s") }, "\(trusted.notices)")
    }
    @Test("fetched lists are bounded by bytes as well as by count")
    func fetchedListsAreBoundedByBytes() throws {
        let lists = try (0..<3).map { index in
            try self.list(by: self.intermediate, revoking: [self.chain.leaf.certificate], thisUpdate: self.now - 60)
        }
        let size = lists[0].byteCount
        let store = RevocationStore(capacity: 1_024, maximumFetchedBytes: size * 2 + size / 2)
        #expect(RevocationStore().maximumFetchedBytes == 64 << 20)
        for (index, list) in lists.enumerated() { store.store(list, fetchedFrom: "http://crl.test/\(index).crl") }
        #expect(store.fetchedCount == 2)
        #expect(store.list(fetchedFrom: "http://crl.test/0.crl") == nil, "the least recently used list is forgotten")
        #expect(store.list(fetchedFrom: "http://crl.test/2.crl") != nil)
        // A list larger than the whole budget is not kept at all.
        let tiny = RevocationStore(capacity: 1_024, maximumFetchedBytes: size - 1)
        tiny.store(lists[0], fetchedFrom: "http://crl.test/0.crl")
        #expect(tiny.fetchedCount == 0)
    }

    // MARK: - The attack review's findings

    @Test("forged lists loaded after the genuine one, more than the per-issuer capacity, do not push it out")
    func forgedListsDoNotEvictTheGenuineOne() async throws {
        let store = RevocationStore()
        let twin = try self.twin()
        store.load(try self.list(by: self.chain.root))
        store.load(try self.list(by: self.intermediate, revoking: [self.chain.leaf.certificate]))
        for index in 1...RevocationStore.LoadedLists.capacity {
            store.load(try self.list(by: twin, thisUpdate: self.now - Double(index) * 60))
        }
        let refusal = try #require(await self.evaluate(store).refusal)
        #expect(refusal.reasons.map(\.code) == ["revoked"], "\(refusal)")
        // Once tried, the forged lists are the ones forgotten when more come: the count stops growing.
        let kept = store.lists(issuedBy: self.intermediate.certificate.subject).count
        #expect(kept == RevocationStore.LoadedLists.capacity + 1)
        store.load(try self.list(by: twin, thisUpdate: self.now - 7_200))
        #expect(store.lists(issuedBy: self.intermediate.certificate.subject).count == kept)
        let again = try #require(await self.evaluate(store).refusal)
        #expect(again.reasons.map(\.code) == ["revoked"], "\(again)")
    }

    @Test("a list's size as a cache counts what its entries keep alive, not only its signed bytes")
    func aListsSizeCountsItsEntries() throws {
        var builder = CRLBuilder(
            issuer: self.intermediate.certificate.subject,
            thisUpdate: self.now - 3_600,
            nextUpdate: self.now + 86_400
        )
        builder.entries = (1...200).map { .init(Certificate.SerialNumber($0), revokedAt: self.now - 600, reason: 1) }
        let key = try P256.Signing.PrivateKey(pemRepresentation: self.intermediate.privateKeyPEM)
        let list = try CertificateRevocationList(derEncoded: builder.der(signedWith: key))
        #expect(list.count == 200)
        #expect(list.byteCount >= 2 * list.signedBytes.count + list.signature.count + 200 * 64)
    }

    @Test(
        "a list that announces delta lists (freshest CRL) does not prove a certificate good on its own; it may still revoke"
    )
    func listAnnouncingDeltasIsNotCompleteProofOfGood() async throws {
        // PKITS 4.15.4: the base list says good, the delta list revokes. Bulwark reads no delta lists, so a base list
        // that names them answers only "revoked", never "good" (found by the PKITS run, issue 41).
        let freshest = try Self.freshestCRL()
        for revoking in [false, true] {
            let store = RevocationStore()
            store.load(try self.list(by: self.chain.root))
            store.load(
                try self.list(
                    by: self.intermediate,
                    revoking: revoking ? [self.chain.leaf.certificate] : [],
                    extensions: [freshest]
                )
            )
            let refusal = try #require(await self.evaluate(store).refusal)
            if revoking {
                #expect(refusal.reasons.map(\.code) == ["revoked"], "\(refusal)")
            } else {
                #expect(refusal.reasons.map(\.code) == ["revocation_unknown"], "\(refusal)")
                #expect("\(refusal)".contains("delta"), "\(refusal)")
            }
        }
    }

    /// Serves one list for every fetch.
    struct OneListFetcher: RevocationFetching {
        let list: [UInt8]
        func fetch(_ request: RevocationFetchRequest) async throws(RevocationFetchError) -> [UInt8] { self.list }
    }

    @Test(
        "a certificate on hold in a list that announces deltas is revoked, not answered by an older list (review 3, 4a)"
    )
    func heldCertificateInDeltaAnnouncingListStaysRevoked() async throws {
        let freshest = try Self.freshestCRL()
        var held = CRLBuilder(
            issuer: self.intermediate.certificate.subject,
            thisUpdate: self.now - 600,
            nextUpdate: self.now + 86_400
        )
        held.entries = [.init(self.chain.leaf.certificate.serialNumber, revokedAt: self.now - 600, reason: 6)]
        held.extensions += [freshest]
        let older = try self.list(by: self.intermediate, thisUpdate: self.now - 2 * 86_400)
        for mode in [RevocationTrustEvaluator.Mode.hard, .soft] {
            let store = RevocationStore()
            store.load(try self.list(by: self.chain.root))
            store.load(older)
            store.load(try CertificateRevocationList(derEncoded: held.der(signedBy: self.intermediate)))
            let evaluator = RevocationTrustEvaluator(
                .default(roots: Chains.roots(self.chain)),
                method: .crl,
                mode: mode,
                store: store
            )
            let decision = await evaluator.evaluate(self.chain.presentedChain, forHost: Chains.host, at: self.now)
            let refusal = try #require(decision.refusal, "\(mode)")
            #expect(refusal.reasons.map(\.code) == ["revoked"], "\(mode): \(refusal)")
        }
    }

    @Test("a fetched list that announces deltas is kept: it still revokes the next certificate it lists (review 4b)")
    func fetchedDeltaAnnouncingListIsKeptForTheCertificatesItRevokes() async throws {
        let url = "http://crl.example.test/list.crl"
        let good = try self.leaf("good leaf", distributionPoint: url)
        let revoked = try self.leaf("revoked leaf", distributionPoint: url)
        let freshest = try Self.freshestCRL()
        var builder = CRLBuilder(
            issuer: self.intermediate.certificate.subject,
            thisUpdate: self.now - 600,
            nextUpdate: self.now + 86_400
        )
        builder.entries = [.init(revoked.certificate.serialNumber, revokedAt: self.now - 600, reason: 1)]
        builder.extensions += [freshest]
        let store = RevocationStore()
        store.load(try self.list(by: self.chain.root))
        let evaluator = RevocationTrustEvaluator(
            .default(roots: Chains.roots(self.chain)),
            method: .crl,
            mode: .soft,
            store: store,
            fetcher: OneListFetcher(list: try builder.der(signedBy: self.intermediate)),
            // Not about time: the fetcher answers at once, but the whole in-process run can keep the cooperative
            // pool busy for longer than the default 4 s budget.
            budget: .seconds(60)
        )
        let intermediate = self.intermediate.certificate
        let first = await evaluator.evaluate([good.certificate, intermediate], forHost: Chains.host, at: self.now)
        #expect(first.isTrusted)
        let second = await evaluator.evaluate([revoked.certificate, intermediate], forHost: Chains.host, at: self.now)
        let refusal = try #require(second.refusal)
        #expect(refusal.reasons.map(\.code) == ["revoked"], "\(refusal)")
    }

    @Test("an older plain list does not answer good where a newer list names deltas (re-review 1)")
    func olderPlainListDoesNotAnswerOverADeltaAnnouncingOne() async throws {
        let freshest = try Self.freshestCRL()
        let store = RevocationStore()
        store.load(try self.list(by: self.chain.root))
        store.load(try self.list(by: self.intermediate, thisUpdate: self.now - 2 * 86_400))
        store.load(try self.list(by: self.intermediate, extensions: [freshest]))
        let refusal = try #require(await self.evaluate(store).refusal)
        #expect(refusal.reasons.map(\.code) == ["revocation_unknown"], "\(refusal)")
        #expect("\(refusal)".contains("delta"), "\(refusal)")
    }

    /// Counts the fetches it serves.
    final class CountingFetcher: RevocationFetching, @unchecked Sendable {
        let list: [UInt8]
        private let lock = NSLock()
        private var fetches = 0
        init(list: [UInt8]) { self.list = list }
        var count: Int { self.lock.withLock { self.fetches } }
        func fetch(_ request: RevocationFetchRequest) async throws(RevocationFetchError) -> [UInt8] {
            self.lock.withLock { self.fetches += 1 }
            return self.list
        }
    }

    @Test("a kept list that names deltas is not fetched again on every handshake (re-review 2)")
    func keptDeltaAnnouncingListIsNotFetchedAgain() async throws {
        let url = "http://crl.example.test/list.crl"
        let leaf = try self.leaf("a leaf", distributionPoint: url)
        let freshest = try Self.freshestCRL()
        var builder = CRLBuilder(
            issuer: self.intermediate.certificate.subject,
            thisUpdate: self.now - 600,
            nextUpdate: self.now + 86_400
        )
        builder.extensions += [freshest]
        let fetcher = CountingFetcher(list: try builder.der(signedBy: self.intermediate))
        let store = RevocationStore()
        store.load(try self.list(by: self.chain.root))
        let evaluator = RevocationTrustEvaluator(
            .default(roots: Chains.roots(self.chain)),
            method: .crl,
            mode: .soft,
            store: store,
            fetcher: fetcher,
            // Not about time: the fetcher answers at once, but the whole in-process run can keep the cooperative
            // pool busy for longer than the default 4 s budget.
            budget: .seconds(60)
        )
        for _ in 0..<3 {
            let decision = await evaluator.evaluate(
                [leaf.certificate, self.intermediate.certificate],
                forHost: Chains.host,
                at: self.now
            )
            #expect(decision.isTrusted)
        }
        #expect(fetcher.count == 1)
    }
}
