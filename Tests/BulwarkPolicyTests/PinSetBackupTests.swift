import BulwarkTestSupport
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// The "at least two pins" rule counts keys, not pin texts (issue 16): a certificate pin and the SPKI pin of the
/// same certificate name one key, and losing that key locks every user out just as a single pin would.
@Suite("Pin set backup rule")
struct PinSetBackupTests {
    let chain = Chains[.valid]
    let now = Date()

    func evaluate(_ pins: PinSet) async -> TrustDecision {
        await PublicKeysTrustEvaluator(pinSet: pins, roots: Chains.roots(self.chain))
            .evaluate(self.chain.presentedChain, forHost: Chains.host, at: self.now)
    }

    @Test func aKeyPinAndItsCertificatesPinAreNotTwoPins() async throws {
        let intermediate = self.chain.intermediate!.certificate
        let pins = try PinSet([Pin.publicKey(of: intermediate), Pin.certificate(of: intermediate)])
        let decision = await self.evaluate(pins)
        #expect(!decision.isTrusted)
        guard let reason = decision.reasons.first, reason.code == "misconfigured", let detail = reason.detail else {
            Issue.record("expected a misconfigured pin set, got \(decision.reasons)")
            return
        }
        #expect(detail.contains("backup"))
        #expect(detail.contains(Pin.publicKey(of: intermediate).description))
    }

    @Test func aBackupForAnotherKeyCounts() async throws {
        let intermediate = self.chain.intermediate!.certificate
        let backup = Pin.publicKey(of: Chains[.wrongHost].root.certificate)
        let pins = try PinSet([Pin.publicKey(of: intermediate), Pin.certificate(of: intermediate), backup])
        #expect(await self.evaluate(pins).isTrusted)
        // Two keys of the same chain are two keys.
        let twoKeys = try PinSet([Pin.certificate(of: intermediate), Pin.publicKey(of: self.chain.root.certificate)])
        #expect(await self.evaluate(twoKeys).isTrusted)
    }

    @Test func optingOutOrReportOnlyAllowsOneKey() async throws {
        let intermediate = self.chain.intermediate!.certificate
        let pins = [Pin.publicKey(of: intermediate), Pin.certificate(of: intermediate)]
        #expect(await self.evaluate(try PinSet(pins, allowSinglePin: true)).isTrusted)
        #expect(await self.evaluate(try PinSet(pins, enforcement: .reportOnly)).isTrusted)
    }
}
