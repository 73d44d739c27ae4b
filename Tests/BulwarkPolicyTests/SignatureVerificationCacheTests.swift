import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

@Suite("Verified signatures, remembered by their exact inputs")
struct SignatureVerificationCacheTests {
    static let issuerName = try! DistinguishedName { CommonName("Signature Cache Test CA") }
    static let subjectKey = P256.Signing.PrivateKey()
    static let notBefore = Date(timeIntervalSince1970: 1_700_000_000)

    /// A CA certificate named `issuerName` with the key of `key`.
    static func issuer(_ key: P256.Signing.PrivateKey) throws -> Certificate {
        try Certificate(
            version: .v3,
            serialNumber: .init(bytes: [9]),
            publicKey: .init(key.publicKey),
            notValidBefore: Self.notBefore,
            notValidAfter: Self.notBefore + 86_400 * 365,
            issuer: Self.issuerName,
            subject: Self.issuerName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            },
            issuerPrivateKey: .init(key)
        )
    }

    /// The same `TBSCertificate` every time (no authority key identifier, fixed fields), signed by `key`.
    static func leaf(signedBy key: P256.Signing.PrivateKey) throws -> Certificate {
        try Certificate(
            version: .v3,
            serialNumber: .init(bytes: [1, 2, 3]),
            publicKey: .init(Self.subjectKey.publicKey),
            notValidBefore: Self.notBefore,
            notValidAfter: Self.notBefore + 86_400,
            issuer: Self.issuerName,
            subject: try DistinguishedName { CommonName("leaf.example") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions(),
            issuerPrivateKey: .init(key)
        )
    }

    /// `certificate` with the last byte of its signature changed (still a well-formed ECDSA signature).
    static func tampered(_ certificate: Certificate) throws -> Certificate {
        var der = certificate.derBytes
        der[der.count - 1] ^= 0x01
        return try Certificate(derEncoded: der)
    }

    @Test func aGoodSignatureIsVerifiedOnceThenAnsweredFromMemory() throws {
        let cache = SignatureVerificationCache()
        let key = P256.Signing.PrivateKey()
        let issuer = try Self.issuer(key)
        let leaf = try Self.leaf(signedBy: key)
        #expect(cache.isValidSignature(of: leaf, issuedBy: issuer))
        #expect(cache.verificationCount == 1)
        // The same certificate parsed again from its bytes, as each handshake does.
        let reparsed = try Certificate(derEncoded: leaf.derBytes)
        #expect(cache.isValidSignature(of: reparsed, issuedBy: issuer))
        #expect(cache.verificationCount == 1)
        #expect(cache.count == 1)
    }

    @Test func aBadSignatureIsNeverCachedAsGood() throws {
        let cache = SignatureVerificationCache()
        let key = P256.Signing.PrivateKey()
        let issuer = try Self.issuer(key)
        let leaf = try Self.leaf(signedBy: key)
        let bad = try Self.tampered(leaf)
        #expect(bad.tbsCertificateBytes == leaf.tbsCertificateBytes)
        // Refused, and refused again with the arithmetic each time: nothing is stored.
        #expect(!cache.isValidSignature(of: bad, issuedBy: issuer))
        #expect(!cache.isValidSignature(of: bad, issuedBy: issuer))
        #expect(cache.verificationCount == 2)
        #expect(cache.count == 0)
        // Once the good signature is remembered, the bad one over the same bytes with the same key is still refused.
        #expect(cache.isValidSignature(of: leaf, issuedBy: issuer))
        #expect(!cache.isValidSignature(of: bad, issuedBy: issuer))
        #expect(cache.verificationCount == 4)
        #expect(cache.count == 1)
        // The good signature is not accepted from another key with the same name either.
        let impostor = try Self.issuer(P256.Signing.PrivateKey())
        #expect(!cache.isValidSignature(of: leaf, issuedBy: impostor))
        #expect(cache.verificationCount == 5)
    }

    @Test func aCertificateResignedByAnotherKeyIsVerifiedAfresh() throws {
        let cache = SignatureVerificationCache()
        let keyA = P256.Signing.PrivateKey()
        let keyB = P256.Signing.PrivateKey()
        let issuerA = try Self.issuer(keyA)
        let issuerB = try Self.issuer(keyB)
        let byA = try Self.leaf(signedBy: keyA)
        let byB = try Self.leaf(signedBy: keyB)
        #expect(byA.tbsCertificateBytes == byB.tbsCertificateBytes)
        #expect(cache.isValidSignature(of: byA, issuedBy: issuerA))
        #expect(cache.verificationCount == 1)
        // Same TBSCertificate, another key and signature: verified with the arithmetic, not taken from memory.
        #expect(!cache.isValidSignature(of: byB, issuedBy: issuerA))
        #expect(cache.verificationCount == 2)
        #expect(cache.isValidSignature(of: byB, issuedBy: issuerB))
        #expect(cache.verificationCount == 3)
        #expect(!cache.isValidSignature(of: byA, issuedBy: issuerB))
        #expect(cache.verificationCount == 4)
        #expect(cache.count == 2)
    }

    @Test func signedBytesAreKeyedByEveryInput() throws {
        let cache = SignatureVerificationCache()
        let key = P256.Signing.PrivateKey()
        let signer = try Self.issuer(key)
        let message = Array("an OCSP response's signed bytes".utf8)
        let signature = Array(try key.signature(for: message).derRepresentation)
        #expect(cache.isValidSignature(signature, for: message, signatureAlgorithm: .ecdsaWithSHA256, signer: signer))
        #expect(cache.isValidSignature(signature, for: message, signatureAlgorithm: .ecdsaWithSHA256, signer: signer))
        #expect(cache.verificationCount == 1)
        var changed = message
        changed[0] ^= 1
        #expect(!cache.isValidSignature(signature, for: changed, signatureAlgorithm: .ecdsaWithSHA256, signer: signer))
        #expect(!cache.isValidSignature(signature, for: message, signatureAlgorithm: .ecdsaWithSHA384, signer: signer))
        let other = try Self.issuer(P256.Signing.PrivateKey())
        #expect(!cache.isValidSignature(signature, for: message, signatureAlgorithm: .ecdsaWithSHA256, signer: other))
        #expect(cache.verificationCount == 4)
        #expect(cache.count == 1)
    }

    @Test func theEvictionBoundHolds() throws {
        let cache = SignatureVerificationCache(capacity: 3)
        let key = P256.Signing.PrivateKey()
        let signer = try Self.issuer(key)
        var messages: [[UInt8]] = []
        var signatures: [[UInt8]] = []
        for index in 0..<5 {
            let message = Array("message \(index)".utf8)
            messages.append(message)
            signatures.append(Array(try key.signature(for: message).derRepresentation))
        }
        for index in 0..<5 {
            #expect(
                cache.isValidSignature(
                    signatures[index],
                    for: messages[index],
                    signatureAlgorithm: .ecdsaWithSHA256,
                    signer: signer
                )
            )
            #expect(cache.count == min(index + 1, 3))
        }
        #expect(cache.verificationCount == 5)
        // The two oldest were evicted: verified again; the newest is still remembered.
        #expect(
            cache.isValidSignature(
                signatures[4],
                for: messages[4],
                signatureAlgorithm: .ecdsaWithSHA256,
                signer: signer
            )
        )
        #expect(cache.verificationCount == 5)
        #expect(
            cache.isValidSignature(
                signatures[0],
                for: messages[0],
                signatureAlgorithm: .ecdsaWithSHA256,
                signer: signer
            )
        )
        #expect(cache.verificationCount == 6)
        #expect(cache.count == 3)
    }

    @Test func largeOrDisabledIsVerifiedEveryTime() throws {
        let key = P256.Signing.PrivateKey()
        let issuer = try Self.issuer(key)
        let leaf = try Self.leaf(signedBy: key)
        for cache in [
            SignatureVerificationCache(capacity: 0),
            SignatureVerificationCache(maximumSignedBytes: leaf.tbsCertificateBytes.count - 1),
        ] {
            #expect(cache.isValidSignature(of: leaf, issuedBy: issuer))
            #expect(cache.isValidSignature(of: leaf, issuedBy: issuer))
            #expect(cache.verificationCount == 2)
            #expect(cache.count == 0)
        }
    }

    @Test func theSignatureFieldsAreCutFromTheEncoding() throws {
        let key = P256.Signing.PrivateKey()
        let leaf = try Self.leaf(signedBy: key)
        let fields = try #require(leaf.signatureFieldsDER)
        var serializer = DER.Serializer()
        try serializer.serialize(AlgorithmIdentifierCheck.ecdsaWithSHA256)
        #expect(Array(fields.algorithm) == serializer.serializedBytes)
        #expect(fields.value.first == 0x03)
        #expect(fields.value.endIndex == leaf.derBytes.count)
    }
}

/// The DER of the `ecdsa-with-SHA256` AlgorithmIdentifier (RFC 5758: no parameters).
private enum AlgorithmIdentifierCheck {
    static let ecdsaWithSHA256 = ASN1ObjectIdentifierSequence(oid: [1, 2, 840, 10045, 4, 3, 2])
}

private struct ASN1ObjectIdentifierSequence: DERSerializable {
    let oid: ASN1ObjectIdentifier

    func serialize(into coder: inout DER.Serializer) throws {
        try coder.appendConstructedNode(identifier: .sequence) { try $0.serialize(self.oid) }
    }
}
