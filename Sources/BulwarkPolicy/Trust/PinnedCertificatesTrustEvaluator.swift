import Foundation
import X509

/// Trusts a chain only if its verified path contains one of the pinned certificates (leaf, intermediate or root).
///
/// - `acceptSelfSignedCertificates`: the pinned certificates are also trust anchors, so a self-signed pinned
///   certificate passes default validation.
/// - `performDefaultValidation`: the path must lead to one of `roots` (plus the pinned certificates when
///   self-signed ones are accepted). When `false`, the pinned certificates are the only anchors: the chain must
///   still lead, signature by signature and within its validity, from the leaf to a pinned certificate, but the
///   system roots are not consulted.
/// - `validateHost`: the leaf must be valid for the host.
///
/// > Warning: `performDefaultValidation: false` trusts whatever chains to a pinned certificate, with no trusted
/// > root behind it, and `validateHost: false` accepts a certificate for any name. Each trusted handshake decided
/// > with one of them carries a `.defaultValidationSkipped` or `.hostNotValidated` notice, reported as an
/// > `insecure_option_used` event.
public struct PinnedCertificatesTrustEvaluator: ServerTrustEvaluating {
    /// The pinned certificates: one of them must be on the verified path.
    public let certificates: [Certificate]
    /// The trust anchors of default validation.
    public var roots: TrustRoots
    /// Whether the pinned certificates are also trust anchors, so a self-signed pinned certificate passes.
    public var acceptSelfSignedCertificates: Bool
    /// Whether the path must lead to one of ``roots``; see the type's warning.
    public var performDefaultValidation: Bool
    /// Whether the leaf must be valid for the host; see the type's warning.
    public var validateHost: Bool
    /// Limits and web-PKI options of the validation.
    public var options: ValidationOptions
    private let pins: [Pin]

    /// An evaluator that pins `certificates`; the flags are described with the type.
    public init(
        certificates: [Certificate],
        roots: TrustRoots = .system,
        acceptSelfSignedCertificates: Bool = false,
        performDefaultValidation: Bool = true,
        validateHost: Bool = true,
        options: ValidationOptions = .init()
    ) {
        self.certificates = certificates
        self.roots = roots
        self.acceptSelfSignedCertificates = acceptSelfSignedCertificates
        self.performDefaultValidation = performDefaultValidation
        self.validateHost = validateHost
        self.options = options
        self.pins = certificates.map(Pin.certificate(of:))
    }

    /// Verifies the chain as the flags say, then requires a pinned certificate on the verified path.
    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        await self.decide(chain, host: host, at: time).noting(
            hostValidated: self.validateHost,
            defaultValidationPerformed: self.performDefaultValidation
        )
    }

    private func decide(_ chain: [Certificate], host: String, at time: Date) async -> TrustDecision {
        guard !self.certificates.isEmpty else {
            return ChainEvaluation.refused(
                .misconfigured(detail: "no pinned certificates"),
                host: host,
                presented: chain
            )
        }
        let anchors: TrustRoots
        if self.performDefaultValidation {
            anchors = self.acceptSelfSignedCertificates ? self.roots.adding(self.certificates) : self.roots
        } else {
            anchors = .custom(self.certificates)
        }
        let result = await ChainEvaluation.verify(
            chain,
            host: host,
            at: time,
            roots: anchors,
            options: self.options,
            validateHost: self.validateHost
        )
        switch result {
        case .failure(let refusal):
            return .refused(refusal)
        case .success(let verified):
            let matches = verified.lazy.map { ($0, Pin.certificate(of: $0)) }
            if let (pinned, pin) = matches.first(where: { self.pins.contains($0.1) }) {
                let notice = TrustNotice.pinMatched(host: host, pin: pin, subject: pinned.subject)
                return .trusted(TrustedChain(host: host, certificates: verified, notices: [notice]))
            }
            let mismatch = PinMismatch(
                host: host,
                verifiedChain: verified.map(CertificateSummary.init),
                expectedPins: self.pins
            )
            return ChainEvaluation.refused(.certificateNotPinned(mismatch), host: host, presented: chain)
        }
    }
}

extension ServerTrustEvaluating where Self == PinnedCertificatesTrustEvaluator {
    /// Certificate pinning; see ``PinnedCertificatesTrustEvaluator``.
    public static func pinnedCertificates(
        _ certificates: [Certificate],
        roots: TrustRoots = .system,
        acceptSelfSignedCertificates: Bool = false,
        performDefaultValidation: Bool = true,
        validateHost: Bool = true,
        options: ValidationOptions = .init()
    ) -> Self {
        PinnedCertificatesTrustEvaluator(
            certificates: certificates,
            roots: roots,
            acceptSelfSignedCertificates: acceptSelfSignedCertificates,
            performDefaultValidation: performDefaultValidation,
            validateHost: validateHost,
            options: options
        )
    }
}
