import Crypto
import Foundation

/// An Ed25519 public key that may sign policy bundles, written as one line:
/// `bulwark-policy-key/1 ed25519 BASE64 [name]` (what `bulwark policy keygen` writes to `NAME.pub`).
public struct PolicyPublicKey: Hashable, Sendable, CustomStringConvertible {
    /// The first word of a public key line.
    public static let linePrefix = "bulwark-policy-key/1"

    /// The 32 raw key bytes.
    public let rawRepresentation: [UInt8]
    /// The name written after the key, if any (a label for people; not part of the key's identity).
    public let name: String?

    /// A key from its 32 raw bytes.
    ///
    /// - Throws: ``PolicyBundleError`` when the bytes are not 32, or are a weak key: a
    ///   point of small order, for which signatures can be made without a private key, or an encoding that no
    ///   Ed25519 encoder writes (y ≥ p, or x = 0 with its sign bit set), which would let one point count as two keys.
    public init(rawRepresentation: [UInt8], name: String? = nil) throws(PolicyBundleError) {
        guard rawRepresentation.count == 32 else {
            throw PolicyBundleError(
                .invalidPublicKey,
                "an Ed25519 public key is 32 bytes, not \(rawRepresentation.count)"
            )
        }
        if let weakness = Ed25519KeyCheck.weakness(of: rawRepresentation) {
            let base64 = Data(rawRepresentation).base64EncodedString()
            throw PolicyBundleError(.invalidPublicKey, "the key \(base64) \(weakness)")
        }
        self.rawRepresentation = rawRepresentation
        self.name = name
    }

    /// The public half of a private key (the private scalar times the base point: a point of the prime-order
    /// subgroup by construction, so the checks of ``init(rawRepresentation:name:)`` are not repeated).
    init(derivedFrom key: Curve25519.Signing.PublicKey, name: String?) {
        self.rawRepresentation = Array(key.rawRepresentation)
        self.name = name
    }

    /// Reads a public key line.
    public init(line: String) throws(PolicyBundleError) {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard words.count >= 3, words[0] == Self.linePrefix, words[1] == "ed25519" else {
            throw PolicyBundleError(
                .invalidPublicKey,
                "a public key line is \"\(Self.linePrefix) ed25519 BASE64 [name]\""
            )
        }
        guard let data = Data(base64Encoded: words[2]) else {
            throw PolicyBundleError(.invalidPublicKey, "the key \"\(words[2])\" is not valid base64")
        }
        try self.init(
            rawRepresentation: Array(data),
            name: words.count > 3 ? words[3...].joined(separator: " ") : nil
        )
    }

    /// The key in base64: its identity in bundles and output.
    public var base64: String { Data(self.rawRepresentation).base64EncodedString() }

    /// The key's line, as `keygen` writes it.
    public var line: String {
        "\(Self.linePrefix) ed25519 \(self.base64)" + (self.name.map { " " + $0 } ?? "")
    }

    /// The key in base64, and its name in parentheses.
    public var description: String { self.base64 + (self.name.map { " (\($0))" } ?? "") }

    public static func == (lhs: PolicyPublicKey, rhs: PolicyPublicKey) -> Bool {
        lhs.rawRepresentation == rhs.rawRepresentation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.rawRepresentation)
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: self.rawRepresentation) else {
            return false
        }
        return key.isValidSignature(signature, for: message)
    }
}

/// The keys trusted to sign policy bundles, and how many of them must sign one (k of n).
public struct PolicyTrustedKeys: Hashable, Sendable {
    /// The keys, without duplicates.
    public let keys: [PolicyPublicKey]
    /// How many distinct keys of ``keys`` must sign a bundle.
    public let threshold: Int

    /// A trusted set.
    ///
    /// - Throws: ``PolicyBundleError`` when `keys` is empty or repeats a key, or `threshold` is not between 1 and
    ///   the number of keys.
    public init(keys: [PolicyPublicKey], threshold: Int = 1) throws(PolicyBundleError) {
        guard !keys.isEmpty else { throw PolicyBundleError(.invalidTrustedKeys, "no trusted key is given") }
        guard Set(keys).count == keys.count else {
            throw PolicyBundleError(.invalidTrustedKeys, "a trusted key is listed twice")
        }
        guard (1...keys.count).contains(threshold) else {
            throw PolicyBundleError(
                .invalidTrustedKeys,
                "the threshold \(threshold) must be between 1 and the number of trusted keys (\(keys.count))"
            )
        }
        self.keys = keys
        self.threshold = threshold
    }

    /// The keys of a trusted-key file: one public key line per line; empty lines and lines starting with `#` are
    /// skipped.
    public init(fileContents text: String, threshold: Int = 1) throws(PolicyBundleError) {
        var keys: [PolicyPublicKey] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do throws(PolicyBundleError) {
                keys.append(try PolicyPublicKey(line: trimmed))
            } catch {
                throw PolicyBundleError(.invalidTrustedKeys, "line \(index + 1): \(error)")
            }
        }
        try self.init(keys: keys, threshold: threshold)
    }
}
