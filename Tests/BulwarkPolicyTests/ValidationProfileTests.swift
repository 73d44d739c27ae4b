import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

/// The RFC 5280 profile and the leaf purposes of `bulwark verify` (issue 41), and what the attack review of them found:
/// a handshake must never be judged by a verifier built for another profile or purpose.
@Suite("Validation profiles and purposes")
struct ValidationProfileTests {
    let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))

    func blueprint(_ name: String, ca: Bool) -> CertificateBlueprint {
        var blueprint = CertificateBlueprint(
            commonName: name,
            privateKey: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            notBefore: self.now - 3_600,
            notAfter: self.now + 86_400
        )
        if ca {
            blueprint.basicConstraints = .isCertificateAuthority(maxPathLength: nil)
            blueprint.keyUsage = KeyUsage(keyCertSign: true, cRLSign: true)
        } else {
            blueprint.keyUsage = KeyUsage(digitalSignature: true)
        }
        return blueprint
    }

    @Test("a verifier built for another purpose or profile is never reused for a handshake's (review finding 1)")
    func verifierMemoIsKeyedByProfileAndPurpose() async throws {
        // A leaf for clientAuth only: any purpose and the RFC 5280 profile with any purpose accept it, a server
        // handshake must not.
        let chain = try TestChain.make(.wrongExtendedKeyUsage, host: "www.example.test")
        let roots = TrustRoots.custom([chain.root.certificate])
        var anyPurpose = ValidationOptions()
        anyPurpose.purpose = .any
        var rfc5280 = anyPurpose
        rfc5280.profile = .rfc5280
        for lax in [anyPurpose, rfc5280] {
            let first = await DefaultTrustEvaluator(roots: roots, options: lax)
                .evaluate(chain.presentedChain, forHost: "www.example.test", at: self.now)
            #expect(first.isTrusted, "\(String(describing: first.refusal))")
            let handshake = await DefaultTrustEvaluator(roots: roots)
                .evaluate(chain.presentedChain, forHost: "www.example.test", at: self.now)
            let refusal = try #require(handshake.refusal)
            #expect("\(refusal)".contains("serverAuth"), "\(refusal)")
        }
    }

    @Test("a client leaf under an intermediate limited to serverAuth is refused for the client purpose (finding 2)")
    func clientPurposeChecksEveryIntermediatesUsage() async throws {
        let root = try CertificateFactory.makeRoot()
        var intermediate = self.blueprint("Server-only Intermediate", ca: true)
        intermediate.extendedKeyUsage = [.serverAuth]
        let issuing = try intermediate.issue(issuer: root)
        var leaf = self.blueprint("client one", ca: false)
        leaf.extendedKeyUsage = [.clientAuth]
        leaf.subjectAlternativeNames = [.dnsName("client.example.test")]
        let client = try leaf.issue(issuer: issuing)
        for profile in [ValidationProfile.webPKI, .rfc5280] {
            var verifier = OfflineChainVerifier(roots: [root.certificate])
            verifier.untrusted = [issuing.certificate]
            verifier.purpose = .client
            verifier.profile = profile
            let result = await verifier.verify(client.certificate, at: self.now)
            let refusal = try #require(result.decision.refusal, "\(profile)")
            #expect("\(refusal)".contains("clientAuth"), "\(profile): \(refusal)")
        }
    }

    @Test("rfc5280 with a host still refuses a wildcard that covers an excluded name (finding 7)")
    func rfc5280ProfileKeepsTheWildcardExclusionRule() async throws {
        let root = try CertificateFactory.makeRoot()
        var constrained = self.blueprint("Constrained CA", ca: true)
        constrained.nameConstraints = NameConstraints(excludedDNSDomains: ["secret.example.com"])
        let issuing = try constrained.issue(issuer: root)
        var leaf = self.blueprint("wildcard", ca: false)
        leaf.extendedKeyUsage = [.serverAuth]
        leaf.subjectAlternativeNames = [.dnsName("*.example.com")]
        let wildcard = try leaf.issue(issuer: issuing)
        for profile in [ValidationProfile.webPKI, .rfc5280] {
            var verifier = OfflineChainVerifier(roots: [root.certificate])
            verifier.untrusted = [issuing.certificate]
            verifier.profile = profile
            let result = await verifier.verify(wildcard.certificate, host: "secret.example.com", at: self.now)
            #expect(!result.isTrusted, "\(profile)")
        }
    }

    @Test("rfc5280 refuses a CA that maps anyPolicy, as RFC 5280 6.1.4 (a) requires (finding 8)")
    func rfc5280ProfileRefusesAMappingOfAnyPolicy() async throws {
        let anyPolicy: ASN1ObjectIdentifier = [2, 5, 29, 32, 0]
        let other: ASN1ObjectIdentifier = [1, 2, 3, 4]
        for (from, to) in [(anyPolicy, other), (other, anyPolicy)] {
            var coder = DER.Serializer()
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(from)
                    try coder.serialize(to)
                }
            }
            let root = try CertificateFactory.makeRoot()
            var mapping = self.blueprint("Mapping CA", ca: true)
            mapping.extraExtensions = [
                Certificate.Extension(oid: [2, 5, 29, 33], critical: false, value: ArraySlice(coder.serializedBytes))
            ]
            let issuing = try mapping.issue(issuer: root)
            let leaf = try self.blueprint("mapped leaf", ca: false).issue(issuer: issuing)
            var verifier = OfflineChainVerifier(roots: [root.certificate])
            verifier.untrusted = [issuing.certificate]
            verifier.profile = .rfc5280
            verifier.purpose = .any
            let result = await verifier.verify(leaf.certificate, at: self.now)
            let refusal = try #require(result.decision.refusal)
            #expect("\(refusal)".contains("anyPolicy"), "\(refusal)")
        }
    }

    @Test("forged lists given beside the genuine one do not crowd it out of an offline verification (review 5)")
    func forgedListsDoNotCrowdOutTheGenuineList() async throws {
        let chain = try TestChain.make(.valid, host: "www.example.test")
        func list(revoking: [Certificate], key: P256.Signing.PrivateKey) throws -> CertificateRevocationList {
            var builder = CRLBuilder(
                issuer: chain.intermediate!.certificate.subject,
                thisUpdate: self.now - 60 - Double(revoking.isEmpty ? 0 : 600),
                nextUpdate: self.now + 86_400
            )
            builder.entries = revoking.map { .init($0.serialNumber, revokedAt: self.now - 600, reason: 1) }
            return try CertificateRevocationList(derEncoded: builder.der(signedWith: key))
        }
        let intermediateKey = try P256.Signing.PrivateKey(pemRepresentation: chain.intermediate!.privateKeyPEM)
        let rootKey = try P256.Signing.PrivateKey(pemRepresentation: chain.root.privateKeyPEM)
        let rootList = try CertificateRevocationList(
            derEncoded: CRLBuilder(
                issuer: chain.root.certificate.subject,
                thisUpdate: self.now - 60,
                nextUpdate: self.now + 86_400
            )
            .der(signedWith: rootKey)
        )
        let genuine = try list(revoking: [chain.leaf.certificate], key: intermediateKey)
        let forged = try (0..<80).map { _ in try list(revoking: [], key: P256.Signing.PrivateKey()) }
        var verifier = OfflineChainVerifier(roots: [chain.root.certificate])
        verifier.untrusted = [chain.intermediate!.certificate]
        verifier.revocation = .soft
        verifier.revocationLists = [genuine, rootList] + forged
        let result = await verifier.verify(chain.leaf.certificate, at: self.now)
        let refusal = try #require(result.decision.refusal)
        #expect(refusal.reasons.map(\.code) == ["revoked"], "\(refusal)")
    }

    @Test("rfc5280 refuses a CA whose key usage or extended key usage cannot be decoded (re-review 3)")
    func rfc5280ProfileRefusesUndecodableUsages() async throws {
        for oid: ASN1ObjectIdentifier in [[2, 5, 29, 15], [2, 5, 29, 37]] {
            let root = try CertificateFactory.makeRoot()
            var broken = self.blueprint("Broken Usage CA", ca: true)
            if oid == [2, 5, 29, 15] { broken.keyUsage = nil }
            broken.extraExtensions = [Certificate.Extension(oid: oid, critical: true, value: [0x05, 0x00])]
            let issuing = try broken.issue(issuer: root)
            let leaf = try self.blueprint("leaf", ca: false).issue(issuer: issuing)
            var verifier = OfflineChainVerifier(roots: [root.certificate])
            verifier.untrusted = [issuing.certificate]
            verifier.profile = .rfc5280
            verifier.purpose = .client
            let result = await verifier.verify(leaf.certificate, at: self.now)
            let refusal = try #require(result.decision.refusal, "\(oid)")
            #expect("\(refusal)".contains("malformed"), "\(refusal)")
        }
    }
}
