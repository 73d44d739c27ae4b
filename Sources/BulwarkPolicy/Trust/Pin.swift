import Crypto
import Foundation
import X509

/// A SHA-256 pin: of a certificate's DER SubjectPublicKeyInfo (`sha256/BASE64`, as in OkHttp, curl
/// `--pinnedpubkey` and HPKP) or of a whole DER certificate.
///
/// Public-key pins survive certificate renewal with the same key, which is why OkHttp and TrustKit recommend
/// them. Certificate pins match one exact certificate.
///
/// Text forms:
/// - `sha256/` followed by the base64 of the 32-byte digest: a public-key pin.
/// - 64 hex digits, optionally separated by colons (as `openssl x509 -fingerprint -sha256` prints them):
///   a certificate pin. ``description`` prints certificate pins as `cert-sha256/BASE64`, which also parses.
public struct Pin: Hashable, Sendable, CustomStringConvertible {
    /// What a pin hashes.
    public enum Kind: Hashable, Sendable {
        /// SHA-256 of the DER SubjectPublicKeyInfo.
        case publicKey
        /// SHA-256 of the DER certificate.
        case certificate
    }

    /// What the pin hashes: a public key or a whole certificate.
    public let kind: Kind
    /// The 32-byte SHA-256 digest.
    public let digest: [UInt8]

    static let publicKeyPrefix = "sha256/"
    static let certificatePrefix = "cert-sha256/"

    private init(kind: Kind, digest: [UInt8]) {
        self.kind = kind
        self.digest = digest
    }

    /// Parses a pin from its text form (see the type's documentation).
    public init(_ text: String) throws(PinError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix(Self.publicKeyPrefix) {
            self.init(kind: .publicKey, digest: try Self.decodeBase64(trimmed, prefix: Self.publicKeyPrefix))
        } else if trimmed.hasPrefix(Self.certificatePrefix) {
            self.init(kind: .certificate, digest: try Self.decodeBase64(trimmed, prefix: Self.certificatePrefix))
        } else if trimmed.count >= 64, trimmed.allSatisfy({ $0.isHexDigit || $0 == ":" }) {
            self.init(kind: .certificate, digest: try Self.decodeHex(trimmed))
        } else if trimmed.lowercased().hasPrefix("sha1/") {
            throw PinError(.unknownFormat, input: text, detail: "SHA-1 pins are not supported; use sha256/")
        } else {
            throw PinError(
                .unknownFormat,
                input: text,
                detail: "expected \"sha256/\" followed by base64 (public key) or a SHA-256 certificate fingerprint"
            )
        }
    }

    /// A public-key pin from a raw digest; the digest must be 32 bytes.
    public init(publicKeySHA256 digest: [UInt8]) throws(PinError) {
        guard digest.count == 32 else {
            throw PinError(.wrongLength, input: "\(digest.count) bytes", detail: "a SHA-256 digest is 32 bytes")
        }
        self.init(kind: .publicKey, digest: digest)
    }

    /// The public-key pin of a certificate: SHA-256 of its DER SubjectPublicKeyInfo.
    public static func publicKey(of certificate: Certificate) -> Pin {
        Pin(kind: .publicKey, digest: Array(SHA256.hash(data: certificate.subjectPublicKeyInfoDER)))
    }

    /// The certificate pin of a certificate: SHA-256 of its DER encoding.
    public static func certificate(of certificate: Certificate) -> Pin {
        Pin(kind: .certificate, digest: Array(SHA256.hash(data: certificate.derBytes)))
    }

    /// Whether this pin matches `certificate` (by key or by whole certificate, according to ``kind``).
    public func matches(_ certificate: Certificate) -> Bool {
        switch self.kind {
        case .publicKey: return self == Pin.publicKey(of: certificate)
        case .certificate: return self == Pin.certificate(of: certificate)
        }
    }

    /// `sha256/BASE64` for public-key pins, `cert-sha256/BASE64` for certificate pins.
    public var description: String {
        let base64 = Data(self.digest).base64EncodedString()
        switch self.kind {
        case .publicKey: return Self.publicKeyPrefix + base64
        case .certificate: return Self.certificatePrefix + base64
        }
    }

    /// The digest as colon-separated upper-case hex, the way `openssl x509 -fingerprint -sha256` prints it.
    public var fingerprint: String {
        self.digest.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    private static func decodeBase64(_ text: String, prefix: String) throws(PinError) -> [UInt8] {
        let encoded = String(text.dropFirst(prefix.count))
        guard let data = Data(base64Encoded: encoded) else {
            throw PinError(.invalidBase64, input: text, detail: "\"\(encoded)\" is not valid base64")
        }
        guard data.count == 32 else {
            throw PinError(
                .wrongLength,
                input: text,
                detail: "decodes to \(data.count) bytes; a SHA-256 digest is 32 bytes (44 base64 characters)"
            )
        }
        return Array(data)
    }

    private static func decodeHex(_ text: String) throws(PinError) -> [UInt8] {
        let hex = text.filter { $0 != ":" }
        guard hex.count == 64 else {
            throw PinError(
                .wrongLength,
                input: text,
                detail: "has \(hex.count) hex digits; a SHA-256 fingerprint has 64"
            )
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else {
                throw PinError(.invalidHex, input: text, detail: "\"\(hex[index..<next])\" is not a hex byte")
            }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
