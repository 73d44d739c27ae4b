import Foundation
import X509

/// The outcome of a server trust evaluation: a verified chain, or the reasons it was refused.
///
/// Frozen, unlike ``TrustFailureReason`` and ``TrustNotice``: a decision is either trusted or refused and will never
/// be anything else, so users may `switch` over it exhaustively. What may grow lives in the payloads.
@frozen
public enum TrustDecision: Sendable {
    /// The chain is trusted for the host. The connection may proceed.
    case trusted(TrustedChain)
    /// The chain is refused. The connection must be closed before any application data is sent.
    case refused(TrustRefusal)

    /// Whether the decision lets the connection proceed.
    public var isTrusted: Bool {
        if case .trusted = self { return true }
        return false
    }

    /// The refusal, if the chain was refused.
    public var refusal: TrustRefusal? {
        if case .refused(let refusal) = self { return refusal }
        return nil
    }

    /// The trusted chain, if the chain was trusted.
    public var trustedChain: TrustedChain? {
        if case .trusted(let chain) = self { return chain }
        return nil
    }
}

/// A chain that passed evaluation.
public struct TrustedChain: Sendable {
    /// The host it was evaluated for.
    public var host: String
    /// The verified chain, leaf first, ending at the trust anchor. Pins were matched against this chain, never
    /// against extra certificates the server appended.
    public var certificates: [Certificate]
    /// Things the caller should know although the chain was trusted (report-only violations, expired pin sets,
    /// disabled validation). Each becomes a security event.
    public var notices: [TrustNotice]
    /// When this decision may change although the chain does not, if the evaluator knows such a time: a pin set's
    /// expiration date, after which its pins are no longer enforced and the chain must pass default validation.
    /// `nil` when only the certificates' own validity limits the decision. A ``TrustDecisionCache`` never reuses a
    /// decision past this time.
    public var validUntil: Date?

    /// A trusted chain for `host`: the verified path, the decision's notices, and when it stops holding.
    public init(host: String, certificates: [Certificate], notices: [TrustNotice] = [], validUntil: Date? = nil) {
        self.host = host
        self.certificates = certificates
        self.notices = notices
        self.validUntil = validUntil
    }
}

/// Why a server's chain was refused, with everything needed to understand the refusal.
///
/// Thrown by the client as the error of a refused handshake; its description is OkHttp's pin-failure message
/// when pins failed.
public struct TrustRefusal: Error, Sendable, CustomStringConvertible {
    /// The host the chain was evaluated for.
    public var host: String
    /// Everything that failed, most important first.
    public var reasons: [TrustFailureReason]
    /// The chain the server presented, leaf first (it may contain certificates that are not part of any
    /// verified path).
    ///
    /// Summarized when read, not when the chain is refused: a summary formats two names and hashes the whole
    /// certificate, and most refusals are only counted or logged by their reason.
    public var presentedChain: [CertificateSummary] {
        get {
            switch self.presented {
            case .summaries(let summaries): return summaries
            case .certificates(let certificates): return certificates.map(CertificateSummary.init)
            }
        }
        set { self.presented = .summaries(newValue) }
    }

    /// The presented certificates themselves, when the refusal kept them rather than their summaries.
    package var presentedCertificates: [Certificate]? {
        if case .certificates(let certificates) = self.presented { return certificates }
        return nil
    }

    private enum Presented: Sendable {
        case summaries([CertificateSummary])
        case certificates([Certificate])
    }

    private var presented: Presented

    /// A refusal of the chain presented by `host`, with its reasons.
    public init(host: String, reasons: [TrustFailureReason], presentedChain: [CertificateSummary]) {
        self.host = host
        self.reasons = reasons
        self.presented = .summaries(presentedChain)
    }

    /// A refusal whose presented chain is summarized only when read.
    init(host: String, reasons: [TrustFailureReason], presentedCertificates: [Certificate]) {
        self.host = host
        self.reasons = reasons
        self.presented = .certificates(presentedCertificates)
    }

    /// A bounded label of the first reason, for metrics.
    public var shortDescription: String {
        self.reasons.first?.shortDescription ?? "refused"
    }

    /// The host and the reasons in words; for a pin failure, OkHttp's message: the verified chain as
    /// `sha256/…: subject` lines and the pins expected.
    public var description: String {
        var lines = ["server trust refused for \(self.host):"]
        for reason in self.reasons {
            lines.append(contentsOf: String(describing: reason).split(separator: "\n").map { "  " + $0 })
        }
        if !self.reasons.contains(where: { $0.pinMismatch != nil }), case let presentedChain = self.presentedChain,
            !presentedChain.isEmpty
        {
            lines.append("  Presented chain:")
            for entry in presentedChain {
                lines.append("    \(entry.pinLine)")
            }
        }
        return lines.joined(separator: "\n")
    }
}

extension TrustDecision {
    /// The decision with the notices of the options that weakened it, when it is trusted: each is reported as an
    /// `insecure_option_used` event on every handshake it decides (a cached decision keeps its notices).
    func noting(hostValidated: Bool, defaultValidationPerformed: Bool) -> TrustDecision {
        guard case .trusted(var chain) = self, !hostValidated || !defaultValidationPerformed else { return self }
        if !defaultValidationPerformed { chain.notices.append(.defaultValidationSkipped(host: chain.host)) }
        if !hostValidated { chain.notices.append(.hostNotValidated(host: chain.host)) }
        return .trusted(chain)
    }
}
