import Crypto
import Foundation
import X509

/// What a certificate's SCTs showed against a log list and a ``CertificateTransparencyPolicy``: every SCT with its
/// verdict, those that count, and whether the policy is met (and if not, why, in words).
public struct CertificateTransparencyCheck: Hashable, Sendable, CustomStringConvertible {
    /// One SCT and what was found.
    public struct Entry: Hashable, Sendable, CustomStringConvertible {
        public let sct: SignedCertificateTimestamp
        public let verdict: SignedCertificateTimestamp.Verdict
        /// The log, when the list knows it.
        public let log: CertificateTransparencyLog?
        /// Whether it counts toward the policy; when not, ``whyNotCounted`` says why.
        public let counts: Bool
        public let whyNotCounted: String?

        /// The log's name and operator, or "unknown log <id>".
        public var logName: String {
            self.log.map { "\($0.name) (\($0.operatorName))" } ?? "unknown log \(self.sct.logIDBase64)"
        }

        public var description: String {
            let verdict: String
            switch self.verdict {
            case .verified: verdict = "verified"
            case .unknownLog: verdict = "unknown log"
            case .badSignature: verdict = "bad signature"
            case .unknownVersion: verdict = "unknown version \(self.sct.version)"
            }
            let time = self.sct.version == 0 ? " at \(self.sct.date.formatted(.iso8601))" : ""
            let note = self.whyNotCounted.map { "; not counted: \($0)" } ?? ""
            return "\(self.logName)\(time): \(verdict)\(note)"
        }
    }

    /// Every embedded SCT, in the certificate's order.
    public let entries: [Entry]
    /// How many SCTs the policy asked for, given the certificate's lifetime.
    public let required: Int
    /// The distinct operators of the counted SCTs.
    public let operators: [String]
    /// Why the policy is not met, or nil when it is.
    public let failure: String?

    /// Whether the policy is met.
    public var isCompliant: Bool { self.failure == nil }

    /// The counted SCTs.
    public var counted: Int { self.entries.filter(\.counts).count }

    public var description: String {
        let verdict = self.failure.map { "not met: \($0)" } ?? "met"
        return "Certificate Transparency \(verdict) (\(self.counted) of \(self.entries.count) SCTs counted, "
            + "\(self.operators.count) operator\(self.operators.count == 1 ? "" : "s"), \(self.required) required)"
    }
}

/// Which SCTs a certificate must carry. ``chrome`` is Chrome's rule, the default.
public struct CertificateTransparencyPolicy: Hashable, Sendable {
    /// SCTs needed for a certificate valid at most ``shortLifetime``.
    public var shortLifetimeSCTs: Int
    /// SCTs needed beyond it.
    public var longLifetimeSCTs: Int
    public var shortLifetime: TimeInterval
    /// Distinct log operators the counted SCTs must come from.
    public var distinctOperators: Int

    /// Chrome's CT policy: SCTs from at least two distinct operators, at least 2 SCTs for a certificate valid 180 days
    /// or less and 3 beyond; an SCT from a retired log counts only if issued before the retirement; SCTs dated in the
    /// future do not count.
    public static let chrome = CertificateTransparencyPolicy(
        shortLifetimeSCTs: 2,
        longLifetimeSCTs: 3,
        shortLifetime: 180 * 86_400,
        distinctOperators: 2
    )

    /// Checks `certificate`'s embedded SCTs, issued by `issuer`, against `logs` at `time`.
    public func check(
        _ certificate: Certificate,
        issuer: Certificate,
        logs: CertificateTransparencyLogList,
        at time: Date
    ) -> CertificateTransparencyCheck {
        self.check(certificate, issuer: issuer, logs: logs, at: time, memo: .shared)
    }

