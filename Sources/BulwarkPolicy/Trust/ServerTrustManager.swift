import Foundation
import X509

/// Chooses the evaluator for each host by host pattern, and refuses hosts it has no evaluator for.
///
/// ```swift
/// let manager = try ServerTrustManager(evaluators: [
///     "api.example.com": .publicKeys(try PinSet(["sha256/…", "sha256/…"])),
///     "**.cdn.example.com": .default(),
/// ])
/// ```
///
/// The most specific matching pattern wins (see ``HostPattern``). With `allHostsMustBeEvaluated` (the default,
/// as in Alamofire) a host matching no pattern is refused with ``TrustFailureReason/hostNotEvaluated(host:)``;
/// without it such hosts get `defaultEvaluator`.
public struct ServerTrustManager: Sendable {
    /// Whether a host that matches no pattern is refused (the default) rather than given ``defaultEvaluator``.
    public let allHostsMustBeEvaluated: Bool
    /// The evaluator for hosts matching no pattern when `allHostsMustBeEvaluated` is `false`.
    public let defaultEvaluator: any ServerTrustEvaluating
    private let matcher: HostMatcher<any ServerTrustEvaluating>
    /// Whether an evaluator this manager can choose verifies against the system roots (see
    /// ``SystemTrustRootsLoading``): the client starts reading them when it is made.
    package let namesSystemRoots: Bool
    /// Tells managers apart (copies share it): part of a ``TrustDecisionCache`` key.
    private let token = Token()
    /// The last host that matched a pattern, exactly as given, with its match: a client asks for the same host
    /// on every connection, and the match (canonicalizing the host and walking the pattern trie) is a pure
    /// function of the host and the patterns, which never change. A host matching no pattern is not remembered.
    private let lastMatch = LockedValue<RememberedMatch?>(nil)

    /// A host and the pattern and evaluator it matched (a class, not a tuple: a tuple in a generic box needs its
    /// type metadata looked up at run time on every use).
    private final class RememberedMatch: Sendable {
        let host: String
        let pattern: HostPattern
        let value: any ServerTrustEvaluating

        init(host: String, pattern: HostPattern, value: any ServerTrustEvaluating) {
            self.host = host
            self.pattern = pattern
            self.value = value
        }
    }

    fileprivate final class Token: Sendable {}

    /// A manager's identity: the same for a manager and its copies, different for any other manager. It holds the
    /// manager's token, so while a cache key names a manager no other manager can be allocated at its address.
    struct Identity: Hashable, Sendable {
        fileprivate let token: Token

        static func == (lhs: Identity, rhs: Identity) -> Bool { lhs.token === rhs.token }

        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self.token)) }
    }

    /// The same for a manager and its copies, different for any other manager, alive or freed.
    var identity: Identity { Identity(token: self.token) }

    /// Creates a manager from host patterns (see ``HostPattern``) and their evaluators.
    ///
    /// - Throws: ``HostPatternError`` naming the first invalid pattern.
    public init(
        allHostsMustBeEvaluated: Bool = true,
        evaluators: [String: any ServerTrustEvaluating],
        defaultEvaluator: any ServerTrustEvaluating = DefaultTrustEvaluator()
    ) throws(HostPatternError) {
        var entries: [(HostPattern, any ServerTrustEvaluating)] = []
        for (pattern, evaluator) in evaluators.sorted(by: { $0.key < $1.key }) {
            entries.append((try HostPattern(pattern), evaluator))
        }
        self.init(
            allHostsMustBeEvaluated: allHostsMustBeEvaluated,
            patterns: entries,
            defaultEvaluator: defaultEvaluator
        )
    }

    /// Creates a manager from parsed host patterns and their evaluators; a later entry for the same pattern
    /// replaces an earlier one.
    public init(
        allHostsMustBeEvaluated: Bool = true,
        patterns: [(HostPattern, any ServerTrustEvaluating)],
        defaultEvaluator: any ServerTrustEvaluating = DefaultTrustEvaluator()
    ) {
        self.allHostsMustBeEvaluated = allHostsMustBeEvaluated
        self.defaultEvaluator = defaultEvaluator
        self.matcher = HostMatcher(patterns)
        self.namesSystemRoots =
            patterns.contains { SystemTrustRootsLoading.namesSystemRoots($0.1) }
            || (!allHostsMustBeEvaluated && SystemTrustRootsLoading.namesSystemRoots(defaultEvaluator))
    }

    /// The evaluator for `host`, or `nil` when the host must be refused.
    public func evaluator(forHost host: String) -> (any ServerTrustEvaluating)? {
        if let match = self.match(host) {
            return match.value
        }
        return self.allHostsMustBeEvaluated ? nil : self.defaultEvaluator
    }

    /// The pattern that chose `host`'s evaluator, or nil when the host matches none.
    public func pattern(forHost host: String) -> HostPattern? {
        self.match(host)?.pattern
    }

    /// `matcher.match(host)`, from ``lastMatch`` when `host` is the last host that matched.
    private func match(_ host: String) -> (pattern: HostPattern, value: any ServerTrustEvaluating)? {
        if let last = self.lastMatch.withLock({ $0 }), last.host == host {
            return (last.pattern, last.value)
        }
        guard let match = self.matcher.match(host) else { return nil }
        let remembered = RememberedMatch(host: host, pattern: match.pattern, value: match.value)
        self.lastMatch.withLock { $0 = remembered }
        return match
    }

    /// Evaluates `chain` for `host` with the host's evaluator.
    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date = Date()) async -> TrustDecision {
        guard let evaluator = self.evaluator(forHost: host) else {
            return ChainEvaluation.refused(.hostNotEvaluated(host: host), host: host, presented: chain)
        }
        return await evaluator.evaluate(chain, forHost: host, at: time)
    }
}
