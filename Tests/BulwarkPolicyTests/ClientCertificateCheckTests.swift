import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509
import _CryptoExtras

@testable import BulwarkPolicy

@Suite("Client certificate checks (mutual TLS)")
struct ClientCertificateCheckTests {
    static func client(
        _ ca: TestIdentity,
        key: TestKeyAlgorithm = .p256,
        usage: [ExtendedKeyUsage.Usage] = [.clientAuth],
        validity: CertificateFactory.Validity = .current
    ) throws -> TestIdentity {
        try CertificateFactory.issueLeaf(
            from: ca,
            commonName: "device-42",
            dnsNames: [],
            extendedKeyUsage: usage,
            key: key,
            validity: validity
        )
    }

    @Test(
        "a client certificate of each accepted key type passes with its own key",
        arguments: TestKeyAlgorithm.allCases
    )
    func passes(key: TestKeyAlgorithm) throws {
        let ca = try CertificateFactory.makeRoot()
        let leaf = try Self.client(ca, key: key)
        try ClientCertificateCheck.check(leaf: leaf.certificate, privateKeyPublicKey: leaf.privateKey.publicKey)
    }

    @Test("another key of the same type, or a key of another type, is a key mismatch")
    func keyMismatch() throws {
        let ca = try CertificateFactory.makeRoot()
        let leaf = try Self.client(ca)
        let other = P256.Signing.PrivateKey()
        let error = #expect(throws: ClientIdentityError.self) {
            try ClientCertificateCheck.check(
                leaf: leaf.certificate,
                privateKeyPublicKey: Certificate.PublicKey(other.publicKey)
            )
        }
        #expect(error?.code == .keyMismatch)
        #expect(error?.subject == "CN=device-42")
        #expect(error?.description.contains("does not belong to the certificate") == true)

        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let typeError = #expect(throws: ClientIdentityError.self) {
            try ClientCertificateCheck.check(
                leaf: leaf.certificate,
                privateKeyPublicKey: Certificate.PublicKey(rsa.publicKey)
            )
        }
        #expect(typeError?.code == .keyMismatch)
        #expect(typeError?.description.contains("RSA 2048-bit key, ECDSA P-256 certificate") == true)

        let unreadable = #expect(throws: ClientIdentityError.self) {
            try ClientCertificateCheck.check(leaf: leaf.certificate, privateKeyPublicKey: nil)
        }
        #expect(unreadable?.code == .keyMismatch)
    }

    @Test("an expired or not yet valid certificate is refused with its date")
    func validity() throws {
        let ca = try CertificateFactory.makeRoot()
        let expired = try Self.client(ca, validity: .expired)
        let error = #expect(throws: ClientIdentityError.self) {
            try ClientCertificateCheck.check(
                leaf: expired.certificate,
                privateKeyPublicKey: expired.privateKey.publicKey
            )
        }
        #expect(error?.code == .expired)
        #expect(error?.description.contains("the certificate expired on ") == true)
        #expect(error?.description.contains(" UTC") == true)

        let future = try Self.client(ca, validity: .notYetValid)
        let early = #expect(throws: ClientIdentityError.self) {
            try ClientCertificateCheck.check(leaf: future.certificate, privateKeyPublicKey: future.privateKey.publicKey)
        }
        #expect(early?.code == .notYetValid)

        // The first and last second count (RFC 5280).
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let bounded = try Self.client(ca, validity: .between(start, start + 86_400))
        for moment in [start, start + 86_400] {
            try ClientCertificateCheck.check(
                leaf: bounded.certificate,
                privateKeyPublicKey: bounded.privateKey.publicKey,
                at: moment
            )
        }
    }

    @Test("a certificate without clientAuth, or without any extended key usage, is refused")
    func clientAuth() throws {
        let ca = try CertificateFactory.makeRoot()
        for usage: [ExtendedKeyUsage.Usage] in [[.serverAuth], []] {
            let leaf = try Self.client(ca, usage: usage)
            let error = #expect(throws: ClientIdentityError.self) {
                try ClientCertificateCheck.check(leaf: leaf.certificate, privateKeyPublicKey: leaf.privateKey.publicKey)
            }
            #expect(error?.code == .missingClientAuth)
            #expect(error?.description.contains("clientAuth") == true)
        }
        let both = try Self.client(ca, usage: [.serverAuth, .clientAuth])
        try ClientCertificateCheck.check(leaf: both.certificate, privateKeyPublicKey: both.privateKey.publicKey)
    }

    @Test("RSA under 2048 bits and P-521 keys are refused as unsupported")
    func unsupportedKeys() throws {
        let ca = try CertificateFactory.makeRoot()
        let keys: [(Certificate.PrivateKey, String)] = [
            (Certificate.PrivateKey(try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))), "RSA 1024-bit"),
            (Certificate.PrivateKey(P521.Signing.PrivateKey()), "ECDSA P-521"),
        ]
        for (key, name) in keys {
            var blueprint = CertificateBlueprint(
                commonName: "weak",
                privateKey: key,
                notBefore: Date() - 3600,
                notAfter: Date() + 86_400
            )
            blueprint.extendedKeyUsage = [.clientAuth]
            let leaf = try blueprint.issue(issuer: ca)
            let error = #expect(throws: ClientIdentityError.self) {
                try ClientCertificateCheck.check(leaf: leaf.certificate, privateKeyPublicKey: key.publicKey)
            }
            #expect(error?.code == .unsupportedKey)
            #expect(error?.description.contains(name) == true)
        }
    }

    @Test("the public key of a PKCS#8, SEC1 or PKCS#1 private key is derived; other bytes give nil")
    func publicKeyOfPrivateKey() throws {
        let p256 = P256.Signing.PrivateKey()
        let p384 = P384.Signing.PrivateKey()
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let ed25519 = Curve25519.Signing.PrivateKey()
        let cases: [([UInt8], Certificate.PublicKey)] = [
            (Array(p256.derRepresentation), Certificate.PublicKey(p256.publicKey)),
            (Array(p384.derRepresentation), Certificate.PublicKey(p384.publicKey)),
            (Array(rsa.derRepresentation), Certificate.PublicKey(rsa.publicKey)),
            (Self.ed25519PKCS8(ed25519), Certificate.PublicKey(ed25519.publicKey)),
        ]
        for (der, expected) in cases {
            let derived = der.withUnsafeBytes { ClientCertificateCheck.publicKey(ofPrivateKeyDER: $0) }
            #expect(derived == expected)
        }
        let garbage: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x00]
        #expect(garbage.withUnsafeBytes { ClientCertificateCheck.publicKey(ofPrivateKeyDER: $0) } == nil)
        // An Ed25519 PKCS#8 one byte short, or with another algorithm's OID (X25519, 1.3.101.110), is not one.
        var short = Self.ed25519PKCS8(ed25519)
        short.removeLast()
        #expect(short.withUnsafeBytes { ClientCertificateCheck.publicKey(ofPrivateKeyDER: $0) } == nil)
        var x25519 = Self.ed25519PKCS8(ed25519)
        x25519[11] = 0x6E
        #expect(x25519.withUnsafeBytes { ClientCertificateCheck.publicKey(ofPrivateKeyDER: $0) } == nil)
    }

    /// RFC 8410's PKCS#8 form of an Ed25519 key.
    static func ed25519PKCS8(_ key: Curve25519.Signing.PrivateKey) -> [UInt8] {
        [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]
            + Array(key.rawRepresentation)
    }

    @Test("an Ed25519 client certificate with its key passes the checks")
    func ed25519() throws {
        let ca = try CertificateFactory.makeRoot()
        let key = Curve25519.Signing.PrivateKey()
        var blueprint = CertificateBlueprint(
            commonName: "ed25519-device",
            privateKey: Certificate.PrivateKey(key),
            notBefore: Date() - 3600,
            notAfter: Date() + 86_400
        )
        blueprint.extendedKeyUsage = [.clientAuth]
        let leaf = try blueprint.issue(issuer: ca)
        try ClientCertificateCheck.check(
            leaf: leaf.certificate,
            privateKeyPublicKey: Certificate.PublicKey(key.publicKey)
        )
        // Without the key's public half (a key the TLS library decrypted), the refusal says how to give one.
        let error = #expect(throws: ClientIdentityError.self) {
            try ClientCertificateCheck.check(leaf: leaf.certificate, privateKeyPublicKey: nil)
        }
        #expect(error?.code == .unsupportedKey)
        #expect(error?.description.contains("unencrypted PKCS#8") == true, "\(String(describing: error))")
    }

    @Test("the fingerprint is the SHA-256 of the DER certificate in hexadecimal")
    func fingerprint() throws {
        let ca = try CertificateFactory.makeRoot()
        let leaf = try Self.client(ca)
        let fingerprint = ClientCertificateCheck.fingerprint(of: leaf.certificate)
        #expect(fingerprint.count == 64)
        let pin = Pin.certificate(of: leaf.certificate)
        #expect(fingerprint == pin.digest.map { String(format: "%02x", $0) }.joined())
    }
}
