import SwiftASN1
import X509

/// The first policy of the verifier ``ChainVerifier`` builds: it refuses nothing, and during a validation that asks
/// for it (``PathAttemptRecorder/recording(_:)``) it counts the candidate paths swift-certificates' `Verifier` put
/// to its policies, and keeps the first.
///
/// `Verifier.validate` puts a path to its policies only once it reaches a trust anchor, after every link's signature
/// verified and no issuer had an unhandled critical extension or repeated a certificate. So when a validation
/// succeeds with the only path it put to them, that path is what the `Verifier` builds for these exact certificates
/// and roots, whenever they are validated again and the path still meets the policies (see ``VerifiedPathMemo``).
struct PathAttemptRecorder: VerifierPolicy {
    /// The paths of one validation.
    final class Attempts: @unchecked Sendable {
        // Unchecked: one validation task writes it, and reads it after the validation returns.
        private(set) var count = 0
        private(set) var first: UnverifiedCertificateChain?

        func record(_ path: UnverifiedCertificateChain) {
            self.count += 1
            if self.count == 1 { self.first = path }
        }
    }

    @TaskLocal static var current: Attempts?

    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        Self.current?.record(chain)
        return .meetsPolicy
    }

    /// Runs `validation` with the paths it puts to the policies recorded in a new ``Attempts``.
    static func recording<Result>(
        _ validation: () async -> Result
    ) async -> (result: Result, attempts: Attempts) {
        let attempts = Attempts()
        let result = await Self.$current.withValue(attempts) { await validation() }
        return (result, attempts)
    }
}
