import BulwarkTestSupport
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

@Suite("Name-constraint comparison budget")
struct NameConstraintBudgetTests {
    /// A root constraining `constraints` DNS subtrees and a leaf of `names` DNS names under it.
    static func chain(constraints: Int, names: Int) throws -> (root: Certificate, leaf: Certificate) {
        let key = try TestKeyAlgorithm.p256.makePrivateKey()
        let name = try DistinguishedName {
            CommonName("Constrained Root")
            OrganizationName("Bulwark Tests")
        }
        let now = Date()
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: key.publicKey)
            Critical(NameConstraints(permittedDNSDomains: (0..<constraints).map { "d\($0).test" }))
        }
        let root = try Certificate(
            version: .v3,
            serialNumber: CertificateFactory.makeSerialNumber(),
            publicKey: key.publicKey,
            notValidBefore: now - 3600,
            notValidAfter: now + 86_400,
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: key
        )
        let leaf = try CertificateFactory.issueLeaf(
            from: TestIdentity(certificate: root, privateKey: key),
            commonName: "n0.d0.test",
            dnsNames: (0..<names).map { "n\($0).d0.test" }
        )
        return (root, leaf.certificate)
    }

    @Test func tooManyComparisonsAreRefusedBeforeTheyAreMade() async throws {
        // 600 constraints × (500 names + 1 subject attribute) = 300,600 > 250,000.
        let (root, leaf) = try Self.chain(constraints: 600, names: 500)
        let failure = NameConstraintChecks.budgetFailure([leaf, root])
        #expect(failure == "name constraints would need more than 250000 comparisons")
        let evaluator = DefaultTrustEvaluator(roots: .custom([root]))
        let decision = await evaluator.evaluate([leaf], forHost: "n0.d0.test", at: Date())
        let refusal = try #require(decision.refusal)
        #expect(String(describing: refusal).contains("250000 comparisons"))
    }

    @Test func chainsWithinTheBudgetAreChecked() async throws {
        let (root, leaf) = try Self.chain(constraints: 3, names: 2)
        #expect(NameConstraintChecks.budgetFailure([leaf, root]) == nil)
        let evaluator = DefaultTrustEvaluator(roots: .custom([root]))
        let decision = await evaluator.evaluate([leaf], forHost: "n1.d0.test", at: Date())
        #expect(decision.isTrusted)
    }
}
