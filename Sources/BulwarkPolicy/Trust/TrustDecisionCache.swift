import Crypto
import Foundation
import X509

/// Remembers *trusted* decisions for a short time, so that a new connection to a server that presents the same
/// chain as a moment ago skips path building and signature checks, as Chrome's certificate verifier cache does.
///
/// What makes a hit safe:
/// - **The key is exact.** It is the host, the SHA-256 of the whole presented chain (every certificate's DER, in
///   order, each with its length) and the trust manager that chose the evaluator. A different certificate, an
///   extra or missing intermediate, another host or another policy is a miss and gets a full evaluation.
/// - **Only trusted decisions are stored.** A refusal is evaluated again on every handshake, so a refusal is never
///   served from memory and a server cannot make a refusal stick either.
/// - **Entries are short-lived.** An entry expires after ``Options/timeToLive`` (five minutes by default), never
///   outlives the earliest `notValidAfter` of the verified chain, and never outlives the decision's own
///   ``TrustedChain/validUntil`` (a pin set's expiration date). An entry created in the future (the clock went back)
///   is dropped.
/// - **It is bounded.** At most ``Options/capacity`` entries; the least recently used one is evicted first.
///
/// What a hit gives up: anything that could turn a trusted chain into a refused one without the chain changing is
/// noticed only when the entry expires. For Bulwark's own evaluators that is only the passing of time, which the
/// expiry above covers: the certificates' validity, and a pin set's expiration date. The latter can turn a trusted
/// chain into a refused one: with `performDefaultValidation: false` the pins alone made the chain trusted, and once
/// they expire the chain must pass default validation. So a pinning evaluator gives its pin set's expiration as the
/// decision's ``TrustedChain/validUntil``, and no entry is served past it.
///
/// > Warning: An evaluator that consults outside state (revocation, a system trust store that changes while the
/// > process runs) is asked again only when an entry expires: keep ``Options/timeToLive`` short, or turn the cache
/// > off, when that delay matters.
///
/// A manager's evaluators cannot change after it is created, and each manager (with its copies) has its own
/// identity in the key, so one cache can serve several managers. A key keeps its manager's identity alive, so a
/// manager created after another was freed can never be taken for it.
///
/// `BulwarkClient` keeps one per client (`Configuration.trustDecisionCache`, on by default) and still reports a
/// security event for every handshake, with the detail `cached` set to `true` on a hit.
public final class TrustDecisionCache: Sendable {
    /// Limits of a ``TrustDecisionCache``.
    public struct Options: Sendable, Hashable {
        /// How long a trusted decision is reused, at most; a value of zero or less stores nothing.
        public var timeToLive: TimeInterval
        /// The most decisions kept; zero or less stores nothing.
        public var capacity: Int

        /// Five minutes, 256 decisions.
        public init(timeToLive: TimeInterval = 300, capacity: Int = 256) {
            self.timeToLive = timeToLive
            self.capacity = capacity
        }
    }

    /// What a decision is stored under: host, presented chain and the manager that chose the evaluator.
    public struct Key: Hashable, Sendable {
        /// The host the chain was evaluated for, as given to the manager.
        public let host: String
        /// SHA-256 over the presented chain (see ``TrustDecisionCache/digest(ofPresentedChain:)``).
        public let chainDigest: [UInt8]
        let manager: ServerTrustManager.Identity
    }

    /// A stored decision.
    public struct Hit: Sendable {
        /// The presented chain, parsed, leaf first.
        public let presented: [Certificate]
        /// The trusted decision, with its notices.
        public let chain: TrustedChain
    }

    private struct Entry {
        var hit: Hit
        var storedAt: Date
        var expiresAt: Date
    }

    /// The cache's lifetime and size limits.
    public let options: Options
    private let now: @Sendable () -> Date
    private let entries: LockedValue<LeastRecentlyUsed<Key, Entry>>

    /// - Parameters:
    ///   - options: Lifetime and size limits.
    ///   - now: The clock; tests inject their own.
    public init(options: Options = Options(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.options = options
        self.now = now
        self.entries = LockedValue(LeastRecentlyUsed(capacity: options.capacity))
    }

    /// The number of stored decisions (including any that expired but were not looked up since).
    public var count: Int {
        self.entries.withLock { $0.count }
    }

    /// SHA-256 over the DER certificates of a presented chain, in order, each preceded by its length (so that no
    /// two different chains share an input).
    public static func digest(ofPresentedChain chain: [[UInt8]]) -> [UInt8] {
        var hasher = SHA256()
        for der in chain {
            var length = UInt32(truncatingIfNeeded: der.count).bigEndian
            withUnsafeBytes(of: &length) { hasher.update(bufferPointer: $0) }
            der.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        }
        return Array(hasher.finalize())
    }

    /// The key for `host`, a presented chain given as DER and the manager that evaluates it.
    public func key(host: String, presentedChain der: [[UInt8]], manager: ServerTrustManager) -> Key {
        Key(host: host, chainDigest: Self.digest(ofPresentedChain: der), manager: manager.identity)
    }

    /// The stored trusted decision for `key`, if there is one that has not expired.
    public func cachedDecision(for key: Key) -> Hit? {
        let now = self.now()
        return self.entries.withLock { entries in
            guard let entry = entries.value(forKey: key) else { return nil }
            guard now < entry.expiresAt, now >= entry.storedAt else {
                entries.removeValue(forKey: key)
                return nil
            }
            return entry.hit
        }
    }

    /// Stores `decision` under `key` if it is trusted; a refusal is never stored.
    public func store(_ decision: TrustDecision, presented: [Certificate], for key: Key) {
        guard case .trusted(let chain) = decision, self.options.capacity > 0, self.options.timeToLive > 0 else {
            return
        }
        let now = self.now()
        var expiresAt = now.addingTimeInterval(self.options.timeToLive)
        for certificate in chain.certificates where certificate.notValidAfter < expiresAt {
            expiresAt = certificate.notValidAfter
        }
        if let validUntil = chain.validUntil, validUntil < expiresAt {
            expiresAt = validUntil
        }
        guard expiresAt > now else { return }
        self.entries.withLock {
            // A full cache gives up an expired decision before the least recently used live one.
            $0.insert(
                Entry(hit: Hit(presented: presented, chain: chain), storedAt: now, expiresAt: expiresAt),
                forKey: key,
                evictingFirst: { now >= $0.expiresAt || now < $0.storedAt }
            )
        }
    }

    /// Forgets every decision.
    public func removeAll() {
        self.entries.withLock { $0.removeAll() }
    }

    /// Evaluates `chain` for `host` with `manager`, or returns the stored decision. `cached` tells which.
    public func evaluate(
        _ chain: [Certificate],
        forHost host: String,
        with manager: ServerTrustManager
    ) async -> (decision: TrustDecision, cached: Bool) {
        let key = self.key(host: host, presentedChain: chain.map(\.derBytes), manager: manager)
        if let hit = self.cachedDecision(for: key) {
            return (.trusted(hit.chain), true)
        }
        let decision = await manager.evaluate(chain, forHost: host, at: self.now())
        self.store(decision, presented: chain, for: key)
        return (decision, false)
    }
}
