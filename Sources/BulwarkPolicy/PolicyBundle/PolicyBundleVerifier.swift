import Crypto
import Foundation

/// Verifies policy bundles (see ``PolicyBundle``) against the trusted keys, the highest version accepted so far and
/// the clock: a pure function of its inputs, returning the verified bundle or a ``PolicyBundleRefusal`` with its own
/// reason for each way a bundle can fail.
///
/// In order: the size cap (before anything is parsed); the file's structure; the signatures, counting distinct
/// trusted keys whose signature verifies (the threshold, k of n); only then the signed payload: a rotation's proof
/// of possession, the channel, its expiry and its version against `highestVersion`. A bundle that carries a new
/// trusted-key set is checked against the *current* set like any other, so only the current threshold can rotate the
/// keys, and every key it adds must have signed it too. Weak keys (small-order points, non-canonical encodings) never
/// become trusted keys (``PolicyPublicKey``), so signers are counted by point.
///
/// ```swift
/// let verifier = PolicyBundleVerifier(trustedKeys: trusted, highestVersion: stored.version)
/// switch verifier.verify(bytes) {
/// case .success(let bundle): try persist(bundle)             // then apply bundle.policy
/// case .failure(let refusal): log(refusal.reason.code)       // e.g. rollback, expired, below_threshold
/// }
/// ```
public struct PolicyBundleVerifier: Sendable {
    /// The keys trusted to sign, and how many must.
    public var trustedKeys: PolicyTrustedKeys
    /// The highest version accepted so far (persisted by the caller); an older version is refused as a rollback.
    /// The same version is accepted, so that the bundle in force verifies again at the next start, unless
    /// ``highestVersionPayloadSHA256`` says it carried another payload.
    public var highestVersion: UInt64?
    /// The SHA-256 (lower-case hex) of the signed payload accepted at ``highestVersion``, when known: a bundle of
    /// that version whose payload differs is refused (`version_reused`); the same payload verifies.
    public var highestVersionPayloadSHA256: String?
    /// The channel this verifier takes bundles for, or nil for any: a bundle naming another channel, or none, is
    /// refused (`wrong_channel`).
    public var channel: String?
    /// The largest bundle read (1 MiB by default): a larger one is refused before it is parsed.
    public var maximumSize: Int = 1 << 20

    /// A verifier for `trustedKeys`.
    public init(trustedKeys: PolicyTrustedKeys, highestVersion: UInt64? = nil) {
        self.trustedKeys = trustedKeys
        self.highestVersion = highestVersion
    }

    /// The most signature items a bundle may carry (each is an Ed25519 verification).
    static let maximumSignatures = 256

    /// A bundle that passed every check.
    public struct Verified: Hashable, Sendable {
        /// What was signed.
        public var bundle: PolicyBundle
        /// The trusted keys whose signatures verified.
        public var signers: [PolicyPublicKey]
        /// The instant the bundle stops being valid.
        public var expiresAt: Date
        /// The SHA-256 (lower-case hex) of the signed payload: what one version may carry, once.
        public var payloadSHA256: String
    }

    /// Verifies `bytes` at `now`.
    public func verify(_ bytes: [UInt8], at now: Date = Date()) -> Result<Verified, PolicyBundleRefusal> {
        Result { () throws(PolicyBundleRefusal) -> Verified in try self.check(bytes, at: now) }
    }

