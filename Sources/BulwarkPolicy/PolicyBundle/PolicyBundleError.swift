/// An error raised when a signing key, a public key line or a trusted-key file cannot be used.
///
/// (A bundle that fails verification is not an error but a ``PolicyBundleRefusal``.) Descriptions never hold a
/// private key's bytes.
public struct PolicyBundleError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A private key file that is not a `bulwark-policy-private-key/1` Ed25519 key.
        public static let invalidPrivateKey = Code("invalidPrivateKey")
        /// A public key line that is not `bulwark-policy-key/1 ed25519 BASE64 [name]`.
        public static let invalidPublicKey = Code("invalidPublicKey")
        /// A trusted-key set that is empty, repeats a key, or has a threshold outside 1 to the number of keys.
        public static let invalidTrustedKeys = Code("invalidTrustedKeys")
        /// A bundle cannot be made: no signing key, a version or expiry out of range.
        public static let invalidBundle = Code("invalidBundle")

        /// The name of the code.
        public var description: String { self.name }
    }

    /// Which rule was broken.
    public let code: Code
    private let detail: String

    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// What is wrong, in words.
    public var description: String { self.detail }
}
