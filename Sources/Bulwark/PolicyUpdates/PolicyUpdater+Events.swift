import BulwarkPolicy
import Foundation

extension PolicyUpdater {
    /// `policy_updated`: the version, expiry and signers' public keys (never a private key), and the connections
    /// drained.
    static func updatedEvent(
        _ verified: PolicyBundleVerifier.Verified,
        drained: Int,
        atStart: Bool,
        rotated: PolicyTrustedKeys?,
        notLive: [String],
        insecure: Bool
    ) -> SecurityEvent {
        let bundle = verified.bundle
        var message =
            atStart
            ? "the stored policy bundle version \(bundle.version) (valid through \(bundle.expires)) applies"
            : "policy bundle version \(bundle.version) (valid through \(bundle.expires)) applies; "
                + "\(drained) connections drained"
        if let rotated {
            message += "; the trusted keys are now \(rotated.keys.count) keys, \(rotated.threshold) of which must sign"
        }
        if insecure {
            message += "; its policy sets \"insecure\": true, allowed by the updater's configuration"
        }
        if !notLive.isEmpty {
            message += "; not applied to the running client: " + notLive.joined(separator: ", ")
        }
        return SecurityEvent(
            kind: .policyUpdated,
            message: message,
            details: [
                .version: .number(Int(bundle.version)),
                .expires: .text(bundle.expires),
                .signers: .list(verified.signers.map(\.description)),
                .connectionsClosed: .number(drained),
            ]
        )
    }

    /// `policy_update_refused:CODE`.
    static func refusedEvent(_ refusal: PolicyBundleRefusal, host: String?) -> SecurityEvent {
        SecurityEvent(
            kind: .policyUpdateRefused,
            host: host,
            reason: refusal.reason.code,
            message: "\(refusal); the policy in force is unchanged",
            details: [.reason: .text(refusal.reason.code)]
        )
    }

    /// `policy_stale`: the bundle in force expired `expiredFor` seconds ago and stays in force.
    static func staleEvent(_ inForce: PolicyBundleVerifier.Verified, expiredFor: TimeInterval) -> SecurityEvent {
        let bundle = inForce.bundle
        let hours = Int(expiredFor / 3_600)
        let ago = hours >= 48 ? "\(hours / 24) days" : hours >= 1 ? "\(hours) hours" : "\(Int(expiredFor) / 60) minutes"
        return SecurityEvent(
            kind: .policyStale,
            message: "policy bundle version \(bundle.version) expired at the end of \(bundle.expires), \(ago) ago "
                + "(\(Int(expiredFor)) s), and no newer bundle could be had; its policy stays in force (the bundle "
                + "server may be unreachable or blocked)",
            details: [.version: .number(Int(bundle.version)), .expires: .text(bundle.expires)]
        )
    }

    /// `policy_fallback:CODE`: the built-in policy applies again.
    static func fallbackEvent(
        _ refusal: PolicyBundleRefusal,
        previousVersion: UInt64?,
        drained: Int
    ) -> SecurityEvent {
        var details: SecurityEvent.Details = [.reason: .text(refusal.reason.code)]
        details[.version] = previousVersion.map { .number(Int($0)) }
        details[.connectionsClosed] = .number(drained)
        return SecurityEvent(
            kind: .policyFallback,
            reason: refusal.reason.code,
            message: "\(refusal); the client's built-in policy applies; \(drained) connections drained",
            details: details
        )
    }
}