    private func check(_ bytes: [UInt8], at now: Date) throws(PolicyBundleRefusal) -> Verified {
        guard bytes.count <= self.maximumSize else {
            throw PolicyBundleRefusal(
                .tooLarge,
                "the bundle is \(bytes.count) bytes; the limit is \(self.maximumSize)"
            )
        }
        let file: PolicyJSON
        do throws(PolicyJSON.SyntaxError) {
            file = try PolicyJSON.parse(bytes)
        } catch {
            throw PolicyBundleRefusal(
                .malformed,
                "the bundle is not complete JSON (line \(error.line): \(error.detail)); it may be truncated"
            )
        }
        guard case .object(let members) = file.value else {
            throw PolicyBundleRefusal(.malformed, "the bundle is not a JSON object")
        }
        let known: Set<String> = ["format", "signed", "signatures"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw PolicyBundleRefusal(.malformed, "the bundle has an unknown member \(PolicyJSON.quoted(unknown.key))")
        }
        guard case .string(let format)? = file["format"]?.value else {
            throw PolicyBundleRefusal(.malformed, "the bundle has no \"format\"")
        }
        guard format == PolicyBundle.format else {
            throw PolicyBundleRefusal(
                .unsupportedFormat,
                "the format \(PolicyJSON.quoted(format)) is not \"\(PolicyBundle.format)\""
            )
        }
        guard case .string(let signedText)? = file["signed"]?.value,
            let signed = Data(base64Encoded: signedText).map(Array.init)
        else {
            throw PolicyBundleRefusal(.malformed, "the bundle's \"signed\" member is missing or not base64")
        }
        guard case .array(let signatureItems)? = file["signatures"]?.value, !signatureItems.isEmpty else {
            throw PolicyBundleRefusal(.malformed, "the bundle has no signatures")
        }
        let message = PolicyBundle.signingContext + signed
        var valid: [PolicyPublicKey] = []
        var invalidTrusted = 0
        var unknownKeys = 0
        guard signatureItems.count <= Self.maximumSignatures else {
            throw PolicyBundleRefusal(
                .malformed,
                "the bundle has \(signatureItems.count) signatures; at most \(Self.maximumSignatures) are read"
            )
        }
        /// Every signature item, by key, in the order of the file: a key counts once, when any of its items verifies
        /// (a bogus item put before a good one cannot hide it).
        var signaturesByKey: [(key: [UInt8], signatures: [[UInt8]])] = []
        for item in signatureItems {
            guard case .object(let fields) = item.value, fields.count == 2,
                case .string(let keyText)? = item["key"]?.value,
                case .string(let signatureText)? = item["signature"]?.value,
                let keyBytes = Data(base64Encoded: keyText), keyBytes.count == 32,
                let signature = Data(base64Encoded: signatureText)
            else {
                throw PolicyBundleRefusal(
                    .malformed,
                    "a signature is not {\"key\": BASE64 of 32 bytes, \"signature\": BASE64}"
                )
            }
            if let index = signaturesByKey.firstIndex(where: { $0.key == Array(keyBytes) }) {
                signaturesByKey[index].signatures.append(Array(signature))
            } else {
                signaturesByKey.append((Array(keyBytes), [Array(signature)]))
            }
        }
        /// The signatures by keys that are not trusted (yet): a rotation's new keys prove possession with them.
        var untrustedSignatures: [[UInt8]: [[UInt8]]] = [:]
        for (keyBytes, signatures) in signaturesByKey {
            // Each key counts once, whatever it signed again.
            guard let trusted = self.trustedKeys.keys.first(where: { $0.rawRepresentation == keyBytes }) else {
                unknownKeys += 1
                untrustedSignatures[keyBytes] = signatures
                continue
            }
            if signatures.contains(where: { trusted.isValidSignature($0, for: message) }) {
                valid.append(trusted)
            } else {
                invalidTrusted += 1
            }
        }
        let threshold = self.trustedKeys.threshold
        if valid.count < threshold {
            if invalidTrusted > 0 {
                throw PolicyBundleRefusal(
                    .signatureInvalid,
                    "\(invalidTrusted) signature\(invalidTrusted == 1 ? "" : "s") by a trusted key do\(invalidTrusted == 1 ? "es" : "") "
                        + "not verify: the signed policy, version or expiry was changed after signing"
                )
            }
            if valid.isEmpty && unknownKeys > 0 {
                throw PolicyBundleRefusal(
                    .unknownKey,
                    "the bundle is signed only by keys that are not trusted (\(unknownKeys) unknown)"
                )
            }
            throw PolicyBundleRefusal(
                .belowThreshold,
                "\(valid.count) trusted key\(valid.count == 1 ? "" : "s") signed the bundle; \(threshold) must"
            )
        }
        let bundle = try Self.payload(signed)
        let payloadSHA256 = SHA256.hash(data: signed).map { String(format: "%02x", $0) }.joined()
        if let next = bundle.trustedKeys {
            try self.checkProofOfPossession(next, valid: valid, untrusted: untrustedSignatures, message: message)
        }
        if let channel = self.channel, bundle.channel != channel {
            throw PolicyBundleRefusal(
                .wrongChannel,
                bundle.channel.map {
                    "the bundle is for the channel \(PolicyJSON.quoted($0)), not \(PolicyJSON.quoted(channel))"
                }
                    ?? "the bundle names no channel; this verifier takes bundles for \(PolicyJSON.quoted(channel)) only"
            )
        }
        guard let expiresAt = bundle.expiryInstant else {
            throw PolicyBundleRefusal(.malformed, "the expiry \"\(bundle.expires)\" is not a day")
        }
        guard now < expiresAt else {
            throw PolicyBundleRefusal(
                .expired,
                "the bundle (version \(bundle.version)) expired at the end of \(bundle.expires)"
            )
        }
        if let highest = self.highestVersion, bundle.version < highest {
            throw PolicyBundleRefusal(
                .rollback,
                "the bundle's version \(bundle.version) is older than version \(highest), already accepted"
            )
        }
        if let highest = self.highestVersion, bundle.version == highest,
            let accepted = self.highestVersionPayloadSHA256, accepted != payloadSHA256
        {
            throw PolicyBundleRefusal(
                .versionReused,
                "version \(highest) was accepted before with other contents (payload sha256 \(accepted.prefix(16))…, "
                    + "this one \(payloadSHA256.prefix(16))…): a changed policy, expiry or key set needs a new version"
            )
        }
        return Verified(bundle: bundle, signers: valid, expiresAt: expiresAt, payloadSHA256: payloadSHA256)
    }

