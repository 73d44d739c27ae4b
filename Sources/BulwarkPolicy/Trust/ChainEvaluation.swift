import Foundation
import X509

/// The steps every evaluator shares: verify a path, check the host, and shape the result into a decision.
enum ChainEvaluation {
    /// Verifies `chain` against `roots` and, when asked, the host. On failure the refusal lists every reason,
    /// including a host mismatch found while the chain itself was also refused.
    static func verify(
        _ chain: [Certificate],
        host: String,
        at time: Date,
        roots: TrustRoots,
        options: ValidationOptions,
        validateHost: Bool
    ) async -> Result<[Certificate], TrustRefusal> {
        let outcome = await ChainVerifier(roots: roots, options: options).verify(chain, at: time)
        var reasons: [TrustFailureReason] = []
        var verified: [Certificate] = []
        switch outcome {
        case .verified(let certificates): verified = certificates
        case .failed(let failures): reasons = failures
        }
        if validateHost, !chain.isEmpty, let mismatch = ServerIdentity.check(leafOf: chain, host: host) {
            reasons.insert(mismatch, at: 0)
        }
        if reasons.isEmpty {
            return .success(verified)
        }
        return .failure(self.refusal(host: host, reasons: reasons, presented: chain))
    }

    static func refusal(host: String, reasons: [TrustFailureReason], presented: [Certificate]) -> TrustRefusal {
        TrustRefusal(host: host, reasons: reasons, presentedCertificates: Array(presented.prefix(16)))
    }

    static func refused(_ reason: TrustFailureReason, host: String, presented: [Certificate]) -> TrustDecision {
        .refused(self.refusal(host: host, reasons: [reason], presented: presented))
    }
}
