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
    let cache: TrustDecisionCache?
    let parsedCertificates: CertificateParseCache
    private let state = NIOLockedValueBox<(decision: TrustDecision?, presented: [Certificate], verifying: Bool)>(
        (nil, [], false)
    )
    /// What the certificate parser said about certificates it could not parse, verbatim (for `debugDescription`).
    private let parseFailureTexts = NIOLockedValueBox<[String]>([])
    /// The proxy the connection goes through: revocation fetches of the evaluation go through it too.
    let proxy: ProxyRoute?

    init(
        manager: ServerTrustManager,
        host: String,
        port: Int,
        monitor: any EventMonitor,
        reporter: PinFailureReporter?,
        cache: TrustDecisionCache? = nil,
        parsedCertificates: CertificateParseCache,
        proxy: ProxyRoute? = nil
    ) {
        self.proxy = proxy
        self.manager = manager
        self.host = host
        self.port = port
        self.monitor = monitor
        self.reporter = reporter
        self.cache = cache
        self.parsedCertificates = parsedCertificates
    }

    /// Hands any pin failure of `decision` to the reporter (it sends in the background).
    private func reportPinFailures(_ decision: TrustDecision) {
        guard let reporter = self.reporter else { return }
        var mismatches: [PinMismatch] = []
        switch decision {
        case .refused(let refusal):
            mismatches = refusal.reasons.filter { $0.code == "pin_mismatch" }.compactMap(\.pinMismatch)
        case .trusted(let chain):
            mismatches.append(contentsOf: chain.notices.compactMap(\.pinMismatch))
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
    /// Whether the server's chain has arrived and its verification has not ended: the handshake waits for the
    /// client, not for the server.
    var isVerifying: Bool { self.state.withLockedValue { $0.verifying } }
    /// The parser's own errors for the presented certificates it could not parse, or nil.
    var parseFailures: String? {
        let texts = self.parseFailureTexts.withLockedValue { $0 }
        return texts.isEmpty ? nil : texts.joined(separator: "; ")
    }

    func verify(_ certificates: [NIOSSLCertificate], promise: EventLoopPromise<NIOSSLVerificationResultWithMetadata>) {
        self.state.withLockedValue { $0.verifying = true }
        var der: [[UInt8]] = []
        der.reserveCapacity(certificates.count)
        for certificate in certificates {
            // A certificate BoringSSL cannot re-encode is left out; it is refused below if it is the leaf.
            der.append((try? certificate.toDERBytes()) ?? [])
        }
        let key = self.cache.map { $0.key(host: self.host, presentedChain: der, manager: self.manager) }
        if let cache = self.cache, let key, let hit = cache.cachedDecision(for: key) {
            self.finish(.trusted(hit.chain), presented: hit.presented, cached: true, promise: promise)
            return
        }
        // A chain parsed whole before, byte for byte the same: its certificates, without a lookup per certificate.
        if let remembered = self.parsedCertificates.chain(derEncoded: der) {
            self.evaluate(remembered, skipped: [], key: key, promise: promise)
            return
        }
        var chain: [Certificate] = []
        chain.reserveCapacity(der.count)
        // Why presented certificates could not be parsed, in words (a weak key, a SHA-1 signature).
        var unparsable: [TrustFailureReason] = []
        for (index, bytes) in der.enumerated() {
            do {
                chain.append(try self.parsedCertificates.certificate(derEncoded: bytes))
            } catch {
                self.parseFailureTexts.withLockedValue { $0.append(String(reflecting: error)) }
                for reason in CertificateProblems.whyUnparsable(bytes) where !unparsable.contains(reason) {
                    unparsable.append(reason)
                }
                // An intermediate that cannot be parsed cannot be on a path; an unparsable leaf is fatal.
                guard index == 0 else { continue }
                let refusal = TrustRefusal(host: self.host, reasons: unparsable, presentedChain: [])
                self.finish(.refused(refusal), presented: [], cached: false, promise: promise)
                return
            }
        }
        if unparsable.isEmpty { self.parsedCertificates.rememberChain(chain, derEncoded: der) }
        self.evaluate(chain, skipped: unparsable, key: key, promise: promise)
    }

    /// Evaluates the parsed chain `presented` (`skipped`: why presented certificates left out of it could not be
    /// parsed) and completes `promise` with the decision.
    private func evaluate(
        _ presented: [Certificate],
        skipped: [TrustFailureReason],
        key: TrustDecisionCache.Key?,
        promise: EventLoopPromise<NIOSSLVerificationResultWithMetadata>
    ) {
        // The manager, host and cache are read through `self`: capturing copies of them (the manager is a struct
        // of half a dozen references) retained and released each of them once more per handshake.
        let evaluation: @Sendable () async -> Void = {
            var decision = await RevocationFetchRoute.$proxy.withValue(self.proxy) {
                await self.manager.evaluate(presented, forHost: self.host)
            }
            // A refused chain whose intermediate could not be parsed: say why, or the refusal only says that no
            // path was found.
            if case .refused(var refusal) = decision, !skipped.isEmpty {
                refusal.reasons = skipped + refusal.reasons.filter { !skipped.contains($0) }
                decision = .refused(refusal)
            }
            if let cache = self.cache, let key { cache.store(decision, presented: presented, for: key) }
            self.finish(decision, presented: presented, cached: false, promise: promise)
        }
        // Evaluate right here, on the event loop, as BoringSSL verifies inside the handshake for other clients:
        // Bulwark's evaluators only suspend for real I/O (loading the system roots, a revocation check), so the
        // decision is normally ready before this returns, and the handshake resumes in the next event-loop tick
        // instead of after a hop to the global executor and back (two thread wake-ups). If the evaluator does
        // suspend, it continues on the global executor and completes the promise from there.
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            Task.immediate(operation: evaluation)
        } else {
            Task(operation: evaluation)
        }
    }

    private func finish(
        _ decision: TrustDecision,
        presented: [Certificate],
        cached: Bool,
        promise: EventLoopPromise<NIOSSLVerificationResultWithMetadata>
    ) {
        self.state.withLockedValue { $0 = (decision, presented, false) }
        TrustEvents.report(decision, presented: presented, cached: cached, to: self.monitor)
        self.reportPinFailures(decision)
        promise.succeed(decision.isTrusted ? .certificateVerified(VerificationMetadata(nil)) : .failed)
    }
}