    /// A rotation's proof of possession: every key of the new set that is not trusted today signed this bundle (its
    /// holder has the private key), so the new set meets its own threshold here too.
    private func checkProofOfPossession(
        _ next: PolicyTrustedKeys,
        valid: [PolicyPublicKey],
        untrusted: [[UInt8]: [[UInt8]]],
        message: [UInt8]
    ) throws(PolicyBundleRefusal) {
        var unproven: [PolicyPublicKey] = []
        var signedNext = 0
        for key in next.keys {
            if valid.contains(key) {
                signedNext += 1
            } else if let signatures = untrusted[key.rawRepresentation],
                signatures.contains(where: { key.isValidSignature($0, for: message) })
            {
                signedNext += 1
            } else if !self.trustedKeys.keys.contains(key) {
                unproven.append(key)
            }
        }
        if !unproven.isEmpty {
            throw PolicyBundleRefusal(
                .rotationNotProven,
                "the rotation installs \(unproven.count == 1 ? "a key" : "keys") that did not sign it: "
                    + unproven.map(\.description).joined(separator: ", ")
                    + "; each new key signs the rotation bundle (proof that its holder has the private key)"
            )
        }
        if signedNext < next.threshold {
            throw PolicyBundleRefusal(
                .rotationNotProven,
                "\(signedNext) key\(signedNext == 1 ? "" : "s") of the new set signed the rotation; its threshold "
                    + "is \(next.threshold)"
            )
        }
    }

    /// Reads the signed payload (only after its signatures verified).
    private static func payload(_ bytes: [UInt8]) throws(PolicyBundleRefusal) -> PolicyBundle {
        func malformed(_ detail: String) -> PolicyBundleRefusal {
            PolicyBundleRefusal(.malformed, "the signed payload " + detail)
        }
        guard let json = try? PolicyJSON.parse(bytes), case .object(let members) = json.value else {
            throw malformed("is not a JSON object")
        }
        let known: Set<String> = ["format", "version", "expires", "policy", "trustedKeys", "channel"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw malformed("has an unknown member \(PolicyJSON.quoted(unknown.key))")
        }
        guard case .string(PolicyBundle.payloadFormat)? = json["format"]?.value else {
            throw malformed("is not \"\(PolicyBundle.payloadFormat)\"")
        }
        guard case .number(let versionText)? = json["version"]?.value, let version = UInt64(versionText),
            (1...PolicyBundle.maximumVersion).contains(version)
        else { throw malformed("has no version between 1 and \(PolicyBundle.maximumVersion)") }
        guard case .string(let expires)? = json["expires"]?.value else { throw malformed("has no expiry") }
        var channel: String?
        if let member = json["channel"] {
            guard case .string(let text) = member.value, PolicyBundle.isValidChannel(text) else {
                throw malformed("has a channel that is not 1 to 64 letters, digits, '.', '_' or '-'")
            }
            channel = text
        }
        guard case .string(let policyText)? = json["policy"]?.value,
            let policy = Data(base64Encoded: policyText)
        else { throw malformed("has no policy") }
        var trustedKeys: PolicyTrustedKeys?
        if let rotation = json["trustedKeys"] {
            guard case .array(let lines)? = rotation["keys"]?.value,
                case .number(let thresholdText)? =
                    rotation["threshold"]?.value, let threshold = Int(thresholdText)
            else { throw malformed("has a trusted-key set without keys or threshold") }
            var keys: [PolicyPublicKey] = []
            for line in lines {
                guard case .string(let text) = line.value else {
                    throw malformed("has a trusted key that is not a public key line")
                }
                do throws(PolicyBundleError) {
                    keys.append(try PolicyPublicKey(line: text))
                } catch {
                    throw malformed("has a trusted key that cannot be used: \(error)")
                }
            }
            do throws(PolicyBundleError) {
                trustedKeys = try PolicyTrustedKeys(keys: keys, threshold: threshold)
            } catch {
                throw malformed("has an unusable trusted-key set: \(error)")
            }
        }
        var bundle = PolicyBundle(policy: Array(policy), version: version, expires: expires, trustedKeys: trustedKeys)
        bundle.channel = channel
        return bundle
    }
}