    /// ``check(_:issuer:logs:at:)`` with the SCTs and verified signatures remembered in `memo`.
    func check(
        _ certificate: Certificate,
        issuer: Certificate,
        logs: CertificateTransparencyLogList,
        at time: Date,
        memo: EmbeddedSCTMemo
    ) -> CertificateTransparencyCheck {
        let lifetime = certificate.notValidAfter.timeIntervalSince(certificate.notValidBefore)
        let required = lifetime <= self.shortLifetime ? self.shortLifetimeSCTs : self.longLifetimeSCTs
        let leaf = memo.leaf(of: certificate)
        let scts: [SignedCertificateTimestamp]
        switch leaf.scts {
        case .success(let embedded?):
            scts = embedded
        case .success(nil):
            return CertificateTransparencyCheck(
                entries: [],
                required: required,
                operators: [],
                failure: "the certificate carries no SCT; \(required) from \(self.distinctOperators) operators "
                    + "are required"
            )
        case .failure(let error):
            return CertificateTransparencyCheck(entries: [], required: required, operators: [], failure: "\(error)")
        }
        let issuerKey =
            Certificate.subjectPublicKeyInfo(inTBSCertificate: issuer.tbsCertificateBytes)
            ?? issuer.subjectPublicKeyInfoDER[...]
        // What the logs signed, made at the first signature not verified before (from memory, all of them usually).
        var signedInputs: (tbs: [UInt8], issuerKeyHash: [UInt8])??
        func isSigned(_ index: Int, _ sct: SignedCertificateTimestamp, by log: CertificateTransparencyLog) -> Bool {
            if leaf.hasVerified(index, issuerKey: issuerKey, logKey: log.key) { return true }
            if signedInputs == nil {
                signedInputs = (try? SignedCertificateTimestamp.precertificateTBS(of: certificate)).map {
                    ($0, Array(SHA256.hash(data: issuerKey)))
                }
            }
            guard let inputs = signedInputs ?? nil,
                sct.isSigned(forTBSCertificate: inputs.tbs, issuerKeyHash: inputs.issuerKeyHash, logKey: log.key)
            else { return false }
            leaf.rememberVerified(index, issuerKey: issuerKey, logKey: log.key)
            return true
        }
        var entries: [CertificateTransparencyCheck.Entry] = []
        for (index, sct) in scts.enumerated() {
            guard sct.version == 0 else {
                entries.append(
                    .init(sct: sct, verdict: .unknownVersion, log: nil, counts: false, whyNotCounted: "not v1")
                )
                continue
            }
            guard let log = logs.log(withID: sct.logID) else {
                entries.append(.init(sct: sct, verdict: .unknownLog, log: nil, counts: false, whyNotCounted: nil))
                continue
            }
            guard isSigned(index, sct, by: log) else {
                entries.append(.init(sct: sct, verdict: .badSignature, log: log, counts: false, whyNotCounted: nil))
                continue
            }
            var why: String?
            if entries.contains(where: { $0.counts && $0.sct.logID == sct.logID }) {
                why = "another SCT of the same log already counts"
            } else if sct.date > time {
                why = "dated in the future"
            } else if !log.state.counts(sctIssuedAt: sct.date) {
                why = "the log is \(log.state)"
            } else if let interval = log.temporalInterval, !interval.contains(certificate.notValidAfter) {
                why = "the log does not accept certificates expiring then"
            }
            entries.append(.init(sct: sct, verdict: .verified, log: log, counts: why == nil, whyNotCounted: why))
        }
        var operators: [String] = []
        for entry in entries where entry.counts {
            if let name = entry.log?.operatorName, !operators.contains(name) { operators.append(name) }
        }
        let counted = entries.filter(\.counts).count
        let fromCurrentLog = entries.contains { $0.counts && ($0.log?.state.isCurrent ?? false) }
        var failure: String?
        if counted >= required, operators.count >= self.distinctOperators, !fromCurrentLog {
            let found = entries.map(\.description).joined(separator: "; ")
            failure =
                "every counted SCT comes from a retired log, and the policy needs one from a log that is not "
                + "retired (SCTs found: \(found))"
        } else if counted < required || operators.count < self.distinctOperators {
            let found = entries.isEmpty ? "none" : entries.map(\.description).joined(separator: "; ")
            failure =
                "\(counted) SCT\(counted == 1 ? "" : "s") from \(operators.count) operator"
                + "\(operators.count == 1 ? "" : "s") counted, and the policy needs \(required) from "
                + "\(self.distinctOperators) distinct operators (SCTs found: \(found))"
        }
        return CertificateTransparencyCheck(
            entries: entries,
            required: required,
            operators: operators,
            failure: failure
        )
    }
}
