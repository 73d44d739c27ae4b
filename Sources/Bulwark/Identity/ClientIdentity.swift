import BulwarkPolicy
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A client certificate chain and its private key, for servers that authenticate clients with TLS (mutual TLS).
///
/// Load one with ``pem(certificateChain:privateKey:now:)`` (or the variant with a passphrase, for an encrypted
/// PKCS#8 key), then select it for hosts with ``BulwarkClient/ClientIdentities``:
///
/// ```swift
/// let identity = try ClientIdentity.pem(
///     certificateChain: Array(try Data(contentsOf: certificateURL)),
///     privateKey: try SecretBytes(contentsOfFile: "/run/keys/device.key")
/// )
/// configuration.clientIdentities = try .init(["api.bank.example": identity])
/// ```
///
/// Loading checks what would otherwise fail in the middle of a handshake, with the server's vague alert as the only
/// clue (see ``/BulwarkPolicy/ClientCertificateCheck``): the key belongs to the leaf certificate, the key is RSA of
/// 2048 bits or more, ECDSA P-256 or P-384, the certificate is valid now, and its extended key usage includes
/// `clientAuth`.
///
/// The key:
/// - stays in ``/BulwarkPolicy/SecretBytes`` (locked, zeroized memory) until it is handed to the TLS library
///   (BoringSSL), which parses it into its own key object; that object is freed, and zeroized by BoringSSL's allocator,
///   when the last identity and connection using it are gone;
/// - every copy Bulwark makes on the way (the bytes the TLS library reads, the DER form the public key is derived
///   from) is overwritten with zeros before it is released;
/// - never appears in ``description``, ``debugDescription``, `dump` or `Mirror`: they show the subject and the
///   certificate's SHA-256 fingerprint only.
///
/// `ClientIdentity` is a value that shares its key: copies use the same key object. Two identities are equal when
/// they are the same loaded identity (the same key object), not when their bytes are equal, so connections made with
/// one are never handed to requests that use another.
public struct ClientIdentity: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The key and chain in the TLS library's form. A class, so that copies of the identity share one key object
    /// and its identity names the loaded identity.
    final class Material: Sendable {
        /// BoringSSL's key object (immutable once made; NIOSSL declares it `Sendable`).
        let privateKey: NIOSSLPrivateKey
        /// The chain, leaf first.
        let chain: [NIOSSLCertificate]

        init(privateKey: NIOSSLPrivateKey, chain: [NIOSSLCertificate]) {
            self.privateKey = privateKey
            self.chain = chain
        }
    }

    /// The certificate chain sent to the server, leaf first.
    public let certificateChain: [Certificate]
    /// The leaf certificate's subject (RFC 4514 text).
    public let subject: String
    /// The SHA-256 of the leaf certificate's DER, in lower-case hexadecimal.
    public let fingerprint: String
    let material: Material

    /// The leaf certificate.
    public var leaf: Certificate { self.certificateChain[0] }

    /// Loads an identity from a PEM (or DER) certificate chain, leaf first, and an unencrypted private key in PEM
    /// (`PRIVATE KEY`, PKCS#8; `EC PRIVATE KEY`, SEC1; `RSA PRIVATE KEY`, PKCS#1) or DER.
    ///
    /// - Parameters:
    ///   - certificateChain: The leaf certificate, then the intermediates the server needs to build a path.
    ///   - privateKey: The leaf's private key; consumed, and so zeroized when loading ends.
    ///   - now: The time the certificate's validity is checked at.
    /// - Throws: ``/BulwarkPolicy/ClientIdentityError``: the certificate or key cannot be read, the key is encrypted
    ///   (``/BulwarkPolicy/ClientIdentityError/Code/passphraseRequired``), or a check of
    /// ``/BulwarkPolicy/ClientCertificateCheck`` fails.
    public static func pem(
        certificateChain: [UInt8],
        privateKey: consuming SecretBytes,
        now: Date = Date()
    ) throws(ClientIdentityError) -> ClientIdentity {
        try Self.load(certificateChain: certificateChain, privateKey: privateKey, passphrase: nil, now: now)
    }

    /// Loads an identity whose private key is encrypted (PEM `ENCRYPTED PRIVATE KEY`, PKCS#8 with PBES2) with
    /// `passphrase`; an unencrypted key is accepted too, and the passphrase then unused.
    ///
    /// The passphrase is handed to the TLS library from its locked memory, and the library's own copy is wiped by
    /// it once the key is decrypted.
    ///
    /// - Throws: ``/BulwarkPolicy/ClientIdentityError``, with
    ///   ``/BulwarkPolicy/ClientIdentityError/Code/wrongPassphrase`` when the key cannot be decrypted.
    public static func pem(
        certificateChain: [UInt8],
        privateKey: consuming SecretBytes,
        passphrase: consuming SecretBytes,
        now: Date = Date()
    ) throws(ClientIdentityError) -> ClientIdentity {
        try Self.load(
            certificateChain: certificateChain,
            privateKey: privateKey,
            passphrase: SecretBox(passphrase),
            now: now
        )
    }

    private init(certificateChain: [Certificate], material: Material) {
        self.certificateChain = certificateChain
        self.subject = String(describing: certificateChain[0].subject)
        self.fingerprint = ClientCertificateCheck.fingerprint(of: certificateChain[0])
        self.material = material
    }

    private static func load(
        certificateChain chainBytes: [UInt8],
        privateKey: consuming SecretBytes,
        passphrase: SecretBox?,
        now: Date
    ) throws(ClientIdentityError) -> ClientIdentity {
        defer { passphrase?.wipe() }
        let certificates: [Certificate]
        do {
            certificates = try CertificateLoader.certificates(from: chainBytes, source: "the certificate chain")
        } catch {
            throw ClientIdentityError(
                error.isNoCertificates ? .noCertificate : .unreadableCertificate,
                subject: nil,
                detail: String(describing: error),
                underlying: String(reflecting: error)
            )
        }
        let subject = String(describing: certificates[0].subject)
        let chain: [NIOSSLCertificate]
        do {
            chain = try certificates.map { certificate in
                var serializer = DER.Serializer()
                try serializer.serialize(certificate)
                return try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der)
            }
        } catch {
            throw ClientIdentityError(
                .unreadableCertificate,
                subject: subject,
                detail: "the TLS library cannot read the certificate",
                underlying: String(reflecting: error)
            )
        }
        let format = PrivateKeyFormat(privateKey)
        if format.isEncrypted && passphrase == nil {
            throw ClientIdentityError(
                .passphraseRequired,
                subject: subject,
                detail: "the private key is encrypted; give its passphrase"
            )
        }
        // NIOSSL cannot hand back an Ed25519 key (BoringSSL's `i2d_PrivateKey` writes RSA, EC and DSA keys only), so
        // its public half is read from the secret, in place, before the secret goes to NIOSSL.
        let ed25519 = format.isEncrypted ? nil : Self.ed25519PublicKey(in: privateKey, isPEM: format.isPEM)
        let key = try Self.privateKey(privateKey, format: format, passphrase: passphrase, subject: subject)
        return try Self.checked(certificates: certificates, chain: chain, key: key, publicKey: ed25519, now: now)
    }

    /// Loads an identity from a PKCS#12 bundle (`.p12`, `.pfx`): the leaf certificate, its key and the CA
    /// certificates the bundle holds (sent as the chain after the leaf), decrypted with `passphrase`.
    ///
    /// The bundle (which holds the key, encrypted) and the passphrase stay in ``/BulwarkPolicy/SecretBytes``; the array
    /// copy of the bundle the TLS library reads is wiped, and the library wipes its copy of the passphrase. The same
    /// checks as for PEM apply (``/BulwarkPolicy/ClientCertificateCheck``).
    ///
    /// - Throws: ``/BulwarkPolicy/ClientIdentityError``: ``/BulwarkPolicy/ClientIdentityError/Code/wrongPassphrase``
    ///   when the bundle cannot be decrypted, ``/BulwarkPolicy/ClientIdentityError/Code/unreadableKey`` when it is not
    /// a PKCS#12 bundle, or a failed check.
    public static func pkcs12(
        _ bundle: consuming SecretBytes,
        passphrase: consuming SecretBytes,
        now: Date = Date()
    ) throws(ClientIdentityError) -> ClientIdentity {
        let box = SecretBox(passphrase)
        defer { box.wipe() }
        var bytes = bundle.withUnsafeBytes { Array($0) }
        _ = consume bundle
        defer { Self.wipe(&bytes) }
        let parsed: Result<NIOSSLPKCS12Bundle, any Error>? = box.withUnsafeBytes { passphrase in
            Result { try NIOSSLPKCS12Bundle(buffer: bytes, passphrase: passphrase) }
        }
        let nioBundle: NIOSSLPKCS12Bundle
        switch parsed {
        case .success(let bundle)?:
            nioBundle = bundle
        case .failure(let error)?:
            let text = String(reflecting: error)
            let wrong = text.contains("INCORRECT_PASSWORD") || text.contains("BAD_DECRYPT")
            throw ClientIdentityError(
                wrong ? .wrongPassphrase : .unreadableKey,
                subject: nil,
                detail: wrong
                    ? "the PKCS#12 bundle cannot be decrypted with the passphrase given"
                    : "the PKCS#12 bundle cannot be read",
                underlying: text
            )
        case nil:
            throw ClientIdentityError(.wrongPassphrase, subject: nil, detail: "the passphrase was wiped")
        }
        let certificates: [Certificate]
        do {
            certificates = try nioBundle.certificateChain.map { try Certificate(derEncoded: try $0.toDERBytes()) }
        } catch {
            throw ClientIdentityError(
                .unreadableCertificate,
                subject: nil,
                detail: "a certificate of the PKCS#12 bundle cannot be read",
                underlying: String(reflecting: error)
            )
        }
        guard !certificates.isEmpty else {
            throw ClientIdentityError(.noCertificate, subject: nil, detail: "the PKCS#12 bundle holds no certificate")
        }
        return try Self.checked(
            certificates: certificates,
            chain: nioBundle.certificateChain,
            key: nioBundle.privateKey,
            now: now
        )
    }

    /// Checks the key against the leaf (``/BulwarkPolicy/ClientCertificateCheck``) and makes the identity. `known`
    /// is the key's public half when it was read before the key went to the TLS library (Ed25519).
    private static func checked(
        certificates: [Certificate],
        chain: [NIOSSLCertificate],
        key: NIOSSLPrivateKey,
        publicKey known: Certificate.PublicKey? = nil,
        now: Date
    ) throws(ClientIdentityError) -> ClientIdentity {
        var publicKey: Certificate.PublicKey? = known
        if publicKey == nil, var der = try? key.derBytes {
            // BoringSSL's DER of its key (SEC1 or PKCS#1), wiped once the public key is derived.
            publicKey = der.withUnsafeBytes { ClientCertificateCheck.publicKey(ofPrivateKeyDER: $0) }
            Self.wipe(&der)
        }
        try ClientCertificateCheck.check(leaf: certificates[0], privateKeyPublicKey: publicKey, at: now)
        return ClientIdentity(certificateChain: certificates, material: Material(privateKey: key, chain: chain))
    }

    /// Hands the key to BoringSSL: from a copy of the secret that is wiped as soon as BoringSSL has parsed it.
    private static func privateKey(
        _ secret: consuming SecretBytes,
        format: PrivateKeyFormat,
        passphrase: SecretBox?,
        subject: String
    ) throws(ClientIdentityError) -> NIOSSLPrivateKey {
        // NIOSSL reads the key from an array: the one copy of the secret outside locked memory, wiped below.
        var bytes = secret.withUnsafeBytes { Array($0) }
        _ = consume secret
        defer { Self.wipe(&bytes) }
        do {
            if let passphrase, format.isPEM {
                let callback: NIOSSLPassphraseCallback<UnsafeRawBufferPointer> = { setter in
                    _ = passphrase.withUnsafeBytes { setter($0) }
                }
                return try NIOSSLPrivateKey(bytes: bytes, format: .pem, passphraseCallback: callback)
            }
            return try NIOSSLPrivateKey(bytes: bytes, format: format.isPEM ? .pem : .der)
        } catch {
            if format.isEncrypted {
                throw ClientIdentityError(
                    .wrongPassphrase,
                    subject: subject,
                    detail: "the private key cannot be decrypted with the passphrase given",
                    underlying: String(reflecting: error)
                )
            }
            throw ClientIdentityError(
                .unreadableKey,
                subject: subject,
                detail: "the private key cannot be read (expected PEM \"PRIVATE KEY\", \"EC PRIVATE KEY\" or "
                    + "\"RSA PRIVATE KEY\", or DER)",
                underlying: String(reflecting: error)
            )
        }
    }

    /// The public key of an Ed25519 key given as PKCS#8 (PEM `PRIVATE KEY` or DER), read from the secret in place;
    /// nil for any other key. The decoded DER is the one copy made, wiped before returning.
    static func ed25519PublicKey(in secret: borrowing SecretBytes, isPEM: Bool) -> Certificate.PublicKey? {
        secret.withUnsafeBytes { bytes -> Certificate.PublicKey? in
            guard isPEM else { return ClientCertificateCheck.publicKey(ofPrivateKeyDER: bytes) }
            guard let body = Self.pemBody(of: bytes, label: "PRIVATE KEY"),
                var der = Self.base64Decoded(UnsafeRawBufferPointer(rebasing: bytes[body]))
            else { return nil }
            defer { Self.wipe(&der) }
            return der.withUnsafeBytes { ClientCertificateCheck.publicKey(ofPrivateKeyDER: $0) }
        }
    }

    /// The range of the text between `-----BEGIN LABEL-----` and `-----END LABEL-----`.
    static func pemBody(of bytes: UnsafeRawBufferPointer, label: String) -> Range<Int>? {
        func find(_ text: String, from start: Int) -> Range<Int>? {
            let needle = Array(text.utf8)
            guard needle.count <= bytes.count, start <= bytes.count - needle.count else { return nil }
            for index in start...(bytes.count - needle.count)
            where bytes[index] == needle[0]
                && UnsafeRawBufferPointer(rebasing: bytes[index..<(index + needle.count)]).elementsEqual(needle)
            {
                return index..<(index + needle.count)
            }
            return nil
        }
        guard let begin = find("-----BEGIN \(label)-----", from: 0),
            let end = find("-----END \(label)-----", from: begin.upperBound)
        else { return nil }
        return begin.upperBound..<end.lowerBound
    }

    /// Base64 (line breaks and spaces ignored) decoded into one array, allocated once at its final size so that no
    /// copy of the secret is left behind by a reallocation; nil for any other character.
    static func base64Decoded(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(text.count * 3 / 4 + 3)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in text {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: " "), UInt8(ascii: "\t"):
                continue
            default:
                Self.wipe(&decoded)
                return nil
            }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                decoded.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return decoded
    }

    /// Overwrites an array's storage with zeros in place (see ``/BulwarkPolicy/SecretBytes/init(wiping:)``), and
    /// empties it.
    static func wipe(_ bytes: inout [UInt8]) {
        // `init(wiping:)` zeroes the caller's storage; the secret it makes is released, and zeroized, at once.
        _ = SecretBytes(wiping: &bytes)
    }

    /// `ClientIdentity(SUBJECT, sha256 FINGERPRINT, key <redacted>)`.
    public var description: String {
        "ClientIdentity(\(self.subject), sha256 \(self.fingerprint), key <redacted>)"
    }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// The subject and fingerprint only: reflection never reaches the key.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["subject": self.subject, "fingerprint": self.fingerprint, "privateKey": "<redacted>"],
            displayStyle: .struct
        )
    }

    /// Whether both are the same loaded identity (one key object).
    public static func == (lhs: ClientIdentity, rhs: ClientIdentity) -> Bool {
        lhs.material === rhs.material
    }

    /// Hashes the identity of the loaded key object, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self.material))
    }
}

