import Foundation

/// Verifies policy bundles (see ``PolicyBundle``) against the trusted keys, the highest version accepted so far and
/// the clock: a pure function of its inputs, returning the verified bundle or a ``PolicyBundleRefusal`` with its own
/// reason for each way a bundle can fail.
///
/// In order: the size cap (before anything is parsed); the file's structure; the signatures, counting distinct
/// trusted keys whose signature verifies (the threshold, k of n); only then the signed payload: its expiry and its
/// version against `highestVersion`. A bundle that carries a new trusted-key set is checked against the *current*
/// set like any other, so only the current threshold can rotate the keys.
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
    /// The same version is accepted, so that the bundle in force verifies again at the next start.
    public var highestVersion: UInt64?
    /// The largest bundle read (1 MiB by default): a larger one is refused before it is parsed.
    public var maximumSize: Int = 1 << 20

    /// A verifier for `trustedKeys`.
    public init(trustedKeys: PolicyTrustedKeys, highestVersion: UInt64? = nil) {
        self.trustedKeys = trustedKeys
        self.highestVersion = highestVersion
    }

    /// A bundle that passed every check.
    public struct Verified: Hashable, Sendable {
        /// What was signed.
        public var bundle: PolicyBundle
        /// The trusted keys whose signatures verified.
        public var signers: [PolicyPublicKey]
        /// The instant the bundle stops being valid.
        public var expiresAt: Date
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
        var seen = Set<[UInt8]>()
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
            // Each key counts once, whatever it signed again.
            guard seen.insert(Array(keyBytes)).inserted else { continue }
            guard let trusted = self.trustedKeys.keys.first(where: { $0.rawRepresentation == Array(keyBytes) }) else {
                unknownKeys += 1
                continue
            }
            if trusted.isValidSignature(Array(signature), for: message) {
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
        return Verified(bundle: bundle, signers: valid, expiresAt: expiresAt)
    }

    /// Reads the signed payload (only after its signatures verified).
    private static func payload(_ bytes: [UInt8]) throws(PolicyBundleRefusal) -> PolicyBundle {
        func malformed(_ detail: String) -> PolicyBundleRefusal {
            PolicyBundleRefusal(.malformed, "the signed payload " + detail)
        }
        guard let json = try? PolicyJSON.parse(bytes), case .object(let members) = json.value else {
            throw malformed("is not a JSON object")
        }
        let known: Set<String> = ["format", "version", "expires", "policy", "trustedKeys"]
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
                guard case .string(let text) = line.value, let key = try? PolicyPublicKey(line: text) else {
                    throw malformed("has a trusted key that is not a public key line")
                }
                keys.append(key)
            }
            do throws(PolicyBundleError) {
                trustedKeys = try PolicyTrustedKeys(keys: keys, threshold: threshold)
            } catch {
                throw malformed("has an unusable trusted-key set: \(error)")
            }
        }
        return PolicyBundle(policy: Array(policy), version: version, expires: expires, trustedKeys: trustedKeys)
    }
}
