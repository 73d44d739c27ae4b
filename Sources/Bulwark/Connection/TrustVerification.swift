import BulwarkPolicy
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import X509

/// The bridge between NIOSSL's custom verification callback and Bulwark's trust manager, for one connection.
///
/// NIOSSL's callback replaces all of BoringSSL's verification, host name included, and a refusal surfaces from
/// NIOSSL only as a generic `CERTIFICATE_VERIFY_FAILED`; so the decision is kept here and the connector throws the
/// refusal itself.
final class TrustVerification: Sendable {
    let manager: ServerTrustManager
    let host: String
    let monitor: any EventMonitor
    private let state = NIOLockedValueBox<(decision: TrustDecision?, presented: [Certificate])>((nil, []))

    init(manager: ServerTrustManager, host: String, monitor: any EventMonitor) {
        self.manager = manager
        self.host = host
        self.monitor = monitor
    }

    /// The decision, once the handshake reached certificate verification.
    var decision: TrustDecision? { self.state.withLockedValue { $0.decision } }
    /// The chain the server presented, leaf first.
    var presentedChain: [Certificate] { self.state.withLockedValue { $0.presented } }

    func verify(_ certificates: [NIOSSLCertificate], promise: EventLoopPromise<NIOSSLVerificationResultWithMetadata>) {
        var chain: [Certificate] = []
        chain.reserveCapacity(certificates.count)
        for (index, certificate) in certificates.enumerated() {
            do {
                chain.append(try Certificate(derEncoded: try certificate.toDERBytes()))
            } catch {
                // An intermediate that cannot be parsed cannot be on a path; an unparsable leaf is fatal.
                guard index == 0 else { continue }
                let refusal = TrustRefusal(
                    host: self.host,
                    reasons: [.untrustedChain(details: ["the server's certificate cannot be parsed: \(error)"])],
                    presentedChain: []
                )
                self.state.withLockedValue { $0 = (.refused(refusal), []) }
                TrustEvents.report(.refused(refusal), presented: [], to: self.monitor)
                promise.succeed(.failed)
                return
            }
        }
        let manager = self.manager
        let host = self.host
        Task {
            let decision = await manager.evaluate(chain, forHost: host)
            self.state.withLockedValue { $0 = (decision, chain) }
            TrustEvents.report(decision, presented: chain, to: self.monitor)
            promise.succeed(decision.isTrusted ? .certificateVerified(VerificationMetadata(nil)) : .failed)
        }
    }
}
