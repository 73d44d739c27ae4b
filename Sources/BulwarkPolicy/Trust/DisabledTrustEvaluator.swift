import Foundation
import X509

/// Trusts any chain for any host. For local development against a server you cannot give a proper certificate.
///
/// > Warning: With this evaluator anyone on the network path can read and change the traffic of the hosts it is
/// > configured for. It is only reachable through `@_spi(Insecure) import BulwarkPolicy`, and every decision it
/// > makes carries a `.validationDisabled` notice, which Bulwark reports as a security event on each connection.
@_spi(Insecure)
public struct DisabledTrustEvaluator: ServerTrustEvaluating {
    public init() {}

    public func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision {
        guard !chain.isEmpty else {
            return ChainEvaluation.refused(.emptyChain, host: host, presented: chain)
        }
        return .trusted(TrustedChain(host: host, certificates: chain, notices: [.validationDisabled(host: host)]))
    }
}

@_spi(Insecure)
extension ServerTrustEvaluating where Self == DisabledTrustEvaluator {
    /// No validation at all; see ``DisabledTrustEvaluator``.
    ///
    /// > Warning: Development only. Any server can impersonate the host.
    public static var disabled: Self { DisabledTrustEvaluator() }
}
