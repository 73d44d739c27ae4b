import Foundation
import X509

/// Validates the chain to a trust anchor (RFC 5280 plus the web PKI rules browsers apply, including a
/// `serverAuth` extended key usage) and the host name against the leaf's subject alternative names (RFC 6125,
/// without the legacy common-name fallback).
///
/// This is what every host gets unless you configure something stricter.
public struct DefaultTrustEvaluator: ServerTrustEvaluating {
    /// The trust anchors.
    public var roots: TrustRoots
    /// Limits and web-PKI options of the validation.
    public var options: ValidationOptions
    /// Whether the host name is checked.
    ///
    /// > Warning: Turning this off accepts any valid certificate for any name: anyone with a certificate from the
    /// > same roots can impersonate the host. Every handshake it decides carries a `.hostNotValidated` notice,
    /// > reported as an `insecure_option_used` event.
    public var validateHost: Bool

    /// An evaluator against `roots` (the system store by default) that checks the host unless `validateHost` is
    /// false.
    public init(roots: TrustRoots = .system, options: ValidationOptions = .init(), validateHost: Bool = true) {
        self.roots = roots
        self.options = options
        self.validateHost = validateHost
    }

    /// Builds and verifies a path from the presented leaf to one of ``roots`` at `time`, with the web-PKI rules, and
    /// checks the leaf's names against `host` unless ``validateHost`` is false.
    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        let result = await ChainEvaluation.verify(
            chain,
            host: host,
            at: time,
            roots: self.roots,
            options: self.options,
            validateHost: self.validateHost
        )
        switch result {
        case .success(let verified):
            return TrustDecision.trusted(TrustedChain(host: host, certificates: verified))
                .noting(hostValidated: self.validateHost, defaultValidationPerformed: true)
        case .failure(let refusal): return .refused(refusal)
        }
    }
}

extension ServerTrustEvaluating where Self == DefaultTrustEvaluator {
    /// Chain and host validation against `roots`; see ``DefaultTrustEvaluator``.
    public static func `default`(roots: TrustRoots = .system, options: ValidationOptions = .init()) -> Self {
        DefaultTrustEvaluator(roots: roots, options: options)
    }
}
