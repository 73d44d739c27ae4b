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
    let port: Int
    let monitor: any EventMonitor
    let reporter: PinFailureReporter?
    private let state = NIOLockedValueBox<(decision: TrustDecision?, presented: [Certificate])>((nil, []))

    init(manager: ServerTrustManager, host: String, port: Int, monitor: any EventMonitor, reporter: PinFailureReporter?) {
        self.manager = manager
        self.host = host
        self.port = port
        self.monitor = monitor
        self.reporter = reporter
    }

    /// Hands any pin failure of `decision` to the reporter (it sends in the background).
    private func reportPinFailures(_ decision: TrustDecision) {
        guard let reporter = self.reporter else { return }
        var mismatches: [PinMismatch] = []
        switch decision {
        case .refused(let refusal):
            for case .pinMismatch(let mismatch) in refusal.reasons { mismatches.append(mismatch) }
        case .trusted(let chain):
            for case .reportOnlyPinViolation(let mismatch) in chain.notices { mismatches.append(mismatch) }
        }
        let pattern = self.manager.pattern(forHost: self.host)
        for mismatch in mismatches {
            reporter.submit(PinFailureReport(mismatch: mismatch, port: self.port, pattern: pattern))
        }
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
            self.reportPinFailures(decision)
            promise.succeed(decision.isTrusted ? .certificateVerified(VerificationMetadata(nil)) : .failed)
        }
    }
}
