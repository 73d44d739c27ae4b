import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// Regression tests for issue 16's defects in the trust-decision cache: a freed manager's identity (5) and a
/// decision that changes at a known time without the chain changing (14).
@Suite("Trust-decision cache hardening")
struct TrustDecisionCacheHardeningTests {
    static let host = Chains.host
    let chain = Chains[.valid]

    /// Defect 5: the key held the `ObjectIdentifier` of the manager's token without keeping the token alive, so a
    /// manager allocated where a freed one lived inherited its trusted decisions.
    @Test func aNewManagerNeverInheritsAFreedManagersDecisions() async throws {
        let cache = TrustDecisionCache()
        let der = self.chain.presentedChain.map(\.derBytes)
        var inherited = 0
        for _ in 0..<200 {
            do {
                let trusting = try ServerTrustManager(evaluators: [
                    "**.bulwark.test": DefaultTrustEvaluator(roots: Chains.roots(self.chain))
                ])
                let first = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: trusting)
                #expect(first.decision.isTrusted)
            }
            // The trusting manager is gone; this one evaluates no host at all.
            let refusing = ServerTrustManager(patterns: [])
            if cache.cachedDecision(for: cache.key(host: Self.host, presentedChain: der, manager: refusing)) != nil {
                inherited += 1
            }
            let second = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: refusing)
            if second.decision.isTrusted { inherited += 1 }
            cache.removeAll()
        }
        #expect(inherited == 0)
    }

    /// A manager's copies still share its decisions: the identity travels with the copy.
    @Test func copiesOfAManagerShareDecisions() async throws {
        let cache = TrustDecisionCache()
        let manager = try ServerTrustManager(evaluators: [
            "**.bulwark.test": DefaultTrustEvaluator(roots: Chains.roots(self.chain))
        ])
        let copy = manager
        _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        #expect(await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: copy).cached)
    }

    /// Defect 14: with `performDefaultValidation: false`, pins alone make a chain trusted; when the pin set expires
    /// the chain must pass default validation, which this self-signed chain does not. The cache served the old
    /// "trusted" until its own time to live ran out.
    @Test func aDecisionIsNotServedPastThePinSetsExpiration() async throws {
        let clock = ManualClock(Date())
        let cache = TrustDecisionCache(now: clock.function)
        let selfSigned = Chains[.selfSignedLeaf]
        let leaf = selfSigned.leaf.certificate
        let backup = Pin.publicKey(of: self.chain.root.certificate)
        let pins = try PinSet([Pin.publicKey(of: leaf), backup], expiration: clock.now.addingTimeInterval(60))
        let manager = try ServerTrustManager(evaluators: [
            "**.bulwark.test": PublicKeysTrustEvaluator(
                pinSet: pins,
                roots: .custom([]),
                performDefaultValidation: false
            )
        ])
        let first = await cache.evaluate(selfSigned.presentedChain, forHost: Self.host, with: manager)
        #expect(first.decision.isTrusted)
        #expect(first.decision.trustedChain?.validUntil == pins.expiration)
        clock.advance(by: 30)
        #expect(await cache.evaluate(selfSigned.presentedChain, forHost: Self.host, with: manager).cached)
        clock.advance(by: 60)
        let afterExpiry = await cache.evaluate(selfSigned.presentedChain, forHost: Self.host, with: manager)
        #expect(!afterExpiry.cached)
        #expect(!afterExpiry.decision.isTrusted)
    }

    /// A composite decision is valid only as long as every part of it.
    @Test func aCompositeDecisionEndsWithItsEarliestPart() async throws {
        let now = Date()
        let selfSigned = Chains[.selfSignedLeaf]
        let leaf = selfSigned.leaf.certificate
        let backup = Pin.publicKey(of: self.chain.root.certificate)
        let early = try PinSet([Pin.publicKey(of: leaf), backup], expiration: now.addingTimeInterval(60))
        let late = try PinSet([Pin.publicKey(of: leaf), backup], expiration: now.addingTimeInterval(600))
        let composite = CompositeTrustEvaluator([
            PublicKeysTrustEvaluator(pinSet: late, roots: .custom([]), performDefaultValidation: false),
            PublicKeysTrustEvaluator(pinSet: early, roots: .custom([]), performDefaultValidation: false),
        ])
        let decision = await composite.evaluate(selfSigned.presentedChain, forHost: Self.host, at: now)
        #expect(decision.trustedChain?.validUntil == early.expiration)
    }
}
