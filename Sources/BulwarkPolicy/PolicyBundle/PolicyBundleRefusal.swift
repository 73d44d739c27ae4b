/// Why a policy bundle was refused: a reason with a stable code, and a sentence for people.
public struct PolicyBundleRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    /// Why; compare with the static members. Each refusal has its own reason.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The stable code, such as `below_threshold` (as in a `policy_update_refused:below_threshold` event).
        public let code: String
        private init(_ code: String) { self.code = code }

        /// The file is larger than the verifier's size cap; nothing of it was parsed.
        public static let tooLarge = Reason("too_large")
        /// The file is not a bundle: not JSON, cut short (truncated), or a member is missing or malformed.
        public static let malformed = Reason("malformed")
        /// The file names a bundle format this verifier does not read.
        public static let unsupportedFormat = Reason("unsupported_format")
        /// A trusted key's signature does not verify: the signed bytes (the policy, version or expiry) or the
        /// signature were changed.
        public static let signatureInvalid = Reason("signature_invalid")
        /// The bundle is signed only by keys that are not trusted.
        public static let unknownKey = Reason("unknown_key")
        /// Fewer distinct trusted keys signed it than the threshold asks for.
        public static let belowThreshold = Reason("below_threshold")
        /// Its version is older than the highest version already accepted (a replayed bundle: rollback).
        public static let rollback = Reason("rollback")
        /// Its expiry has passed (a frozen or stale bundle).
        public static let expired = Reason("expired")
        /// A key-rotation bundle installs keys that did not sign it: each key a rotation adds must sign the
        /// rotation (proof that its holder has the private key), and the new set must meet its own threshold.
        public static let rotationNotProven = Reason("rotation_not_proven")
        /// Its version is the highest already accepted, but what it signs differs from the bundle accepted at that
        /// version: one version never carries two payloads.
        public static let versionReused = Reason("version_reused")
        /// The bundle names another channel (audience) than the verifier's, or none where the verifier expects one.
        public static let wrongChannel = Reason("wrong_channel")
        /// The bundle could not be fetched: the server could not be reached or trusted under the updater's own
        /// policy, or did not answer 200.
        public static let fetchFailed = Reason("fetch_failed")
        /// The bundle verified, but the policy it carries is not a valid policy file.
        public static let invalidPolicy = Reason("invalid_policy")
        /// The bundle verified, but its policy sets `"insecure": true` (the `disabled` evaluator, https-to-http
        /// redirects) and the updater's configuration does not allow insecure policies.
        public static let insecurePolicy = Reason("insecure_policy")
        /// The bundle verified, but it could not be stored durably, so it was not applied.
        public static let storageFailed = Reason("storage_failed")

        /// The code.
        public var description: String { self.code }
    }

    /// Why.
    public let reason: Reason
    private let detail: String

    package init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// `the policy bundle was refused (CODE): SENTENCE`.
    public var description: String { "the policy bundle was refused (\(self.reason)): \(self.detail)" }
}
