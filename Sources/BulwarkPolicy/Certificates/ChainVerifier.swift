import Foundation
@_spi(FixedExpiryValidationTime) import X509

/// Builds and checks a path from a presented chain to a trust anchor: RFC 5280 (signatures, validity, basic and
/// name constraints, key usage) plus the web PKI rules of ``WebPKIPolicy``.
struct ChainVerifier: Sendable {
    var roots: TrustRoots
    var options: ValidationOptions

    enum Outcome: Sendable {
        case verified([Certificate])
        case failed([TrustFailureReason])
    }

    func verify(_ presented: [Certificate], at exactTime: Date) async -> Outcome {
        // Certificates state validity in whole seconds; compare against the second the time falls in.
        let time = Date(timeIntervalSince1970: (exactTime.timeIntervalSince1970).rounded(.down))
        guard let leaf = presented.first else { return .failed([.emptyChain]) }
        guard presented.count <= self.options.maximumPresentedCertificates else {
            return .failed([
                .chainTooLong(presented: presented.count, limit: self.options.maximumPresentedCertificates)
            ])
        }
        if self.roots.explicitCertificates.contains(leaf) {
            return Self.verifyExplicitlyTrustedLeaf(leaf, at: time)
        }
        var verifier = Verifier(rootCertificates: self.roots.certificateStore) {
            // First: it bounds the cost of RFC5280Policy's name-constraint check.
            NameConstraintBudgetPolicy()
            RFC5280Policy(fixedExpiryValidationTime: time)
            WebPKIPolicy(
                requireServerAuth: self.options.requireServerAuthExtendedKeyUsage,
                maximumIntermediates: self.options.maximumIntermediates,
                enforcesRootProfile: self.options.enforcesRootProfile
            )
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(presented.dropFirst()))
        switch result {
        case .validCertificate(let chain):
            return .verified(Array(chain))
        case .couldNotValidate(let failures):
            return .failed(Self.explain(failures, presented: presented, at: time))
        }
    }

    /// A leaf that is itself one of the explicitly given anchors (a pinned self-signed certificate) is trusted by
    /// identity: RFC 5280 would demand that a self-signed anchor be a CA, which a server certificate is not. Its
    /// validity period and key strength are still checked.
    private static func verifyExplicitlyTrustedLeaf(_ leaf: Certificate, at time: Date) -> Outcome {
        let subject = String(describing: leaf.subject)
        if time > leaf.notValidAfter {
            return .failed([.expired(certificate: subject, notValidAfter: leaf.notValidAfter, evaluatedAt: time)])
        }
        if time < leaf.notValidBefore {
            return .failed([.notYetValid(certificate: subject, notValidBefore: leaf.notValidBefore, evaluatedAt: time)])
        }
        if let failure = WebPKIPolicy.checkKey(leaf) {
            return .failed([.untrustedChain(details: ["\(leaf.subject): \(failure)"])])
        }
        return .verified([leaf])
    }

    private static func explain(
        _ failures: [CertificateValidationResult.PolicyFailure],
        presented: [Certificate],
        at time: Date
    ) -> [TrustFailureReason] {
        var reasons: [TrustFailureReason] = []
        var candidates = presented
        for failure in failures {
            for certificate in failure.chain where !candidates.contains(certificate) {
                candidates.append(certificate)
            }
        }
        if let certificate = candidates.first(where: { time > $0.notValidAfter }) {
            reasons.append(
                .expired(
                    certificate: String(describing: certificate.subject),
                    notValidAfter: certificate.notValidAfter,
                    evaluatedAt: time
                )
            )
        } else if let certificate = candidates.first(where: { time < $0.notValidBefore }) {
            reasons.append(
                .notYetValid(
                    certificate: String(describing: certificate.subject),
                    notValidBefore: certificate.notValidBefore,
                    evaluatedAt: time
                )
            )
        }
        var details: [String] = []
        for failure in failures {
            let text = String(describing: failure.policyFailureReason)
            if !details.contains(text) { details.append(text) }
        }
        if details.isEmpty, let leaf = presented.first {
            let tip = presented.last ?? leaf
            details.append("no trust anchor or presented certificate issued \(tip.issuer) with a valid signature")
        }
        reasons.append(.untrustedChain(details: details))
        return reasons
    }
}
