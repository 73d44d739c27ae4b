import BulwarkTestHelpers
import BulwarkTestSupport
import Testing

@testable import Bulwark

// `bulwark audit` read as an interceptor would: the verdict must come from what was verified (the key that signed the
// leaf), never from which certificates the interceptor chose to present beside its own.

@Suite("Audit hardening")
struct AuditHardeningTests {
    static let origin = try! TestChain.make(host: "origin.bulwark.test")
    // Another CA with the same names: its intermediate is named as the origin's, so its leaf's issuer name is the
    // origin's intermediate's subject.
    static let interceptor = try! TestChain.make(host: "origin.bulwark.test")

    typealias Observation = InterceptionCheck.Observation

    static func verdict(_ proxied: Observation, _ direct: Observation) -> InterceptionCheck.Verdict {
        InterceptionCheckTests.verdict(proxied, direct)
    }

    @Test("an interceptor's leaf presented beside the origin's real intermediate and its own same-named one is caught")
    func interceptorBesideTheOriginsIntermediate() throws {
        let originIntermediate = try #require(Self.origin.intermediate).certificate
        let interceptorIntermediate = try #require(Self.interceptor.intermediate).certificate
        #expect(Self.interceptor.leaf.certificate.issuer == originIntermediate.subject)
        let forged = [Self.interceptor.leaf.certificate, originIntermediate, interceptorIntermediate]
        let genuine = [Self.origin.leaf.certificate, originIntermediate]

        // The chains as presented, summarized: the second certificate proves nothing about who signed the leaf.
        let presentedOnly = Self.verdict(
            Observation(presentedChain: forged.map(CertificateSummary.init), error: nil),
            Observation(presentedChain: genuine.map(CertificateSummary.init), error: nil)
        )
        #expect(presentedOnly == .interceptionAccepted)

        // The chains with what the policy verified: the interceptor's leaf was verified up its own intermediate.
        let verified = Self.verdict(
            Observation(
                presentedCertificates: forged,
                verifiedChain: [Self.interceptor.leaf, Self.interceptor.intermediate!, Self.interceptor.root]
                    .map(\.certificate),
                error: nil
            ),
            Observation(
                presentedCertificates: genuine,
                verifiedChain: [Self.origin.leaf, Self.origin.intermediate!, Self.origin.root].map(\.certificate),
                error: nil
            )
        )
        #expect(verified == .interceptionAccepted)

        // Refused chains carry no verified path: the key whose signature on the leaf holds decides.
        let refusedBoth = Self.verdict(
            Observation(presentedCertificates: forged, verifiedChain: nil, error: Self.refusal),
            Observation(presentedCertificates: genuine, verifiedChain: nil, error: Self.refusal)
        )
        #expect(refusedBoth == .interceptionRefused)
    }

    @Test("a leaf rotated between the handshakes under the same verified issuing key is still the origin's own")
    func rotationUnderTheVerifiedIssuingKey() throws {
        let intermediate = try #require(Self.origin.intermediate)
        let rotated = try CertificateFactory.issueLeaf(
            from: intermediate,
            commonName: "origin.bulwark.test",
            dnsNames: ["origin.bulwark.test"]
        )
        let first = [Self.origin.leaf.certificate, intermediate.certificate]
        let second = [rotated.certificate, intermediate.certificate]
        let trusted = Self.verdict(
            Observation(
                presentedCertificates: first,
                verifiedChain: first + [Self.origin.root.certificate],
                error: nil
            ),
            Observation(
                presentedCertificates: second,
                verifiedChain: second + [Self.origin.root.certificate],
                error: nil
            )
        )
        #expect(trusted == .tunnelled)
        // Refused both ways, the leaf's signature is checked against the presented issuer's key.
        let refused = Self.verdict(
            Observation(presentedCertificates: first, verifiedChain: nil, error: Self.refusal),
            Observation(presentedCertificates: second, verifiedChain: nil, error: Self.refusal)
        )
        #expect(refused == .originRefused)
    }

    @Test("a proxy whose own certificate the proxy trust refuses is a proxy failure, not a refused interception")
    func untrustedProxyIsAProxyFailure() throws {
        let proxyChain = [Self.interceptor.leaf.certificate, Self.interceptor.intermediate!.certificate]
        let untrusted = BulwarkError(
            .proxyUntrusted,
            host: "origin.bulwark.test",
            detail: "the proxy at 127.0.0.1:3129 is not trusted",
            trustRefusal: TrustRefusal(
                host: "127.0.0.1",
                reasons: [.untrustedChain(details: ["no path to a trusted root"])],
                presentedChain: proxyChain.map(CertificateSummary.init)
            )
        )
        let verdict = Self.verdict(
            Observation(presentedChain: proxyChain.map(CertificateSummary.init), error: untrusted),
            Observation(
                presentedChain: [Self.origin.leaf, Self.origin.intermediate!].map {
                    CertificateSummary($0.certificate)
                },
                error: nil
            )
        )
        #expect(verdict == .proxyFailed)
    }

    static let refusal = BulwarkError.trustRefused(
        TrustRefusal(
            host: "origin.bulwark.test",
            reasons: [.untrustedChain(details: ["no path to a trusted root"])],
            presentedChain: []
        )
    )

    @Test(
        "under a policy that verifies nothing, the 'verified' chain's second certificate is used only if it signed the leaf"
    )
    func disabledValidationCannotVouchForTheLeafsIssuer() throws {
        let originIntermediate = try #require(Self.origin.intermediate).certificate
        // `disabled` "verifies" whatever was presented: the interceptor's leaf beside the origin's intermediate.
        let forged = [Self.interceptor.leaf.certificate, originIntermediate]
        let verdict = Self.verdict(
            Observation(presentedCertificates: forged, verifiedChain: forged, error: nil),
            Observation(
                presentedCertificates: [Self.origin.leaf.certificate, originIntermediate],
                verifiedChain: [Self.origin.leaf, Self.origin.intermediate!, Self.origin.root].map(\.certificate),
                error: nil
            )
        )
        #expect(verdict == .interceptionAccepted)
    }

}
