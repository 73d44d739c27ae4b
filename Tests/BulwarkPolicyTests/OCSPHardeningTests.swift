import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

// OCSP answers read as an attacker would: a response that says two things about one certificate, and a delegated
// responder that could do more than answer OCSP queries, are refused.
@Suite("OCSP hardening")
struct OCSPHardeningTests {
    static let now = CRLAuthority.now
    let authority: CRLAuthority
    let leaf: Certificate
    let request: OCSPRequest

    init() throws {
        self.authority = try CRLAuthority(name: "Bulwark OCSP Test CA")
        self.leaf = try self.authority.issue(serial: 0x2001)
        self.request = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate)
    }

    func single(_ status: OCSPResponseBuilder.CertificateStatus) throws -> OCSPResponseBuilder.Single {
        try OCSPResponseBuilder.Single(
            certificate: self.leaf,
            issuer: self.authority.certificate,
            status: status,
            thisUpdate: Self.now - 3_600,
            nextUpdate: Self.now + 86_400
        )
    }

    func verify(_ builder: OCSPResponseBuilder, key: P256.Signing.PrivateKey) throws -> RevocationStatus {
        var builder = builder
        builder.nonce = self.request.nonce
        let response = try OCSPResponse(derEncoded: try builder.der(signedWith: key))
        return try response.status(
            for: self.request,
            certificate: self.leaf,
            issuer: self.authority.certificate,
            at: Self.now
        )
    }

    @Test(
        "two answers for the same certificate that disagree: revoked wins in either order, good beside unknown is refused"
    )
    func disagreeingDuplicateAnswers() throws {
        let good = try self.single(.good)
        let revoked = try self.single(.revoked(Self.now - 600, reason: 1))
        let unknown = try self.single(.unknown)
        for responses in [[good, revoked], [revoked, good]] {
            let builder = OCSPResponseBuilder(
                responder: .name(of: self.authority.certificate),
                producedAt: Self.now - 60,
                responses: responses
            )
            // The review's finding: refusing both as malformed let soft mode pass a certificate its responder
            // had signed as revoked.
            #expect(try self.verify(builder, key: self.authority.key).code == "revoked", "\(responses.map(\.status))")
        }
        for responses in [[good, unknown], [unknown, good]] {
            let builder = OCSPResponseBuilder(
                responder: .name(of: self.authority.certificate),
                producedAt: Self.now - 60,
                responses: responses
            )
            #expect(throws: RevocationError.self, "\(responses.map(\.status))") {
                try self.verify(builder, key: self.authority.key)
            }
        }
        // The same answer twice is no contradiction.
        let twice = OCSPResponseBuilder(
            responder: .name(of: self.authority.certificate),
            producedAt: Self.now - 60,
            responses: [good, good]
        )
        #expect(try self.verify(twice, key: self.authority.key).code == "good")
    }

    /// A delegated responder's certificate, issued by the test CA, with OCSPSigning and `extensions` besides.
    func delegate(_ extensions: Certificate.Extensions) throws -> (P256.Signing.PrivateKey, Certificate) {
        let key = P256.Signing.PrivateKey()
        var all = extensions
        try all.append(Certificate.Extension(try ExtendedKeyUsage([.ocspSigning]), critical: false))
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: Self.now - 86_400,
            notValidAfter: Self.now + 86_400,
            issuer: self.authority.certificate.subject,
            subject: try DistinguishedName { CommonName("Bulwark OCSP Responder") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: all,
            issuerPrivateKey: .init(self.authority.key)
        )
        return (key, certificate)
    }

    @Test("a delegated responder that is a CA, or has an unknown critical extension, is refused")
    func delegatedResponderThatCouldDoMore() throws {
        var asCA = Certificate.Extensions()
        try asCA.append(
            Certificate.Extension(BasicConstraints.isCertificateAuthority(maxPathLength: nil), critical: true)
        )
        var unknownCritical = Certificate.Extensions()
        try unknownCritical.append(Certificate.Extension(BasicConstraints.notCertificateAuthority, critical: true))
        try unknownCritical.append(
            Certificate.Extension(oid: [1, 3, 6, 1, 4, 1, 55_555, 1], critical: true, value: [5, 0])
        )
        var plain = Certificate.Extensions()
        try plain.append(Certificate.Extension(BasicConstraints.notCertificateAuthority, critical: true))
        for (extensions, refused) in [(asCA, true), (unknownCritical, true), (plain, false)] {
            let (key, certificate) = try self.delegate(extensions)
            var builder = OCSPResponseBuilder(
                responder: .name(of: certificate),
                producedAt: Self.now - 60,
                responses: [try self.single(.good)]
            )
            builder.certificates = [certificate]
            if refused {
                let error = #expect(throws: RevocationError.self) { try self.verify(builder, key: key) }
                #expect(error?.code == "unauthorized_responder", "\(String(describing: error))")
            } else {
                #expect(try self.verify(builder, key: key).code == "good")
            }
        }
    }
    @Test(
        "the coalescing key holds the issuer's DER name, key and the serial in fixed-width hex: no two queries share it"
    )
    func coalescingKeyIsUnambiguous() throws {
        // An issuer key with a byte below 0x10, which variable-width hex would write as one digit.
        var authority = try CRLAuthority(name: "Bulwark OCSP Test CA")
        while !authority.certificate.publicKey.subjectPublicKeyInfoBytes.contains(where: { $0 < 0x10 }) {
            authority = try CRLAuthority(name: "Bulwark OCSP Test CA")
        }
        let leaf = try authority.issue(serial: 0x0102)
        let hex = { (bytes: [UInt8]) in bytes.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined() }
        var name = DER.Serializer()
        try name.serialize(authority.certificate.subject)
        let key = RevocationTrustEvaluator.queryKey(leaf, issuer: authority.certificate)
        #expect(key.contains(hex(name.serializedBytes)), "\(key)")
        #expect(key.contains(hex(Array(authority.certificate.publicKey.subjectPublicKeyInfoBytes))), "\(key)")
        #expect(key.hasSuffix(" " + hex(Array(leaf.serialNumber.bytes))), "\(key)")
    }
}
