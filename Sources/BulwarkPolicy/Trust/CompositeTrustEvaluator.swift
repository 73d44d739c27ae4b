import Foundation
import X509

/// Trusts a chain only if every evaluator trusts it. Evaluation stops at the first refusal, which is returned.
/// The trusted chain is the first evaluator's; the notices of all are kept, and the decision holds only until the
/// earliest ``TrustedChain/validUntil`` of its parts. A composite of no evaluators refuses.
public struct CompositeTrustEvaluator: ServerTrustEvaluating {
    /// The evaluators, each of which must trust the chain.
    public let evaluators: [any ServerTrustEvaluating]

    /// An evaluator that trusts a chain only when every one of `evaluators` does.
    public init(_ evaluators: [any ServerTrustEvaluating]) {
        self.evaluators = evaluators
    }

    /// Asks each evaluator in order and refuses at the first refusal; a trusted decision carries the notices of
    /// all of them.
    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        guard !self.evaluators.isEmpty else {
            return ChainEvaluation.refused(
                .misconfigured(detail: "a composite evaluator needs at least one evaluator"),
                host: host,
                presented: chain
            )
        }
        var first: TrustedChain?
        var notices: [TrustNotice] = []
        var validUntil: Date?
        for evaluator in self.evaluators {
            switch await evaluator.evaluate(chain, forHost: host, at: time) {
            case .refused(let refusal):
                return .refused(refusal)
            case .trusted(let trusted):
                if first == nil { first = trusted }
                notices.append(contentsOf: trusted.notices)
                if let until = trusted.validUntil, until < validUntil ?? .distantFuture { validUntil = until }
            }
        }
        var result = first!
        result.notices = notices
        result.validUntil = validUntil
        return .trusted(result)
    }
}

extension ServerTrustEvaluating where Self == CompositeTrustEvaluator {
    /// All of `evaluators` must trust the chain; see ``CompositeTrustEvaluator``.
    public static func composite(_ evaluators: [any ServerTrustEvaluating]) -> Self {
        CompositeTrustEvaluator(evaluators)
    }
}
