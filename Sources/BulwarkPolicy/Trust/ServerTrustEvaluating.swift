import Foundation
import X509

/// Decides whether a server's certificate chain is trusted for a host.
///
/// Evaluators return a value instead of throwing, so that every reason can be reported, and are `async` so that
/// an evaluator may consult the network (revocation) without blocking an event loop.
///
/// Bulwark ships these evaluators, created with leading-dot factories:
/// ``ServerTrustEvaluating/default(roots:options:)``,
/// ``ServerTrustEvaluating/pinnedCertificates(_:roots:acceptSelfSignedCertificates:performDefaultValidation:validateHost:options:)``,
/// ``ServerTrustEvaluating/publicKeys(_:roots:performDefaultValidation:validateHost:options:)`` and
/// ``ServerTrustEvaluating/composite(_:)``.
public protocol ServerTrustEvaluating: Sendable {
    /// Evaluates a chain.
    ///
    /// - Parameters:
    ///   - chain: The certificates the server presented, leaf first, exactly as received.
    ///   - host: The host the client asked for (a DNS name or an IP address literal).
    ///   - time: The time at which validity is checked.
    func evaluate(_ chain: [Certificate], forHost host: String, at time: Date) async -> TrustDecision
}
