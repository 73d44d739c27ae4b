import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// The path swift-certificates' `Verifier` built for a presented chain, checked again on the next handshake instead
/// of searched for: its signatures from the signature memo, every policy at the time of the evaluation. It is never
/// a decision: whatever no longer holds is refused as the `Verifier` refuses it.
@Suite("Verified path memo")
struct VerifiedPathMemoTests {
    /// A copy of `root` (same subject, key and extensions) that expired a year ago, signed by its own key.
    static func expiredTwin(of root: TestIdentity) throws -> Certificate {
        let certificate = root.certificate
        return try Certificate(
            version: certificate.version,
            serialNumber: CertificateFactory.makeSerialNumber(),
            publicKey: certificate.publicKey,
            notValidBefore: Date().addingTimeInterval(-2 * 365 * 86_400),
            notValidAfter: Date().addingTimeInterval(-365 * 86_400),
            issuer: certificate.subject,
            subject: certificate.subject,
            signatureAlgorithm: certificate.signatureAlgorithm,
            extensions: certificate.extensions,
            issuerPrivateKey: root.privateKey
        )
    }

    @Test func aPathIsCheckedAgainInsteadOfSearchedFor() async throws {
        let chain = Chains[.valid]
        let roots = Chains.roots(chain)
        let evaluator = DefaultTrustEvaluator(roots: roots)
        let now = Date()
        let first = try #require(
            await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).trustedChain
        )
        #expect(roots.paths.count == 1)
        #expect(roots.paths.hits == 0)
        #expect(roots.paths.signatures.verificationCount == 0)

        // The first replay verifies the path's two signatures with the arithmetic, and remembers them.
        let second = try #require(
            await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).trustedChain
        )
        #expect(roots.paths.hits == 1)
        #expect(roots.paths.signatures.verificationCount == 2)
        #expect(roots.paths.signatures.count == 2)

        // The next ones find both in memory.
        let third = try #require(
            await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).trustedChain
        )
        #expect(roots.paths.hits == 2)
        #expect(roots.paths.signatures.verificationCount == 2)

        let path = [chain.leaf.certificate, chain.intermediate!.certificate, chain.root.certificate]
        for decision in [first, second, third] {
            #expect(decision.certificates == path)
        }
    }

    /// A path remembered as valid is refused once its leaf has expired, with the reasons the `Verifier` gives for a
    /// chain it never saw, and it is forgotten.
    @Test func aRememberedPathMeetsThePoliciesAtEachEvaluation() async throws {
        let chain = Chains[.valid]
        let roots = Chains.roots(chain)
        let evaluator = DefaultTrustEvaluator(roots: roots)
        let now = Date()
        #expect(await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).isTrusted)
        #expect(roots.paths.count == 1)

        let later = chain.leaf.certificate.notValidAfter.addingTimeInterval(1)
        let refused = await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: later)
        let fresh = await DefaultTrustEvaluator(roots: Chains.roots(chain)).evaluate(
            chain.presentedChain,
            forHost: Chains.host,
            at: later
        )
        #expect(!refused.isTrusted)
        #expect(refused.reasons.map(\.code).contains("expired"))
        #expect(refused.reasons == fresh.reasons)
        #expect(roots.paths.hits == 0)
        #expect(roots.paths.count == 0)

        // Valid again at an earlier time: validated in full, and remembered again.
        #expect(await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).isTrusted)
        #expect(roots.paths.count == 1)
        #expect(await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).isTrusted)
        #expect(roots.paths.hits == 1)
    }

    /// When the `Verifier` put another path to the policies first (here through an expired copy of the root, which
    /// it finds first), what it returns depends on the time, so nothing is remembered and every evaluation searches.
    @Test func aPathIsRememberedOnlyWhenItWasTheOnlyOneTried() async throws {
        let chain = Chains[.valid]
        let twin = try Self.expiredTwin(of: chain.root)
        let roots = TrustRoots.custom([twin, chain.root.certificate])
        let evaluator = DefaultTrustEvaluator(roots: roots)
        let now = Date()

        // The verifier tries the expired copy first, then the root.
        let verifier = ChainVerifier(roots: roots, options: ValidationOptions()).makeVerifier(at: now, systemRoots: nil)
        let (result, onlyPathTried) = await BuiltVerifier(verifier: verifier).validate(
            leaf: chain.leaf.certificate,
            intermediates: CertificateStore([chain.intermediate!.certificate])
        )
        guard case .validCertificate(let validated) = result else {
            Issue.record("the chain was refused: \(result)")
            return
        }
        #expect(Array(validated).last == chain.root.certificate)
        #expect(onlyPathTried == nil)

        for _ in 0..<3 {
            let decision = await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now)
            #expect(decision.trustedChain?.certificates.last == chain.root.certificate)
        }
        #expect(roots.paths.count == 0)
        #expect(roots.paths.hits == 0)
    }

    /// A leaf with the same `TBSCertificate` signed by a key nobody trusts, presented after the genuine chain's path
    /// was remembered, is validated in full and refused, every time; the genuine chain is still served from memory.
    @Test func aResignedLeafIsNeverTakenForTheRememberedOne() async throws {
        let chain = Chains[.valid]
        let roots = Chains.roots(chain)
        let evaluator = DefaultTrustEvaluator(roots: roots)
        let now = Date()
        var forged = chain.presentedChain
        forged[0] = try VerificationMemoTests.resigned(chain.leaf.certificate)
        #expect(await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).isTrusted)
        for round in 1...3 {
            let decision = await evaluator.evaluate(forged, forHost: Chains.host, at: now)
            #expect(!decision.isTrusted)
            #expect(await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: now).isTrusted)
            #expect(roots.paths.hits == round)
        }
        #expect(roots.paths.count == 1)
    }

    /// The options the policies read are part of what a path is remembered under.
    @Test func eachSetOfOptionsHasItsOwnPath() async throws {
        let chain = Chains[.valid]
        let roots = Chains.roots(chain)
        var options = ValidationOptions()
        options.requireServerAuthExtendedKeyUsage = false
        let now = Date()
        for _ in 0..<2 {
            #expect(
                await DefaultTrustEvaluator(roots: roots).evaluate(chain.presentedChain, forHost: Chains.host, at: now)
                    .isTrusted
            )
            #expect(
                await DefaultTrustEvaluator(roots: roots, options: options).evaluate(
                    chain.presentedChain,
                    forHost: Chains.host,
                    at: now
                ).isTrusted
            )
        }
        #expect(roots.paths.count == 2)
        #expect(roots.paths.hits == 2)
    }

    /// Over the mutated chains of the differential tests (validity, key usage, constraints, names, algorithms, key
    /// sizes, critical extensions, shapes), evaluated again and again with one set of roots, at the time they were made
    /// for and at times that cross their validity, every decision and its reasons equal those of an evaluation with
    /// roots that never saw the chain.
    @Test func repeatedEvaluationsDecideAsFreshOnes() async throws {
        let keys = try ChainMutationEngine.KeyPool.make()
        var engine = ChainMutationEngine(seed: 24, now: Date(), keys: keys)
        let times = [
            engine.now, engine.now.addingTimeInterval(-40 * 86_400), engine.now.addingTimeInterval(400 * 86_400),
        ]
        var replays = 0
        var trusted = 0
        for _ in 0..<(ChainMutationEngine.variantCount + 60) {
            let chain = try engine.next()
            let roots = TrustRoots.custom([chain.root])
            let evaluator = DefaultTrustEvaluator(roots: roots)
            // Each time twice in a row (the second may be answered along the remembered path), then again.
            for time in (times + times).flatMap({ [$0, $0] }) {
                let decision = await evaluator.evaluate(chain.presented, forHost: chain.host, at: time)
                let fresh = await DefaultTrustEvaluator(roots: .custom([chain.root])).evaluate(
                    chain.presented,
                    forHost: chain.host,
                    at: time
                )
                #expect(decision.isTrusted == fresh.isTrusted, "\(chain.label) at \(time)")
                #expect(decision.reasons == fresh.reasons, "\(chain.label) at \(time)")
                #expect(decision.trustedChain?.certificates == fresh.trustedChain?.certificates, "\(chain.label)")
                if decision.isTrusted { trusted += 1 }
            }
            replays += roots.paths.hits
        }
        // The matrix exercises the replay: some evaluations were answered along a remembered path.
        #expect(trusted > 0)
        #expect(replays > 0)
    }
}
