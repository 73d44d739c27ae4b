import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// The checks a client identity must pass before it is offered to any server: the private key belongs to the leaf
/// certificate, the key is of a type and size Bulwark accepts, the certificate is valid now, and it is meant for
/// client authentication.
///
/// Pure functions of their inputs: no I/O and no TLS library, so they are tested without a handshake and usable by
/// any transport.
public enum ClientCertificateCheck {
    /// The smallest RSA modulus accepted, in bits (as for server certificates).
    public static let minimumRSAKeySize = 2048

    /// Checks `leaf` and the public key of its private key (``publicKey(ofPrivateKeyDER:)``) at `now`.
    ///
    /// The checks run in this order, and the first failure is thrown: the key is supported (RSA of 2048 bits or more,
    /// ECDSA P-256 or P-384, Ed25519), the private key's public key equals the certificate's, the certificate is valid at
    /// `now` (its first and last second included, as in RFC 5280), and its extended key usage lists `clientAuth`. A
    /// certificate without an extended key usage extension is refused too: servers that check (most do) refuse it.
    ///
    /// - Throws: ``ClientIdentityError`` naming the certificate's subject and the problem.
    public static func check(
        leaf: Certificate,
        privateKeyPublicKey: Certificate.PublicKey?,
        at now: Date = Date()
    ) throws(ClientIdentityError) {
        let subject = String(describing: leaf.subject)
        if let problem = Self.keyProblem(leaf.publicKey) {
            throw ClientIdentityError(.unsupportedKey, subject: subject, detail: problem)
        }
        guard let privateKeyPublicKey else {
            if Curve25519.Signing.PublicKey(leaf.publicKey) != nil {
                throw ClientIdentityError(
                    .unsupportedKey,
                    subject: subject,
                    detail: "an Ed25519 key is read from an unencrypted PKCS#8 key only (PEM \"PRIVATE KEY\" or DER): "
                        + "the TLS library cannot hand back a key it decrypted, so it cannot be checked"
                )
            }
            throw ClientIdentityError(
                .keyMismatch,
                subject: subject,
                detail: "the private key is not of the certificate's type (\(Self.keyName(leaf.publicKey)))"
            )
        }
        guard privateKeyPublicKey == leaf.publicKey else {
            throw ClientIdentityError(
                .keyMismatch,
                subject: subject,
                detail: "the private key does not belong to the certificate (their public keys differ: "
                    + "\(Self.keyName(privateKeyPublicKey)) key, \(Self.keyName(leaf.publicKey)) certificate)"
            )
        }
        if now < leaf.notValidBefore {
            throw ClientIdentityError(
                .notYetValid,
                subject: subject,
                detail: "the certificate is not valid before \(Self.format(leaf.notValidBefore))"
            )
        }
        if now > leaf.notValidAfter {
            throw ClientIdentityError(
                .expired,
                subject: subject,
                detail: "the certificate expired on \(Self.format(leaf.notValidAfter))"
            )
        }
        let usage: ExtendedKeyUsage?
        do {
            usage = try leaf.extensions.extendedKeyUsage
        } catch {
            throw ClientIdentityError(
                .missingClientAuth,
                subject: subject,
                detail: "the certificate's extended key usage cannot be read",
                underlying: String(reflecting: error)
            )
        }
        guard let usage else {
            throw ClientIdentityError(
                .missingClientAuth,
                subject: subject,
                detail: "the certificate has no extended key usage; a client certificate needs clientAuth"
            )
        }
        guard usage.contains(.clientAuth) else {
            throw ClientIdentityError(
                .missingClientAuth,
                subject: subject,
                detail: "the certificate's extended key usage does not include clientAuth, so servers refuse it "
                    + "for client authentication"
            )
        }
    }

    /// The public key of a private key in DER (PKCS#8, SEC1 or PKCS#1) of a type Bulwark accepts (ECDSA P-256 or
    /// P-384, RSA, Ed25519 in PKCS#8), or nil when the bytes are none of these.
    ///
    /// `der` is read in place; copies made by the crypto library while parsing are freed by it (BoringSSL zeroizes
    /// what it frees).
    public static func publicKey(ofPrivateKeyDER der: UnsafeRawBufferPointer) -> Certificate.PublicKey? {
        if let key = try? P256.Signing.PrivateKey(derRepresentation: der) {
            return Certificate.PublicKey(key.publicKey)
        }
        if let key = try? P384.Signing.PrivateKey(derRepresentation: der) {
            return Certificate.PublicKey(key.publicKey)
        }
        if let key = try? _RSA.Signing.PrivateKey(unsafeDERRepresentation: der) {
            return Certificate.PublicKey(key.publicKey)
        }
        if let key = Self.ed25519PrivateKey(pkcs8: der) {
            return Certificate.PublicKey(key.publicKey)
        }
        return nil
    }

    /// The `PrivateKeyInfo` of every Ed25519 key without attributes (RFC 8410 section 7), up to the 32-byte key:
    /// SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING (32) } }.
    private static let ed25519PKCS8Prefix: [UInt8] = [
        0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ]

    /// An Ed25519 key from its PKCS#8 DER (the only form RFC 8410 gives it), read in place.
    static func ed25519PrivateKey(pkcs8 der: UnsafeRawBufferPointer) -> Curve25519.Signing.PrivateKey? {
        let prefix = Self.ed25519PKCS8Prefix
        guard der.count == prefix.count + 32, der.prefix(prefix.count).elementsEqual(prefix) else { return nil }
        return try? Curve25519.Signing.PrivateKey(
            rawRepresentation: UnsafeRawBufferPointer(rebasing: der[prefix.count...])
        )
    }

    /// Why a client certificate's key is not accepted, or nil.
    static func keyProblem(_ key: Certificate.PublicKey) -> String? {
        if P256.Signing.PublicKey(key) != nil || P384.Signing.PublicKey(key) != nil { return nil }
        if Curve25519.Signing.PublicKey(key) != nil { return nil }
        if let rsa = _RSA.Signing.PublicKey(key) {
            let bits = rsa.keySizeInBits
            guard bits >= Self.minimumRSAKeySize else {
                return "RSA \(bits)-bit key; the minimum is \(Self.minimumRSAKeySize) bits"
            }
            return nil
        }
        return "\(Self.keyName(key)) key; Bulwark accepts RSA (2048 bits or more), ECDSA P-256 and P-384, "
            + "and Ed25519"
    }

    /// The key's type in words ("ECDSA P-256", "RSA 2048-bit").
    static func keyName(_ key: Certificate.PublicKey) -> String {
        if P256.Signing.PublicKey(key) != nil { return "ECDSA P-256" }
        if P384.Signing.PublicKey(key) != nil { return "ECDSA P-384" }
        if P521.Signing.PublicKey(key) != nil { return "ECDSA P-521" }
        if let rsa = _RSA.Signing.PublicKey(key) { return "RSA \(rsa.keySizeInBits)-bit" }
        if Curve25519.Signing.PublicKey(key) != nil { return "Ed25519" }
        return "unknown"
    }

    /// `2026-01-01 00:00:00 UTC`.
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: date)
    }
}

extension ClientCertificateCheck {
    /// The SHA-256 of the DER certificate in lower-case hexadecimal: the fingerprint `openssl x509 -fingerprint
    /// -sha256` prints (without its colons).
    public static func fingerprint(of certificate: Certificate) -> String {
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate)) != nil else { return "" }
        return SHA256.hash(data: serializer.serializedBytes).map { Self.hexDigits($0) }.joined()
    }

    private static func hexDigits(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
    }
}