/// What a private key's bytes look like, from their framing only (no parsing).
struct PrivateKeyFormat {
    /// PEM text (a `-----BEGIN` line), as opposed to DER.
    var isPEM: Bool
    /// An encrypted key: PEM `ENCRYPTED PRIVATE KEY` (PKCS#8) or a legacy `Proc-Type: 4,ENCRYPTED` header.
    var isEncrypted: Bool

    init(_ secret: borrowing SecretBytes) {
        (self.isPEM, self.isEncrypted) = secret.withUnsafeBytes { bytes in
            let isPEM = Self.contains(bytes, "-----BEGIN ")
            let isEncrypted =
                isPEM
                && (Self.contains(bytes, "-----BEGIN ENCRYPTED PRIVATE KEY-----")
                    || Self.contains(bytes, "Proc-Type: 4,ENCRYPTED"))
            return (isPEM, isEncrypted)
        }
    }

    /// Whether `bytes` holds `text`'s UTF-8, compared without making a string of the secret.
    private static func contains(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        let needle = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        guard needle.count <= bytes.count else { return false }
        var start = 0
        while start + needle.count <= bytes.count {
            if bytes[start] == needle[0],
                UnsafeRawBufferPointer(rebasing: bytes[start..<(start + needle.count)]).elementsEqual(needle)
            {
                return true
            }
            start += 1
        }
        return false
    }
}
