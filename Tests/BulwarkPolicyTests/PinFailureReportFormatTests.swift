import BulwarkTestSupport
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// What a pin-failure report says about its chain (issue 16, defect 6).
@Suite("Pin-failure report format")
struct PinFailureReportFormatTests {
    let chain = Chains[.valid]
    let unrelated = Pin.publicKey(of: Chains[.wrongHost].root.certificate)

    func report(performDefaultValidation: Bool) async throws -> [String: Any] {
        let backup = Pin.publicKey(of: Chains[.expiredLeaf].root.certificate)
        let evaluator = PublicKeysTrustEvaluator(
            pinSet: try PinSet([self.unrelated, backup]),
            roots: Chains.roots(self.chain),
            performDefaultValidation: performDefaultValidation
        )
        let decision = await evaluator.evaluate(self.chain.presentedChain, forHost: Chains.host, at: Date())
        guard let reason = decision.reasons.first, reason.code == "pin_mismatch", let mismatch = reason.pinMismatch
        else {
            Issue.record("expected a pin mismatch, got \(decision.reasons)")
            return [:]
        }
        let json = try PinFailureReport(mismatch: mismatch, port: 443, pattern: nil).json()
        return try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
    }

    /// With default validation the chain in the report was verified: RFC 7469's `validated-certificate-chain`.
    @Test func aVerifiedChainIsReportedAsValidated() async throws {
        let report = try await self.report(performDefaultValidation: true)
        let validated = try #require(report["validated-certificate-chain"] as? [String])
        #expect(validated.count == 3)
        #expect(report["served-certificate-chain"] == nil)
    }

    /// Without default validation nothing verified the chain: it was reported as `validated-certificate-chain`
    /// all the same. It is the chain the server presented, and the report must say so.
    @Test func anUnverifiedChainIsReportedAsServedNotValidated() async throws {
        let report = try await self.report(performDefaultValidation: false)
        #expect(report["validated-certificate-chain"] == nil)
        let served = try #require(report["served-certificate-chain"] as? [String])
        let certificates = try served.map { try Certificate(pemEncoded: $0) }
        #expect(certificates == self.chain.presentedChain)
    }
}
