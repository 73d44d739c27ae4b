import Foundation
import X509

/// Judges a certificate chain without a connection: the same evaluators and revocation checks as a handshake, given
/// the certificates, trust anchors and revocation lists as files would give them. What `bulwark verify` runs.
///
/// No network is used: revocation consults only ``revocationLists``; a certificate none of them covers has an unknown
/// status, which ``revocation`` decides (hard: refused; soft: trusted, and said).
///
/// ```swift
/// var verifier = OfflineChainVerifier(roots: [root])
/// verifier.untrusted = [intermediate]
/// verifier.profile = .rfc5280
/// let result = await verifier.verify(leaf, at: Date())
/// ```
public struct OfflineChainVerifier: Sendable {
    /// The trust anchors.
    public var roots: [Certificate]
    /// Certificates a path may use between the leaf and an anchor, in any order (a server's presented chain, or a
    /// whole directory of CA certificates).
    public var untrusted: [Certificate] = []
    /// Revocation lists, parsed (see ``RevocationStore/load(crl:maximumSize:)``).
    public var revocationLists: [CertificateRevocationList] = []
    /// What an unknown revocation status does; `nil` checks no revocation.
    public var revocation: RevocationTrustEvaluator.Mode?
    /// The rules of the path (``ValidationProfile/webPKI`` by default).
    public var profile: ValidationProfile = .webPKI
    /// What the leaf is checked for.
    public var purpose: CertificatePurpose = .server
    /// An evaluator to judge with instead of chain validation against ``roots`` (the one a policy file configures
    /// for a host, pins included); revocation, when asked for, is still checked around it.
    public var evaluator: (any ServerTrustEvaluating)?

    /// A verifier against `roots`, with the web PKI's rules and no revocation checking.
    public init(roots: [Certificate]) {
        self.roots = roots
    }

    /// Evaluates `leaf` at `time`, checking its names against `host` when one is given.
    public func verify(_ leaf: Certificate, host: String? = nil, at time: Date) async -> OfflineVerification {
        var options = ValidationOptions()
        options.profile = self.profile
        options.purpose = self.purpose
        // Every given certificate may be on the path: the limit on what a server presents does not apply to files.
        options.maximumPresentedCertificates = max(options.maximumPresentedCertificates, self.untrusted.count + 1)
        var evaluator: any ServerTrustEvaluating =
            self.evaluator
            ?? DefaultTrustEvaluator(roots: .custom(self.roots), options: options, validateHost: host != nil)
        var unsigned = 0
        if let mode = self.revocation {
            // Only lists that a given certificate of their issuer's name signed: a forgery cannot answer anyway, and
            // enough of them could crowd a genuine list of the same name out of the store.
            let candidates = self.roots + self.untrusted + [leaf]
            var byIssuer: [DistinguishedName: [CertificateRevocationList]] = [:]
            for list in self.revocationLists {
                guard candidates.contains(where: { $0.subject == list.issuer && list.isSigned(by: $0) }) else {
                    unsigned += 1
                    continue
                }
                // The same list given twice counts once.
                let kept = byIssuer[list.issuer] ?? []
                if kept.contains(where: { $0.signature == list.signature && $0.signedBytes == list.signedBytes }) {
                    continue
                }
                byIssuer[list.issuer, default: []].append(list)
            }
            if let (issuer, lists) = byIssuer.first(where: { $0.value.count > Self.maximumListsPerIssuer }) {
                let refusal = ChainEvaluation.refusal(
                    host: host ?? Self.unnamedHost,
                    reasons: [
                        .revocationUnknown(
                            certificate: String(describing: leaf.subject),
                            detail: "\(lists.count) revocation lists of \(issuer) were given, more than the "
                                + "\(Self.maximumListsPerIssuer) one issuer's lists are checked against"
                        )
                    ],
                    presented: [leaf]
                )
                return OfflineVerification(
                    decision: .refused(refusal),
                    host: host,
                    revocation: mode,
                    listsSignedByNoGivenCertificate: unsigned
                )
            }
            let store = RevocationStore(capacity: max(1_024, byIssuer.count))
            for lists in byIssuer.values { for list in lists { store.load(list) } }
            evaluator = RevocationTrustEvaluator(evaluator, method: .crl, mode: mode, store: store, fetcher: nil)
        }
        let decision = await evaluator.evaluate([leaf] + self.untrusted, forHost: host ?? Self.unnamedHost, at: time)
        return OfflineVerification(
            decision: decision,
            host: host,
            revocation: self.revocation,
            listsSignedByNoGivenCertificate: unsigned
        )
    }

    /// The most revocation lists of one issuer name a verification uses: beyond it, the verification is refused
    /// rather than some lists left out (a store keeps this many untried lists per name).
    public static let maximumListsPerIssuer = 64

    /// The host name a decision carries when no host was asked for.
    static let unnamedHost = "(no host)"

    /// Reads a revocation list (DER or PEM) from the regular file at `path`, at most `maximumSize` bytes.
    ///
    /// - Throws: ``RevocationError``: `malformed` (naming the file) when it cannot be read or is not a list, and
    ///   the list's own refusal (`unsupported`, `unknown_critical_extension`, …) when it is one Bulwark cannot use.
    public static func revocationList(
        atPath path: String,
        maximumSize: Int = CertificateRevocationList.defaultMaximumSize
    ) throws(RevocationError) -> CertificateRevocationList {
        let bytes: [UInt8]
        do throws(BoundedFileReader.Failure) {
            bytes = try BoundedFileReader.read(path, maximumSize: maximumSize)
        } catch {
            throw .malformed("revocation list file \(path)", detail: error.words)
        }
        return try RevocationStore.parseList(bytes, maximumSize: maximumSize)
    }
}

/// What ``OfflineChainVerifier/verify(_:host:at:)`` found.
public struct OfflineVerification: Sendable {
    /// Trusted with the verified path, or refused with the reasons in the words of a refused handshake.
    public var decision: TrustDecision
    /// The host checked, if one was.
    public var host: String?
    /// The revocation mode used, if any.
    public var revocation: RevocationTrustEvaluator.Mode?
    /// How many of the lists given were left out because no given certificate of their issuer's name signed them
    /// (a forgery, or a list of a CA not among the certificates).
    public var listsSignedByNoGivenCertificate: Int = 0

    /// Whether the chain is trusted.
    public var isTrusted: Bool { self.decision.isTrusted }

    /// The revocation status of each certificate of the verified path but the anchor, in words: `good (…)`, or
    /// `unknown: …` under soft checking. Empty when the chain was refused or revocation was not checked.
    public var revocationStatuses: [(certificate: String, status: String)] {
        guard let chain = self.decision.trustedChain else { return [] }
        var statuses: [(certificate: String, status: String)] = []
        for notice in chain.notices {
            if let check = notice.revocationCheck {
                statuses.append((check.certificate, "\(check.status) [\(check.method)]"))
            } else if let unknown = notice.unknownRevocation {
                statuses.append((unknown.certificate, "unknown: \(unknown.reason)"))
            }
        }
        return statuses
    }
}
