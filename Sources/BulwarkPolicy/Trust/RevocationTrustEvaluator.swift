import Foundation
import X509

/// Checks that no certificate of a chain another evaluator trusts has been revoked, like Alamofire's
/// `RevocationTrustEvaluator`, with the revocation lists of a ``RevocationStore``.
///
/// For every certificate of the verified path but its root, the list of its issuer (the next certificate of the
/// path) is looked up and checked (``CertificateRevocationList/status(of:issuer:at:clockSkew:)``: issuer, signature,
/// freshness, scope):
/// - a revoked certificate refuses the chain (`revoked`: which certificate, when, why and according to whom), in
///   either mode, and the client reports a `certificate_revoked` event;
/// - a certificate whose status cannot be established (no list for its issuer, a stale, broken or out-of-scope list)
///   refuses the chain in ``Mode/hard`` (`revocation_unknown`), and in ``Mode/soft`` lets it through with a
///   `revocation_unknown` notice (an event of that kind);
/// - a certificate found good gives a `revocation_checked` notice.
///
/// A trusted decision holds only until the earliest `nextUpdate` of the lists it used, so the client's decision
/// cache never outlives them.
///
/// This version consults only the lists loaded into the store, as with Alamofire's `.networkAccessDisabled`:
/// fetching lists from the certificates' distribution points and OCSP come next (issue 18).
public struct RevocationTrustEvaluator: ServerTrustEvaluating {
    /// What an unknown revocation status does.
    public struct Mode: Hashable, Sendable, CustomStringConvertible {
        private let hard: Bool

        /// Every non-root certificate of the path needs a positive "not revoked"; anything else refuses.
        public static let hard = Mode(hard: true)
        /// Only a definite "revoked" refuses; an unknown status is reported and the handshake goes on.
        public static let soft = Mode(hard: false)

        public var description: String { self.hard ? "hard" : "soft" }

        var isHard: Bool { self.hard }
    }

    /// The evaluator that verifies the chain first (its refusals are returned as they are).
    public let base: any ServerTrustEvaluating
    /// Where the revocation lists come from.
    public let store: RevocationStore
    /// Hard or soft.
    public let mode: Mode
    /// How far a list's `thisUpdate` and `nextUpdate` may be off the evaluation time.
    public let clockSkew: TimeInterval

    public init(
        _ base: any ServerTrustEvaluating,
        store: RevocationStore,
        mode: Mode = .hard,
        clockSkew: TimeInterval = 300
    ) {
        self.base = base
        self.store = store
        self.mode = mode
        self.clockSkew = clockSkew
    }

    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        let decision = await self.base.evaluate(chain, forHost: host, at: time)
        guard case .trusted(var trusted) = decision else { return decision }
        let path = trusted.certificates
        var validUntil = trusted.validUntil
        for index in path.indices.dropLast() {
            let certificate = path[index]
            let issuer = path[index + 1]
            let subject = String(describing: certificate.subject)
            let status: RevocationStatus
            let list = self.store.list(issuedBy: issuer.subject)
            do {
                guard let list else {
                    throw RevocationError.outOfScope("no revocation list of \(issuer.subject) is loaded")
                }
                status = try list.status(of: certificate, issuer: issuer, at: time, clockSkew: self.clockSkew)
                if let nextUpdate = list.nextUpdate, nextUpdate < validUntil ?? .distantFuture {
                    validUntil = nextUpdate
                }
            } catch {
                let why = String(describing: error)
                if self.mode.isHard {
                    return ChainEvaluation.refused(
                        .revocationUnknown(certificate: subject, detail: why),
                        host: host,
                        presented: chain
                    )
                }
                trusted.notices.append(.revocationUnknown(host: host, certificate: subject, why: why))
                continue
            }
            if let revocation = status.revocation {
                return ChainEvaluation.refused(
                    .revoked(
                        certificate: subject,
                        revokedAt: revocation.revocationDate,
                        reason: revocation.reason.map(String.init(describing:)),
                        source: status.source
                    ),
                    host: host,
                    presented: chain
                )
            }
            trusted.notices.append(
                .revocationChecked(
                    host: host,
                    certificate: subject,
                    source: status.source,
                    nextUpdate: list?.nextUpdate
                )
            )
        }
        trusted.validUntil = validUntil
        return .trusted(trusted)
    }
}

extension ServerTrustEvaluating where Self == RevocationTrustEvaluator {
    /// `base` must trust the chain, and no certificate of it may be revoked according to `store`'s lists; see
    /// ``RevocationTrustEvaluator``.
    public static func revocation(
        _ base: any ServerTrustEvaluating,
        store: RevocationStore,
        mode: RevocationTrustEvaluator.Mode = .hard
    ) -> Self {
        RevocationTrustEvaluator(base, store: store, mode: mode)
    }
}
