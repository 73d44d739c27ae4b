import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

@Suite("Trust-decision cache")
struct TrustDecisionCacheTests {
    static let host = Chains.host
    let chain = Chains[.valid]

    func manager(for chain: TestChain) throws -> ServerTrustManager {
        try ServerTrustManager(evaluators: ["**.bulwark.test": DefaultTrustEvaluator(roots: Chains.roots(chain))])
    }

    @Test func sameChainAndHostIsAHitWithTheSameDecision() async throws {
        let cache = TrustDecisionCache()
        let manager = try self.manager(for: self.chain)
        let first = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        #expect(first.decision.isTrusted)
        #expect(!first.cached)
        let second = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        #expect(second.cached)
        #expect(second.decision.trustedChain?.certificates == first.decision.trustedChain?.certificates)
        #expect(second.decision.trustedChain?.host == Self.host)
        let der = self.chain.presentedChain.map(\.derBytes)
        let key = cache.key(host: Self.host, presentedChain: der, manager: manager)
        #expect(cache.cachedDecision(for: key)?.presented == self.chain.presentedChain)
    }

    @Test func anotherChainIsAMiss() async throws {
        let cache = TrustDecisionCache()
        let manager = try self.manager(for: self.chain)
        _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        // The same leaf without its intermediate is another chain (and is refused: no path to the root).
        let leafOnly = await cache.evaluate([self.chain.leaf.certificate], forHost: Self.host, with: manager)
        #expect(!leafOnly.cached)
        #expect(!leafOnly.decision.isTrusted)
        // A certificate appended by the server makes another chain too.
        let extra = self.chain.presentedChain + [Chains[.wrongHost].leaf.certificate]
        let appended = await cache.evaluate(extra, forHost: Self.host, with: manager)
        #expect(!appended.cached)
        #expect(appended.decision.isTrusted)
        #expect(cache.count == 2)
    }

    @Test func digestSeparatesCertificateBoundaries() {
        #expect(
            TrustDecisionCache.digest(ofPresentedChain: [[1, 2], [3]])
                != TrustDecisionCache.digest(ofPresentedChain: [[1], [2, 3]])
        )
        #expect(TrustDecisionCache.digest(ofPresentedChain: [[1, 2, 3]]).count == 32)
    }

    @Test func anotherHostIsAMiss() async throws {
        let cache = TrustDecisionCache()
        let manager = try self.manager(for: self.chain)
        _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        // Another host matching the same pattern is evaluated again, and refused: the leaf does not name it.
        let other = await cache.evaluate(self.chain.presentedChain, forHost: "other.bulwark.test", with: manager)
        #expect(!other.cached)
        let reasons = other.decision.refusal?.reasons ?? []
        #expect(reasons.contains { $0.code == "hostname_mismatch" })
    }

    @Test func anotherManagerIsAMissButACopyIsAHit() async throws {
        let cache = TrustDecisionCache()
        let manager = try self.manager(for: self.chain)
        _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        let copy = manager
        #expect(await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: copy).cached)
        let pinned = try ServerTrustManager(evaluators: [
            "**.bulwark.test": PublicKeysTrustEvaluator(
                pinSet: try PinSet([Pin.publicKey(of: Chains[.wrongHost].root.certificate)], allowSinglePin: true),
                roots: Chains.roots(self.chain)
            )
        ])
        let result = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: pinned)
        #expect(!result.cached)
        #expect(!result.decision.isTrusted)
    }

    @Test func refusalsAreNeverCached() async throws {
        let cache = TrustDecisionCache()
        let wrongHost = Chains[.wrongHost]
        let manager = try self.manager(for: wrongHost)
        for _ in 0..<3 {
            let result = await cache.evaluate(wrongHost.presentedChain, forHost: Self.host, with: manager)
            #expect(!result.cached)
            #expect(!result.decision.isTrusted)
        }
        #expect(cache.count == 0)
        let key = cache.key(host: Self.host, presentedChain: wrongHost.presentedChain.map(\.derBytes), manager: manager)
        cache.store(
            .refused(TrustRefusal(host: Self.host, reasons: [.emptyChain], presentedChain: [])),
            presented: wrongHost.presentedChain,
            for: key
        )
        #expect(cache.count == 0)
        #expect(cache.cachedDecision(for: key) == nil)
    }

    @Test func entriesExpireAfterTheTimeToLive() async throws {
        let clock = ManualClock(Date())
        let cache = TrustDecisionCache(options: .init(timeToLive: 60), now: clock.function)
        let manager = try self.manager(for: self.chain)
        _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        clock.advance(by: 59)
        #expect(await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager).cached)
        clock.advance(by: 1)
        let expired = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        #expect(!expired.cached)
        #expect(expired.decision.isTrusted)
    }

    @Test func entriesNeverOutliveTheChain() async throws {
        // The leaf is valid for 30 days: a year-long time to live is cut to the leaf's notValidAfter.
        let clock = ManualClock(Date())
        let cache = TrustDecisionCache(options: .init(timeToLive: 365 * 86_400), now: clock.function)
        let manager = try self.manager(for: self.chain)
        _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        let leafExpiry = self.chain.leaf.certificate.notValidAfter
        clock.advance(by: leafExpiry.timeIntervalSince(clock.now) - 1)
        #expect(await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager).cached)
        clock.advance(by: 2)
        let result = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        #expect(!result.cached)
        #expect(!result.decision.isTrusted)
    }

    @Test func aClockGoingBackIsAMiss() async throws {
        let clock = ManualClock(Date())
        let cache = TrustDecisionCache(now: clock.function)
        let manager = try self.manager(for: self.chain)
        _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
        clock.advance(by: -10)
        #expect(!(await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager).cached))
    }

    @Test func capacityEvictsTheLeastRecentlyUsed() async throws {
        let cache = TrustDecisionCache(options: .init(capacity: 2))
        let hosts = ["a.\(Self.host)", "b.\(Self.host)", "c.\(Self.host)"]
        let wildcard = Chains[.wildcardSAN]
        let wildcardManager = try self.manager(for: wildcard)
        func evaluate(_ host: String) async -> Bool {
            let result = await cache.evaluate(wildcard.presentedChain, forHost: host, with: wildcardManager)
            #expect(result.decision.isTrusted, "\(host)")
            return result.cached
        }
        #expect(!(await evaluate(hosts[0])))
        #expect(!(await evaluate(hosts[1])))
        #expect(await evaluate(hosts[0]))  // a is now more recently used than b
        #expect(!(await evaluate(hosts[2])))  // evicts b
        #expect(cache.count == 2)
        #expect(await evaluate(hosts[0]))
        #expect(await evaluate(hosts[2]))
        #expect(!(await evaluate(hosts[1])))
    }

    @Test func zeroCapacityOrTimeToLiveStoresNothing() async throws {
        let manager = try self.manager(for: self.chain)
        for options in [TrustDecisionCache.Options(capacity: 0), TrustDecisionCache.Options(timeToLive: 0)] {
            let cache = TrustDecisionCache(options: options)
            _ = await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager)
            #expect(!(await cache.evaluate(self.chain.presentedChain, forHost: Self.host, with: manager).cached))
            #expect(cache.count == 0)
        }
    }
}
