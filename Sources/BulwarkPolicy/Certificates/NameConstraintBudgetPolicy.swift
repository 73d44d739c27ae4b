import SwiftASN1
import X509

/// Refuses a path whose name constraints would take more than ``NameConstraintChecks/maximumComparisons``
/// comparisons to check (Go's limit), before swift-certificates' `RFC5280Policy` checks them: that check compares
/// every name of every certificate below a constrained CA with every constraint and has no limit of its own, so
/// a chain of a few thousand names and constraints (x509-limbo's `pathological::nc-dos-*`) cost seconds of CPU per
/// handshake. Must come before `RFC5280Policy` in the verifier's policy list (only ``PathAttemptRecorder``, which
/// checks nothing, comes before it).
struct NameConstraintBudgetPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard chain.count > 1, let failure = NameConstraintChecks.budgetFailure(chain) else { return .meetsPolicy }
        return .failsToMeetPolicy(reason: failure)
    }
}
