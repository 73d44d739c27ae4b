import BulwarkPolicy
import Foundation
import X509

/// Turns trust decisions into security events: one per handshake, plus one per notice.
enum TrustEvents {
    /// `cached`: the decision was reused from the client's ``TrustDecisionCache`` (detail `cached` of the
    /// `trust_evaluated` event).
    static func report(
        _ decision: TrustDecision,
        presented: [Certificate],
        cached: Bool = false,
        to monitor: any EventMonitor
    ) {
        // Building the details hashes every certificate: skip it when nobody listens (the default).
        if let composite = monitor as? CompositeEventMonitor, composite.monitors.isEmpty { return }
        switch decision {
        case .trusted(let chain):
            monitor.record(
                SecurityEvent(
                    kind: .trustEvaluated,
                    host: chain.host,
                    message: "chain trusted",
                    details: [
                        .presented: .lines(presented.map { CertificateSummary($0).pinLine }),
                        .verified: .lines(chain.certificates.map { CertificateSummary($0).pinLine }),
                        .cached: .flag(cached),
                    ]
                )
            )
            for notice in chain.notices {
                monitor.record(Self.event(for: notice, host: chain.host))
            }
        case .refused(let refusal):
            let pinFailure = refusal.reasons.contains { $0.pinMismatch != nil }
            let revoked = refusal.reasons.first { $0.code == "revoked" }
            var details: SecurityEvent.Details = [.presented: .lines(refusal.presentedChain.map(\.pinLine))]
            if let revoked, let revocation = revoked.revocation {
                details[.certificate] = revoked.certificate.map { .text($0) }
                details[.serialNumber] = .text(revocation.serialNumber)
                details[.revokedAt] = .text(revocation.revokedAt.formatted(.iso8601))
                details[.revocationReason] = revocation.reason.map { .text($0) }
            }
            monitor.record(
                SecurityEvent(
                    kind: revoked != nil ? .certificateRevoked : pinFailure ? .pinFailed : .trustRefused,
                    host: refusal.host,
                    reason: refusal.shortDescription,
                    message: String(describing: refusal),
                    details: details
                )
            )
        }
    }

    static func event(for notice: TrustNotice, host: String) -> SecurityEvent {
        SecurityEvent(
            kind: notice.eventKind,
            host: host,
            reason: notice.shortDescription,
            message: String(describing: notice),
            details: notice.eventDetails
        )
    }
}
