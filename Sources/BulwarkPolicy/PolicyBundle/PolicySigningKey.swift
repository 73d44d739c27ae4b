import Crypto
import Foundation

/// An Ed25519 private key that signs policy bundles.
///
/// Its file (`NAME.key`, written by `bulwark policy keygen` with mode 0600) is one line,
/// `bulwark-policy-private-key/1 ed25519 BASE64`, read into ``SecretBytes``; the decoded bytes are wiped once the key
/// is made. `description`, `dump` and `Mirror` show the public key only.
public struct PolicySigningKey: Sendable, CustomStringConvertible, CustomReflectable {
    /// The first word of a private key file.
    public static let filePrefix = "bulwark-policy-private-key/1"

    private let key: Curve25519.Signing.PrivateKey
    /// The public half.
    public let publicKey: PolicyPublicKey

    private init(key: Curve25519.Signing.PrivateKey, name: String?) {
        self.key = key
        self.publicKey = PolicyPublicKey(derivedFrom: key.publicKey, name: name)
    }

    /// A new random key.
    public static func generate(name: String? = nil) -> PolicySigningKey {
        PolicySigningKey(key: Curve25519.Signing.PrivateKey(), name: name)
    }

    /// Reads a key file's contents.
    ///
    /// - Throws: ``PolicyBundleError`` with ``PolicyBundleError/Code/invalidPrivateKey``; never quotes the file.
    public init(keyFile contents: borrowing SecretBytes, name: String? = nil) throws(PolicyBundleError) {
        var raw: [UInt8] = contents.withUnsafeBytes { bytes in
            var text = Array(bytes)
            defer { text.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
            while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 { text.removeLast() }
            let prefix = Array((Self.filePrefix + " ed25519 ").utf8)
            guard text.count > prefix.count, Array(text[..<prefix.count]) == prefix else { return [] }
            return Base64Secret.decode(text[prefix.count...]) ?? []
        }
        defer { raw.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        guard raw.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else {
            throw PolicyBundleError(
                .invalidPrivateKey,
                "not a policy signing key (expected one line, \"\(Self.filePrefix) ed25519 BASE64\", of 32 key bytes)"
            )
        }
        self.init(key: key, name: name)
    }

    /// The key file's contents, as secret bytes to write with mode 0600.
    public func keyFileContents() -> SecretBytes {
        var raw = self.key.rawRepresentation
        defer { raw.resetBytes(in: 0..<raw.count) }
        var text = Array((Self.filePrefix + " ed25519 ").utf8)
        text += Array(raw.base64EncodedString().utf8) + [0x0A]
        return SecretBytes(wiping: &text)
    }

    /// The Ed25519 signature of `message`.
    func signature(for message: [UInt8]) -> [UInt8] {
        // Signing fails only on a broken library; an empty signature is then refused by every verifier.
        (try? Array(self.key.signature(for: message))) ?? []
    }

    /// `policy signing key BASE64` (the public key).
    public var description: String { "policy signing key \(self.publicKey.base64)" }

    /// The public key only.
    public var customMirror: Mirror { Mirror(self, children: ["publicKey": self.publicKey]) }
}

/// Base64 decoding into a plain byte array the caller wipes (Foundation's decoder leaves copies in `Data`).
enum Base64Secret {
    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.count / 4 * 3)
        var accumulator: UInt32 = 0
        var bits = 0
        var padding = 0
        for byte in text {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            default:
                return nil
            }
            guard padding == 0 else { return nil }
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
            }
        }
        accumulator = 0
        return text.count % 4 == 0 && padding <= 2 ? output : nil
    }
}
