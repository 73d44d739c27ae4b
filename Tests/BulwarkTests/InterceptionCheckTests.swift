import BulwarkTestHelpers
import BulwarkTestSupport
import Testing
import X509

@testable import Bulwark

// The verdict of `bulwark audit` as a pure function of two observations: the chain presented through the proxy and
// the one presented directly, each with the policy's answer.

@Suite("InterceptionCheck verdicts")
struct InterceptionCheckTests {
    static let origin = try! TestChain.make(host: "origin.bulwark.test")
    static let interceptor = try! TestChain.make(host: "origin.bulwark.test")

    static func chain(_ chain: TestChain) -> [CertificateSummary] {
        [chain.leaf.certificate, chain.intermediate!.certificate].map(CertificateSummary.init)
    }

    static let refusal = BulwarkError.trustRefused(
        TrustRefusal(
            host: "origin.bulwark.test",
            reasons: [.untrustedChain(details: ["no path to a trusted root"])],
            presentedChain: []
        )
    )
    static let unreachable = BulwarkError(.connectFailed, host: "origin.bulwark.test", detail: "no route")

    typealias Observation = InterceptionCheck.Observation

    static func verdict(_ proxied: Observation, _ direct: Observation) -> InterceptionCheck.Verdict {
        InterceptionCheck(
            host: "origin.bulwark.test",
            port: 443,
            proxy: "http://p:1",
            throughProxy: proxied,
            direct: direct
        )
        .verdict
    }

    @Test("each verdict from the two chains and the policy's answers")
    func verdicts() {
        let origin = Self.chain(Self.origin)
        let proxy = Self.chain(Self.interceptor)
        let trusted = { (chain: [CertificateSummary]) in Observation(presentedChain: chain, error: nil) }
        let refused = { (chain: [CertificateSummary]) in Observation(presentedChain: chain, error: Self.refusal) }
        let none = Observation(presentedChain: [], error: Self.unreachable)

        #expect(Self.verdict(refused(proxy), refused(origin)) == .interceptionRefused)
        #expect(Self.verdict(refused(proxy), trusted(origin)) == .interceptionRefused)
        #expect(Self.verdict(trusted(proxy), trusted(origin)) == .interceptionAccepted)
        #expect(Self.verdict(trusted(proxy), refused(origin)) == .interceptionAccepted)
        #expect(Self.verdict(trusted(origin), trusted(origin)) == .tunnelled)
        #expect(Self.verdict(refused(origin), refused(origin)) == .originRefused)
        #expect(Self.verdict(refused(proxy), none) == .refusedThroughProxy)
        #expect(Self.verdict(trusted(proxy), none) == .undetermined)
        #expect(Self.verdict(none, trusted(origin)) == .proxyFailed)
        #expect(Self.verdict(none, none) == .proxyFailed)
    }

    @Test("a certificate rotated between the handshakes, under the same issuing key, is the origin's own")
    func rotationIsNotInterception() throws {
        let intermediate = try #require(Self.origin.intermediate)
        let rotated = try CertificateFactory.issueLeaf(
            from: intermediate,
            commonName: "origin.bulwark.test",
            dnsNames: ["origin.bulwark.test"]
        )
        let first = [Self.origin.leaf.certificate, intermediate.certificate]
        let second = [rotated.certificate, intermediate.certificate]
        let observe = { (chain: [Certificate]) in
            Observation(presentedCertificates: chain, verifiedChain: nil, error: nil)
        }
        #expect(CertificateSummary(first[0]).publicKeyPin != CertificateSummary(second[0]).publicKeyPin)
        #expect(InterceptionCheck.sameOrigin(observe(first), observe(second)))
        // A leaf of the same name from another CA is not, even with an intermediate of the same name.
        let interceptor = [Self.interceptor.leaf, Self.interceptor.intermediate!].map(\.certificate)
        #expect(!InterceptionCheck.sameOrigin(observe(first), observe(interceptor)))
        // A leaf alone (no issuer certificate presented) is compared by itself only.
        #expect(!InterceptionCheck.sameOrigin(observe([first[0]]), observe([second[0]])))
        #expect(InterceptionCheck.sameOrigin(observe([first[0]]), observe(first)))
    }

    @Test("the verdict's sentence names the origin, the presented certificate and the refusal's reasons")
    func descriptions() {
        let proxy = Self.chain(Self.interceptor)
        let origin = Self.chain(Self.origin)
        let leaf = proxy[0]
        let refused = InterceptionCheck(
            host: "origin.bulwark.test",
            port: 443,
            proxy: "http://127.0.0.1:8080",
            throughProxy: Observation(presentedChain: proxy, error: Self.refusal),
            direct: Observation(presentedChain: origin, error: nil)
        )
        #expect(
            refused.description
                == "interception refused: the proxy presented its own certificate for origin.bulwark.test:443 "
                + "(\"\(leaf.subject)\", issued by \"\(leaf.issuer)\"), not the origin's, and the policy refused it "
                + "(trust_refused: untrusted_chain); nothing is sent on this path"
        )
        let failed = InterceptionCheck(
            host: "::1",
            port: 8443,
            proxy: "http://127.0.0.1:1",
            throughProxy: Observation(presentedChain: [], error: Self.unreachable),
            direct: Observation(presentedChain: origin, error: nil)
        )
        #expect(
            failed.description
                == "no TLS handshake through the proxy: connect_failed (origin.bulwark.test): no route"
        )
        #expect(InterceptionCheck.Verdict.allCases.map(\.rawValue).contains("interception_accepted"))
    }
}
