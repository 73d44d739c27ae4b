import Foundation
import X509

/// Checks the Certificate Transparency of a chain its base evaluator trusts: the leaf's embedded SCTs, verified with
/// the keys of ``logs``, must meet ``policy``.
///
/// - ``Mode/enforce`` refuses a chain whose leaf does not meet the policy, with a sentence naming the SCTs found,
///   their logs (or "unknown log <id>") and what the policy needed;
/// - ``Mode/reportOnly`` trusts it and adds a `ct_policy_not_met` notice;
/// - ``Mode/off`` checks nothing.
///
/// Every check that ran adds a `ct_checked` notice (the SCTs counted, the operators, the verdict). A list past its
/// ``CertificateTransparencyLogList/expires`` cannot say which logs are current: as in Chrome, the check then only
/// reports (a `ct_policy_not_met` notice names the stale list) rather than lock every host out.
///
/// > Warning: ``Mode/reportOnly`` and ``Mode/off`` accept a certificate no log has seen: a mis-issued certificate
/// > from a trusted CA is then caught only by pins.
public struct CertificateTransparencyTrustEvaluator: ServerTrustEvaluating {
    /// What a failed policy does.
    public struct Mode: Hashable, Sendable, CustomStringConvertible {
        enum Backing: Hashable, Sendable {
            case enforce
            case reportOnly
            case off
        }

        let backing: Backing

        /// Refuse a chain whose leaf does not meet the policy.
        public static let enforce = Mode(backing: .enforce)
        /// Trust it, and say so in a `ct_policy_not_met` notice.
        public static let reportOnly = Mode(backing: .reportOnly)
        /// Check nothing.
        public static let off = Mode(backing: .off)

        /// `enforce`, `report` or `off`.
        public var description: String {
            switch self.backing {
            case .enforce: "enforce"
            case .reportOnly: "report"
            case .off: "off"
            }
        }
    }

    public let base: any ServerTrustEvaluating
    public let logs: CertificateTransparencyLogList
    public let policy: CertificateTransparencyPolicy
    public let mode: Mode

    public init(
        _ base: any ServerTrustEvaluating,
        logs: CertificateTransparencyLogList,
        policy: CertificateTransparencyPolicy = .chrome,
        mode: Mode = .enforce
    ) {
        self.base = base
        self.logs = logs
        self.policy = policy
        self.mode = mode
    }

    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        let decision = await self.base.evaluate(chain, forHost: host, at: time)
        guard self.mode != .off, case .trusted(var trusted) = decision else { return decision }
        let path = trusted.certificates
        guard path.count >= 2 else {
            // A leaf trusted by its own identity (a pinned self-signed certificate) has no issuer to check SCTs with.
            return decision
        }
        let check = self.policy.check(path[0], issuer: path[1], logs: self.logs, at: time)
        trusted.notices.append(.certificateTransparencyChecked(host: host, check: check))
        if let failure = check.failure {
            let stale = self.logs.expires.map { time > $0 } ?? false
            if self.mode == .enforce, !stale {
                return ChainEvaluation.refused(
                    .certificateTransparencyNotMet(certificate: String(describing: path[0].subject), detail: failure),
                    host: host,
                    presented: chain
                )
            }
            let why =
                stale
                ? "\(failure); not enforced: the log list expired at \(self.logs.expires!.formatted(.iso8601))"
                : failure
            trusted.notices.append(.certificateTransparencyNotMet(host: host, detail: why))
        }
        return .trusted(trusted)
    }
}

extension ServerTrustEvaluating where Self == CertificateTransparencyTrustEvaluator {
    /// Certificate Transparency around `base`; see ``CertificateTransparencyTrustEvaluator``.
    public static func certificateTransparency(
        _ base: any ServerTrustEvaluating,
        logs: CertificateTransparencyLogList,
        policy: CertificateTransparencyPolicy = .chrome,
        mode: CertificateTransparencyTrustEvaluator.Mode = .enforce
    ) -> Self {
        CertificateTransparencyTrustEvaluator(base, logs: logs, policy: policy, mode: mode)
    }
}
