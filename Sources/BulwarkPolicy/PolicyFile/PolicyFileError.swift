/// An error raised when a policy file (`bulwark-policy.json`, format `bulwark-policy/1`) is refused.
///
/// Every error names where the problem is as a JSON pointer (RFC 6901: `/hosts/api.example.com/pins/1` is the
/// second pin of the host `api.example.com`) and, when the text was read from a file, its line:
///
/// ```text
/// policy line 7, /hosts/api.example.com/pins/1: invalid pin "sha256/abc": decodes to 2 bytes; ...
/// ```
public struct PolicyFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The file cannot be read, or is larger than the limit.
        public static let unreadable = Code("unreadable")
        /// The text is not JSON (or repeats a member name in one object).
        public static let syntax = Code("syntax")
        /// The `format` member is missing or names another format.
        public static let unsupportedFormat = Code("unsupportedFormat")
        /// A member this format does not define.
        public static let unknownKey = Code("unknownKey")
        /// A required member is missing.
        public static let missingKey = Code("missingKey")
        /// A value of the wrong JSON type (a string where a list is expected, a fraction where a whole number is).
        public static let wrongType = Code("wrongType")
        /// A value of the right type outside the values allowed (an unknown evaluator kind, a port of 0).
        public static let invalidValue = Code("invalidValue")
        /// A pin that does not parse, or a pin set the rules refuse (one pin without `allowSinglePin`).
        public static let invalidPin = Code("invalidPin")
        /// A host pattern that does not parse, or two patterns that are the same pattern.
        public static let invalidPattern = Code("invalidPattern")
        /// A certificate (inline PEM or a file) that cannot be loaded.
        public static let invalidCertificate = Code("invalidCertificate")
        /// An option that weakens validation (`disabled`, https-to-http redirects) without `"insecure": true`.
        public static let insecureOptionNotAllowed = Code("insecureOptionNotAllowed")
        /// A secret written into the file where only a file path may stand.
        public static let secretInPolicy = Code("secretInPolicy")
        /// Revocation checks over the network were asked for, but no fetcher was given to build the policy with.
        public static let revocationFetcherMissing = Code("revocationFetcherMissing")
        /// A client certificate named by the policy cannot be loaded.
        public static let invalidClientCertificate = Code("invalidClientCertificate")

        /// The name of the code, such as `invalidPin`.
        public var description: String { self.name }
    }

    /// Which rule was broken.
    public let code: Code
    /// Where: a JSON pointer into the policy (`""` for the whole document).
    public let pointer: String
    /// The line the value starts on, when known.
    public let line: Int?
    private let detail: String

    package init(_ code: Code, pointer: String, line: Int?, detail: String) {
        self.code = code
        self.pointer = pointer
        self.line = line.flatMap { $0 > 0 ? $0 : nil }
        self.detail = detail
    }

    /// What is wrong, in words, without the location.
    public var explanation: String { self.detail }

    /// `policy line N, POINTER: what is wrong`.
    public var description: String {
        let place = self.pointer.isEmpty ? "the document" : self.pointer
        if let line = self.line {
            return "policy line \(line), \(place): \(self.detail)"
        }
        return "policy \(place): \(self.detail)"
    }
}
