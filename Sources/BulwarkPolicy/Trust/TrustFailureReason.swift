import Foundation
import X509

/// Why a server's certificate chain was not trusted: one value per thing that failed.
///
/// A struct wrapping a private enum, not a public enum, so that a new reason can be added without breaking the
/// exhaustive `switch` of every user. swift-nio-ssl's `SSLErrors.swift` records what a shipped public enum costs:
/// `BoringSSLError` could not gain a case for `SSL_ERROR_WANT_PRIVATE_KEY_OPERATION` ("This is a terrible hack: we
/// can't add cases to this enum, so we can't represent this directly"), and the errors that came after `NIOSSLError`
/// went into `NIOSSLExtraError`, a struct over a private enum, "an extensible error object that allows us to evolve
/// it going forward". swift-certificates' `PolicyFailureReason` is a struct too.
///
/// Make a reason with the leading-dot factories (`.expired(certificate:notValidAfter:evaluatedAt:)`, `.emptyChain`);
/// tell reasons apart by ``code``, a stable label, and read their data through the accessors (``certificate``,
/// ``host``, ``pinMismatch``, …), `nil` or empty for reasons that do not carry it. Two reasons are equal when they
/// are the same reason with the same data.
public struct TrustFailureReason: Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case emptyChain
        case chainTooLong(presented: Int, limit: Int)
        case untrustedChain(details: [String])
        case expired(certificate: String, notValidAfter: Date, evaluatedAt: Date)
        case notYetValid(certificate: String, notValidBefore: Date, evaluatedAt: Date)
        case weakKey(certificate: String, keyType: String, bits: Int, minimumBits: Int)
        case weakSignature(certificate: String, algorithm: String)
        case hostnameMismatch(host: String, names: [String])
        case invalidHost(host: String, detail: String)
        case pinMismatch(PinMismatch)
        case certificateNotPinned(PinMismatch)
        case hostNotEvaluated(host: String)
        case misconfigured(detail: String)
        case revoked(certificate: String, serialNumber: String, revokedAt: Date, reason: String?, source: String)
        case revocationUnknown(certificate: String, detail: String)
        case certificateTransparencyNotMet(certificate: String, detail: String)
    }

    private let backing: Backing

    private init(_ backing: Backing) {
        self.backing = backing
    }

    /// The server presented no certificate.
    public static let emptyChain = TrustFailureReason(.emptyChain)

    /// The server presented more certificates than the evaluator accepts.
    public static func chainTooLong(presented: Int, limit: Int) -> TrustFailureReason {
        TrustFailureReason(.chainTooLong(presented: presented, limit: limit))
    }

    /// No path from the leaf to a trust anchor satisfied the validation rules; `details` says why each candidate
    /// path failed, or that no issuer was found.
    public static func untrustedChain(details: [String]) -> TrustFailureReason {
        TrustFailureReason(.untrustedChain(details: details))
    }

    /// A certificate of the chain had expired at the time of evaluation.
    public static func expired(certificate: String, notValidAfter: Date, evaluatedAt: Date) -> TrustFailureReason {
        TrustFailureReason(.expired(certificate: certificate, notValidAfter: notValidAfter, evaluatedAt: evaluatedAt))
    }

    /// A certificate of the chain was not yet valid at the time of evaluation.
    public static func notYetValid(certificate: String, notValidBefore: Date, evaluatedAt: Date) -> TrustFailureReason {
        TrustFailureReason(
            .notYetValid(certificate: certificate, notValidBefore: notValidBefore, evaluatedAt: evaluatedAt)
        )
    }

    /// A certificate of the chain holds a key too weak to trust, such as an RSA key of fewer than 2048 bits.
    /// `keyType` names the algorithm ("RSA"), `bits` its size and `minimumBits` the least that is accepted.
    public static func weakKey(certificate: String, keyType: String, bits: Int, minimumBits: Int) -> TrustFailureReason
    {
        TrustFailureReason(.weakKey(certificate: certificate, keyType: keyType, bits: bits, minimumBits: minimumBits))
    }

    /// A certificate of the chain is signed with an algorithm that is broken or not accepted (SHA-1, MD5);
    /// `algorithm` names it in words ("SHA-1 with RSA").
    public static func weakSignature(certificate: String, algorithm: String) -> TrustFailureReason {
        TrustFailureReason(.weakSignature(certificate: certificate, algorithm: algorithm))
    }

    /// The leaf certificate is not valid for the host: `names` are the names it is valid for.
    public static func hostnameMismatch(host: String, names: [String]) -> TrustFailureReason {
        TrustFailureReason(.hostnameMismatch(host: host, names: names))
    }

    /// The host name itself could not be used for validation.
    public static func invalidHost(host: String, detail: String) -> TrustFailureReason {
        TrustFailureReason(.invalidHost(host: host, detail: detail))
    }

    /// No certificate of the verified chain carries one of the configured public-key pins.
    public static func pinMismatch(_ mismatch: PinMismatch) -> TrustFailureReason {
        TrustFailureReason(.pinMismatch(mismatch))
    }

    /// No certificate of the verified chain is one of the pinned certificates.
    public static func certificateNotPinned(_ mismatch: PinMismatch) -> TrustFailureReason {
        TrustFailureReason(.certificateNotPinned(mismatch))
    }

    /// The host matches no evaluator and the trust manager requires every host to be evaluated.
    public static func hostNotEvaluated(host: String) -> TrustFailureReason {
        TrustFailureReason(.hostNotEvaluated(host: host))
    }

    /// The evaluator cannot decide because it was set up wrongly (for example a composite of no evaluators).
    public static func misconfigured(detail: String) -> TrustFailureReason {
        TrustFailureReason(.misconfigured(detail: detail))
    }

    /// A certificate of the verified chain (with this serial number) was revoked at `revokedAt`, according to
    /// `source` (a revocation list's issuer or an OCSP responder, and the method), for `reason` when the source gives
    /// one.
    public static func revoked(
        certificate: String,
        serialNumber: String,
        revokedAt: Date,
        reason: String?,
        source: String
    )
        -> TrustFailureReason
    {
        TrustFailureReason(
            .revoked(
                certificate: certificate,
                serialNumber: serialNumber,
                revokedAt: revokedAt,
                reason: reason,
                source: source
            )
        )
    }

    /// Hard revocation checking could not establish a certificate's status; `detail` says why.
    public static func revocationUnknown(certificate: String, detail: String) -> TrustFailureReason {
        TrustFailureReason(.revocationUnknown(certificate: certificate, detail: detail))
    }

    /// The leaf's embedded SCTs do not meet the Certificate Transparency policy (enforced); `detail` names the SCTs
    /// found, their logs and what the policy needed.
    public static func certificateTransparencyNotMet(certificate: String, detail: String) -> TrustFailureReason {
        TrustFailureReason(.certificateTransparencyNotMet(certificate: certificate, detail: detail))
    }

    /// A stable, bounded, value-free label of the reason, for metrics, logs and comparisons: `empty_chain`,
    /// `chain_too_long`, `untrusted_chain`, `expired`, `not_yet_valid`, `weak_key`, `weak_signature`,
    /// `hostname_mismatch`, `invalid_host`, `pin_mismatch`, `certificate_not_pinned`, `host_not_evaluated`,
    /// `misconfigured`, `revoked` or `revocation_unknown`. A code, once published, keeps its meaning; new reasons
    /// bring new codes.
    public var code: String {
        switch self.backing {
        case .emptyChain: return "empty_chain"
        case .chainTooLong: return "chain_too_long"
        case .untrustedChain: return "untrusted_chain"
        case .expired: return "expired"
        case .notYetValid: return "not_yet_valid"
        case .weakKey: return "weak_key"
        case .weakSignature: return "weak_signature"
        case .hostnameMismatch: return "hostname_mismatch"
        case .invalidHost: return "invalid_host"
        case .pinMismatch: return "pin_mismatch"
        case .certificateNotPinned: return "certificate_not_pinned"
        case .hostNotEvaluated: return "host_not_evaluated"
        case .misconfigured: return "misconfigured"
        case .revoked: return "revoked"
        case .revocationUnknown: return "revocation_unknown"
        case .certificateTransparencyNotMet: return "ct_policy_not_met"
        }
    }

    /// The same as ``code``: a bounded, value-free label for metrics and logs (`"pin_mismatch"`, `"expired"`, …).
    public var shortDescription: String { self.code }

    /// The subject of the certificate the reason is about, for `expired`, `not_yet_valid`, `weak_key`,
    /// `weak_signature`, `revoked` and `revocation_unknown`; `nil` for the other reasons.
    public var certificate: String? {
        switch self.backing {
        case .expired(let certificate, _, _), .notYetValid(let certificate, _, _), .weakKey(let certificate, _, _, _),
            .weakSignature(let certificate, _), .revoked(let certificate, _, _, _, _),
            .revocationUnknown(let certificate, _), .certificateTransparencyNotMet(let certificate, _):
            return certificate
        default:
            return nil
        }
    }

    /// The host the reason names, for `hostname_mismatch`, `invalid_host` and `host_not_evaluated`; `nil` for the
    /// other reasons (a pin failure's host is in ``pinMismatch``).
    public var host: String? {
        switch self.backing {
        case .hostnameMismatch(let host, _), .invalidHost(let host, _), .hostNotEvaluated(let host):
            return host
        default:
            return nil
        }
    }

    /// Why each candidate path failed, for `untrusted_chain` (possibly empty); empty for the other reasons.
    public var details: [String] {
        if case .untrustedChain(let details) = self.backing { return details }
        return []
    }

    /// What is wrong, in words, for `invalid_host`, `misconfigured` and `revocation_unknown`; `nil` for the other reasons.
    public var detail: String? {
        switch self.backing {
        case .invalidHost(_, let detail), .misconfigured(let detail), .revocationUnknown(_, let detail),
            .certificateTransparencyNotMet(_, let detail):
            return detail
        default: return nil
        }
    }

    /// The revoked certificate's serial number, when, and why, for `revoked`; `nil` for the other reasons.
    public var revocation: (serialNumber: String, revokedAt: Date, reason: String?)? {
        if case .revoked(_, let serialNumber, let revokedAt, let reason, _) = self.backing {
            return (serialNumber, revokedAt, reason)
        }
        return nil
    }

    /// The details of the pin failure (host, verified chain, expected pins), for `pin_mismatch` and
    /// `certificate_not_pinned`; `nil` for the other reasons.
    public var pinMismatch: PinMismatch? {
        switch self.backing {
        case .pinMismatch(let mismatch), .certificateNotPinned(let mismatch): return mismatch
        default: return nil
        }
    }

    /// What failed, in words: the certificate, host or pins concerned and the limits that were not met.
    public var description: String {
        switch self.backing {
        case .emptyChain:
            return "the server presented no certificate"
        case .chainTooLong(let presented, let limit):
            return "the server presented \(presented) certificates; at most \(limit) are accepted"
        case .untrustedChain(let details):
            let why = details.isEmpty ? "" : ": " + details.joined(separator: "; ")
            return "no valid path from the server's certificate to a trusted root was found\(why)"
        case .expired(let certificate, let notValidAfter, let evaluatedAt):
            return "certificate \(certificate) expired at \(Self.format(notValidAfter)) "
                + "(evaluated at \(Self.format(evaluatedAt)))"
        case .notYetValid(let certificate, let notValidBefore, let evaluatedAt):
            return "certificate \(certificate) is not valid before \(Self.format(notValidBefore)) "
                + "(evaluated at \(Self.format(evaluatedAt)))"
        case .weakKey(let certificate, let keyType, let bits, let minimumBits):
            return "certificate \(certificate) has a key too weak to trust: \(keyType) \(bits)-bit key; "
                + "the minimum is \(minimumBits) bits"
        case .weakSignature(let certificate, let algorithm):
            return "certificate \(certificate) is signed with \(algorithm), which is not accepted"
        case .hostnameMismatch(let host, let names):
            let list = names.isEmpty ? "no subject alternative names" : names.joined(separator: ", ")
            return "certificate is not valid for host \(host); it is valid for: \(list)"
        case .invalidHost(let host, let detail):
            return "host \"\(host)\" cannot be validated: \(detail)"
        case .pinMismatch(let mismatch):
            return mismatch.message(title: "Certificate pinning failure!")
        case .certificateNotPinned(let mismatch):
            return mismatch.message(title: "Certificate pinning failure (pinned certificates)!")
        case .hostNotEvaluated(let host):
            return "no trust evaluator is configured for host \(host) and all hosts must be evaluated"
        case .misconfigured(let detail):
            return "trust evaluator misconfigured: \(detail)"
        case .revoked(let certificate, let serialNumber, let revokedAt, let reason, let source):
            let why = reason.map { " (reason: \($0))" } ?? ""
            return
                "certificate \(certificate) (serial \(serialNumber)) was revoked at \(Self.format(revokedAt))\(why), "
                + "according to \(source)"
        case .revocationUnknown(let certificate, let detail):
            return "the revocation status of certificate \(certificate) could not be established (\(detail)), and "
                + "hard revocation checking requires it"
        case .certificateTransparencyNotMet(let certificate, let detail):
            return "certificate \(certificate) does not meet the Certificate Transparency policy: \(detail)"
        }
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

/// The details of a pin failure, as OkHttp prints them: the host, the verified chain with each certificate's
/// pin and subject, and the pins configured for the host.
public struct PinMismatch: Hashable, Sendable {
    /// The host the pins are configured for.
    public var host: String
    /// The verified chain, leaf first.
    public var verifiedChain: [CertificateSummary]
    /// The pins that were expected.
    public var expectedPins: [Pin]
    /// The verified chain itself (for pin-failure reports, which carry it as PEM); the chain as presented when
    /// ``chainIsVerified`` is false.
    public var verifiedCertificates: [Certificate]
    /// Whether the chain was verified. It is not when a pinning evaluator without default validation found no
    /// pinned certificate in it: nothing was checked but the pins.
    public var chainIsVerified: Bool
    /// Whether the pins were enforced (false for a report-only pin set).
    public var enforced: Bool
    /// When the pin set stops being enforced, if ever.
    public var pinSetExpiration: Date?

    /// The details of one pin failure; see the properties.
    public init(
        host: String,
        verifiedChain: [CertificateSummary],
        expectedPins: [Pin],
        verifiedCertificates: [Certificate] = [],
        enforced: Bool = true,
        pinSetExpiration: Date? = nil,
        chainIsVerified: Bool = true
    ) {
        self.host = host
        self.verifiedChain = verifiedChain
        self.expectedPins = expectedPins
        self.verifiedCertificates = verifiedCertificates
        self.enforced = enforced
        self.pinSetExpiration = pinSetExpiration
        self.chainIsVerified = chainIsVerified
    }

    func message(title: String) -> String {
        var lines = [title, "  Peer certificate chain:"]
        for entry in self.verifiedChain {
            let pin = self.expectedPins.first?.kind == .certificate ? entry.certificatePin : entry.publicKeyPin
            lines.append("    \(pin): \(entry.subject)")
        }
        lines.append("  Pinned certificates for \(self.host):")
        for pin in self.expectedPins {
            lines.append("    \(pin)")
        }
        return lines.joined(separator: "\n")
    }
}
