import Foundation
import X509

/// Why a server's certificate chain was not trusted: one value per thing that failed.
public enum TrustFailureReason: Hashable, Sendable, CustomStringConvertible {
    /// The server presented no certificate.
    case emptyChain
    /// The server presented more certificates than the evaluator accepts.
    case chainTooLong(presented: Int, limit: Int)
    /// No path from the leaf to a trust anchor satisfied the validation rules; `details` says why each
    /// candidate path failed, or that no issuer was found.
    case untrustedChain(details: [String])
    /// A certificate of the chain had expired at the time of evaluation.
    case expired(certificate: String, notValidAfter: Date, evaluatedAt: Date)
    /// A certificate of the chain was not yet valid at the time of evaluation.
    case notYetValid(certificate: String, notValidBefore: Date, evaluatedAt: Date)
    /// A certificate of the chain holds a key too weak to trust, such as an RSA key of fewer than 2048 bits.
    /// `keyType` names the algorithm ("RSA"), `bits` its size and `minimumBits` the least that is accepted.
    case weakKey(certificate: String, keyType: String, bits: Int, minimumBits: Int)
    /// A certificate of the chain is signed with an algorithm that is broken or not accepted (SHA-1, MD5);
    /// `algorithm` names it in words ("SHA-1 with RSA").
    case weakSignature(certificate: String, algorithm: String)
    /// The leaf certificate is not valid for the host: `names` are the names it is valid for.
    case hostnameMismatch(host: String, names: [String])
    /// The host name itself could not be used for validation.
    case invalidHost(host: String, detail: String)
    /// No certificate of the verified chain carries one of the configured public-key pins.
    case pinMismatch(PinMismatch)
    /// No certificate of the verified chain is one of the pinned certificates.
    case certificateNotPinned(PinMismatch)
    /// The host matches no evaluator and the trust manager requires every host to be evaluated.
    case hostNotEvaluated(host: String)
    /// The evaluator cannot decide because it was set up wrongly (for example a composite of no evaluators).
    case misconfigured(detail: String)

    /// A bounded, value-free label for metrics and logs (`"pin_mismatch"`, `"expired"`, …).
    public var shortDescription: String {
        switch self {
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
        }
    }

    public var description: String {
        switch self {
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
        }
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

/// The details of a pin failure, as OkHttp prints them: the host, the verified chain with each certificate's
/// pin and subject, and the pins configured for the host.
public struct PinMismatch: Hashable, Sendable {
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
