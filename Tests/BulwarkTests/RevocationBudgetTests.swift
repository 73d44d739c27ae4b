import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

@testable import Bulwark
@testable import BulwarkPolicy

// Soft revocation against black-holed sources (listening sockets that never answer): the whole evaluation stays
// within one budget (4 s by default), inside the 10 s handshake timeout, whatever the number of sources and
// certificates; it does not fail closed by running out the handshake's clock.
@Suite("Revocation budget", .tags(.timing))
struct RevocationBudgetTests {
    /// A CA certificate or leaf issued by `issuer` whose distribution point and OCSP responder are `url`.
    static func issue(
        _ name: String,
        by issuer: TestIdentity,
        naming url: String,
        isCA: Bool
    ) throws -> TestIdentity {
        var blueprint = CertificateBlueprint(
            commonName: name,
            privateKey: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            notBefore: Date() - 3_600,
            notAfter: Date() + 86_400
        )
        if isCA {
            blueprint.basicConstraints = .isCertificateAuthority(maxPathLength: nil)
            blueprint.keyUsage = KeyUsage(keyCertSign: true, cRLSign: true)
        } else {
            blueprint.subjectAlternativeNames = [.dnsName(name)]
            blueprint.extendedKeyUsage = [.serverAuth]
        }
        blueprint.extraExtensions = [
            try CRLBuilder.distributionPoints([url + "/list.crl"]),
            try Certificate.Extension(
                AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(url))]),
                critical: false
            ),
        ]
        return try blueprint.issue(issuer: issuer)
    }

    @Test("black-holed OCSP and CRL sources for two certificates: soft mode answers within the 4 s budget")
    func blackHoledSourcesStayWithinTheBudget() async throws {
        let hole = try await ScriptedProxyServer.start(.silent)
        let url = "http://127.0.0.1:\(hole.port)"
        let root = try CertificateFactory.makeRoot()
        let intermediate = try Self.issue("Budget Intermediate", by: root, naming: url, isCA: true)
        let leaf = try Self.issue("budget.bulwark.test", by: intermediate, naming: url, isCA: false)
        let evaluator = RevocationTrustEvaluator(
            .default(roots: .custom([root.certificate])),
            method: .any,
            mode: .soft,
            // Each fetch would wait 10 s: without the budget the two certificates' four fetches, made one after the
            // other, would take 40 s (10 s at least), far past the bound below.
            fetcher: HTTPRevocationFetcher(timeout: .seconds(10))
        )
        let clock = ContinuousClock()
        let start = clock.now
        let decision = await evaluator.evaluate(
            [leaf.certificate, intermediate.certificate],
            forHost: "budget.bulwark.test",
            at: Date()
        )
        let elapsed = clock.now - start
        let trusted = try #require(decision.trustedChain, "\(decision)")
        #expect(trusted.notices.map(\.code) == ["revocation_unknown", "revocation_unknown"])
        // The budget ends the evaluation after 4 s; the bound leaves a loaded machine room and still catches a budget
        // that is not kept (10 s or more).
        #expect(elapsed < .seconds(8), "\(elapsed)")
        #expect(elapsed >= .milliseconds(3_900), "\(elapsed)")
        try await hole.shutdown()
    }
}
