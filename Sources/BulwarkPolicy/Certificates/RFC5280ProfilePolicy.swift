import SwiftASN1
import X509

/// What ``ValidationProfile/rfc5280`` adds to swift-certificates' `RFC5280Policy`, in place of ``WebPKIPolicy``: the
/// parts of RFC 5280's path validation (section 6.1, default inputs) that `RFC5280Policy` leaves out.
///
/// - A CA below the anchor whose key usage is present must allow `keyCertSign` (6.1.4 (n)).
/// - The leaf's extended key usage, when present, must allow the purpose asked for or `anyExtendedKeyUsage`
///   (4.2.1.12); so must a CA's, as OpenSSL and browsers require.
/// - Certificate policies are not processed. With the default inputs (any policy acceptable, no explicit policy
///   required) a path's validity depends on them only when a CA of the path requires an explicit policy
///   (`requireExplicitPolicy` in its policy constraints): such a path is refused, naming the certificate and the
///   feature, rather than judged without the policy tree RFC 5280 would build (fail closed). A mapping to or from
///   anyPolicy is refused whatever the inputs (6.1.4 (a)). The policy extensions are otherwise handled here, which is
///   why a critical one is not refused as unknown.
/// - The name rules ``NameConstraintChecks`` adds to swift-certificates' (a wildcard that covers an excluded name),
///   so that a host checked under this profile gets them too.
///
/// The anchor's own extensions are not processed (RFC 5280 6.1: a trust anchor is a name and a key).
struct RFC5280ProfilePolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        .X509ExtensionID.extendedKeyUsage,
        .X509ExtensionID.subjectAlternativeName,
        .X509ExtensionID.certificatePolicies,
        .X509ExtensionID.policyMappings,
        .X509ExtensionID.policyConstraints,
        .X509ExtensionID.inhibitAnyPolicy,
    ]

    var purpose: CertificatePurpose

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let count = chain.count
        var parsedChain: [ParsedExtensions] = []
        var constrained = false
        for index in 0..<count {
            let parsed = ParsedExtensions.of(chain, at: index)
            parsedChain.append(parsed)
            if index > 0, (try? parsed.nameConstraints.get()) != nil { constrained = true }
            // The anchor is a name and a key: its extensions are not processed.
            guard index < count - 1 || count == 1 else { continue }
            let certificate = chain[index]
            if let failure = Self.requiresExplicitPolicy(certificate) ?? Self.mapsAnyPolicy(certificate) {
                return .failsToMeetPolicy(reason: "\(certificate.subject): \(failure)")
            }
            // An extension this profile reads must decode: an undecodable key usage must not pass as "no limit".
            if let failure = WebPKIPolicy.checkParsableExtensions(parsed) {
                return .failsToMeetPolicy(reason: "\(certificate.subject): \(failure)")
            }
            if index > 0, let failure = WebPKIPolicy.checkCertificateSigning(parsed) {
                return .failsToMeetPolicy(reason: "\(certificate.subject): \(failure)")
            }
            if index > 0, !WebPKIPolicy.intermediateAllows(self.purpose, parsed) {
                return .failsToMeetPolicy(
                    reason: "\(certificate.subject): extended key usage does not allow \(Self.usageName(self.purpose))"
                )
            }
            if index == 0, let failure = Self.checkPurpose(self.purpose, parsed) {
                return .failsToMeetPolicy(reason: "\(certificate.subject): \(failure)")
            }
        }
        // The name rules the web PKI profile applies beyond swift-certificates' (a wildcard that covers an excluded
        // name among them): a host checked under this profile gets them too.
        if count > 1, constrained, let failure = NameConstraintChecks.check(chain, parsed: parsedChain) {
            return .failsToMeetPolicy(reason: failure)
        }
        return .meetsPolicy
    }

    static func usageName(_ purpose: CertificatePurpose) -> String {
        switch purpose.backing {
        case .server: "serverAuth"
        case .client: "clientAuth"
        case .any: "any use"
        }
    }

    /// Why a certificate's policy mappings are refused: RFC 5280 6.1.4 (a) forbids mapping to or from anyPolicy.
    static func mapsAnyPolicy(_ certificate: Certificate) -> String? {
        guard let mappings = certificate.extensions[oid: .X509ExtensionID.policyMappings] else { return nil }
        // PolicyMappings ::= SEQUENCE SIZE (1..MAX) OF SEQUENCE { issuerDomainPolicy, subjectDomainPolicy }
        guard let node = try? DER.parse(mappings.value), case .constructed(let pairs) = node.content else {
            return "malformed policy mappings extension"
        }
        let anyPolicy: ASN1ObjectIdentifier = [2, 5, 29, 32, 0]
        for pair in pairs {
            guard case .constructed(let policies) = pair.content else { return "malformed policy mappings extension" }
            for policy in policies {
                guard let oid = try? ASN1ObjectIdentifier(derEncoded: policy) else {
                    return "malformed policy mappings extension"
                }
                if oid == anyPolicy {
                    return "maps anyPolicy in its policy mappings, which RFC 5280 (6.1.4 (a)) forbids"
                }
            }
        }
        return nil
    }

    /// Why a leaf's extended key usage does not allow `purpose`, or nil.
    static func checkPurpose(_ purpose: CertificatePurpose, _ parsed: ParsedExtensions) -> String? {
        let usage: ExtendedKeyUsage.Usage
        switch purpose.backing {
        case .server: usage = .serverAuth
        case .client: usage = .clientAuth
        case .any: return nil
        }
        switch parsed.extendedKeyUsage {
        case .success(nil): return nil
        case .success(let eku?):
            return eku.contains(usage) || eku.contains(.any)
                ? nil : "extended key usage does not allow \(usage == .serverAuth ? "serverAuth" : "clientAuth")"
        case .failure: return "malformed extended key usage extension"
        }
    }

    /// Why a certificate's policy constraints put the path beyond this profile (they require an explicit
    /// policy), or nil.
    static func requiresExplicitPolicy(_ certificate: Certificate) -> String? {
        guard let constraints = certificate.extensions[oid: .X509ExtensionID.policyConstraints] else { return nil }
        // PolicyConstraints ::= SEQUENCE { requireExplicitPolicy [0] SkipCerts OPTIONAL,
        //                                  inhibitPolicyMapping  [1] SkipCerts OPTIONAL }
        guard let node = try? DER.parse(constraints.value), case .constructed(let children) = node.content else {
            return "malformed policy constraints extension"
        }
        for child in children where child.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            return "requires an explicit certificate policy (policy constraints), and Bulwark does not process "
                + "certificate policies: the path is refused rather than judged without them"
        }
        return nil
    }
}

extension ASN1ObjectIdentifier.X509ExtensionID {
    static let certificatePolicies: ASN1ObjectIdentifier = [2, 5, 29, 32]
    static let policyMappings: ASN1ObjectIdentifier = [2, 5, 29, 33]
    static let inhibitAnyPolicy: ASN1ObjectIdentifier = [2, 5, 29, 54]
}
