import BulwarkPolicy
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
            let revoked = refusal.reasons.contains { $0.code == "revoked" }
            monitor.record(
                SecurityEvent(
                    kind: revoked ? .certificateRevoked : pinFailure ? .pinFailed : .trustRefused,
                    host: refusal.host,
                    reason: refusal.shortDescription,
                    message: String(describing: refusal),
                    details: [.presented: .lines(refusal.presentedChain.map(\.pinLine))]
                )
            )
        }
    }

    static func event(for notice: TrustNotice, host: String) -> SecurityEvent {
        SecurityEvent(
            kind: notice.eventKind,
            host: host,
            reason: notice.shortDescription,
            message: String(describing: notice)
        )
    }
}
