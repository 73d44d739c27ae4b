import Crypto
import Foundation

/// A signed policy bundle (The Update Framework's protections for a policy): the exact bytes of a policy file, a
/// version that only grows, an expiry, optionally a new trusted-key set (key rotation), and Ed25519 signatures of
/// all of that by a threshold of trusted keys.
///
/// The file is JSON, format `bulwark-policy-bundle/1`:
///
/// ```json
/// {"format":"bulwark-policy-bundle/1","signed":"BASE64","signatures":[{"key":"BASE64","signature":"BASE64"}]}
/// ```
///
/// `signed` is the base64 of the signed payload, itself JSON: `{"format":"bulwark-policy-bundle-payload/1",
/// "version":N,"expires":"YYYY-MM-DD","policy":"BASE64","trustedKeys":{"keys":[LINE…],"threshold":K}}` (the last
/// member only in a rotation). Each signature is over `bulwark-policy-bundle/1\n` followed by the payload bytes,
/// so the verifier checks signatures before it reads anything the payload says. Verify with
/// ``PolicyBundleVerifier``.
public struct PolicyBundle: Hashable, Sendable {
    /// The bundle file's format.
    public static let format = "bulwark-policy-bundle/1"
    static let payloadFormat = "bulwark-policy-bundle-payload/1"
    static let signingContext = Array((PolicyBundle.format + "\n").utf8)

    /// The policy file's exact bytes.
    public var policy: [UInt8]
    /// The version; a verifier refuses a version older than the highest it has accepted.
    public var version: UInt64
    /// The day the bundle expires: it is valid until the end of that day (UTC).
    public var expires: String
    /// The trusted-key set that replaces the current one once this bundle is accepted, or nil.
    public var trustedKeys: PolicyTrustedKeys?
    /// The audience the bundle is meant for (such as `production` or `staging`), or nil for any. A verifier that
    /// expects a channel refuses a bundle for another one, or for none (`wrong_channel`).
    public var channel: String?

    /// A bundle to sign.
    ///
    /// - Parameters:
    ///   - policy: The policy file's exact bytes.
    ///   - version: The bundle's version, higher than every version signed before.
    ///   - expires: `YYYY-MM-DD`; the bundle is valid until the end of that day (UTC).
    ///   - trustedKeys: The trusted-key set that replaces the current one once the bundle is accepted, or nil.
    public init(policy: [UInt8], version: UInt64, expires: String, trustedKeys: PolicyTrustedKeys? = nil) {
        self.policy = policy
        self.version = version
        self.expires = expires
        self.trustedKeys = trustedKeys
    }

    /// The instant the bundle stops being valid (the start of the day after ``expires``), or nil when
    /// ``expires`` is not a day.
    public var expiryInstant: Date? {
        PolicyFile.parseDay(self.expires).map { $0.addingTimeInterval(86_400) }
    }

    /// The SHA-256 of ``policy``, in lower-case hex.
    public var policySHA256: String {
        SHA256.hash(data: self.policy).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `text` can name a channel: 1 to 64 ASCII letters, digits, `.`, `_` or `-`.
    static func isValidChannel(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == 0x2E || byte == 0x5F || byte == 0x2D
            }
    }

    /// The largest version (2^53 - 1, exact in every JSON reader).
    public static let maximumVersion: UInt64 = (1 << 53) - 1

    /// The payload bytes that are signed.
    func payload() -> [UInt8] {
        var members: [PolicyJSON.Member] = [
            .init("format", PolicyJSON(.string(Self.payloadFormat))),
            .init("version", PolicyJSON(.number(String(self.version)))),
            .init("expires", PolicyJSON(.string(self.expires))),
            .init("policy", PolicyJSON(.string(Data(self.policy).base64EncodedString()))),
        ]
        if let channel = self.channel {
            members.append(.init("channel", PolicyJSON(.string(channel))))
        }
        if let trustedKeys = self.trustedKeys {
            members.append(
                .init(
                    "trustedKeys",
                    PolicyJSON(
                        .object([
                            .init("keys", PolicyJSON(.array(trustedKeys.keys.map { PolicyJSON(.string($0.line)) }))),
                            .init("threshold", PolicyJSON(.number(String(trustedKeys.threshold)))),
                        ])
                    )
                )
            )
        }
        return Array(PolicyJSON(.object(members)).formatted().utf8)
    }

    /// The bundle file, signed by every key of `keys` (each key signs once).
    ///
    /// - Throws: ``PolicyBundleError`` when no key is given, the version is 0 or above ``maximumVersion``, or
    ///   ``expires`` is not a `YYYY-MM-DD` day.
    public func signed(by keys: [PolicySigningKey]) throws(PolicyBundleError) -> [UInt8] {
        guard !keys.isEmpty else { throw PolicyBundleError(.invalidBundle, "a bundle needs at least one signing key") }
        guard (1...Self.maximumVersion).contains(self.version) else {
            throw PolicyBundleError(.invalidBundle, "the version must be between 1 and \(Self.maximumVersion)")
        }
        guard self.expiryInstant != nil else {
            throw PolicyBundleError(.invalidBundle, "the expiry \"\(self.expires)\" is not a YYYY-MM-DD day")
        }
        if let channel = self.channel, !Self.isValidChannel(channel) {
            throw PolicyBundleError(
                .invalidBundle,
                "the channel \(PolicyJSON.quoted(channel)) is not 1 to 64 letters, digits, '.', '_' or '-'"
            )
        }
        let payload = self.payload()
        var seen = Set<PolicyPublicKey>()
        var signatures: [PolicyJSON] = []
        for key in keys where seen.insert(key.publicKey).inserted {
            let signature = key.signature(for: Self.signingContext + payload)
            signatures.append(
                PolicyJSON(
                    .object([
                        .init("key", PolicyJSON(.string(key.publicKey.base64))),
                        .init("signature", PolicyJSON(.string(Data(signature).base64EncodedString()))),
                    ])
                )
            )
        }
        let file = PolicyJSON(
            .object([
                .init("format", PolicyJSON(.string(Self.format))),
                .init("signed", PolicyJSON(.string(Data(payload).base64EncodedString()))),
                .init("signatures", PolicyJSON(.array(signatures))),
            ])
        )
        return Array(file.formatted().utf8)
    }
}
