/// An error raised when a ``CredentialScope`` cannot be built from a base URL or host patterns.
///
/// Descriptions never quote the base URL (it might carry user information or a token in its query); they say what
/// is wrong, and quote a refused host pattern through its ``HostPatternError``.
public struct CredentialScopeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The base URL cannot be parsed, its port is out of range, or its path is ambiguous.
        public static let invalidURL = Code("invalidURL")
        /// The base URL is not `http` or `https`.
        public static let unsupportedScheme = Code("unsupportedScheme")
        /// The base URL has user information (`user:password@`).
        public static let userInfo = Code("userInfo")
        /// The base URL has a query or a fragment.
        public static let queryOrFragment = Code("queryOrFragment")
        /// The base URL has no host.
        public static let missingHost = Code("missingHost")
        /// The base URL's host or a host pattern is invalid; see ``CredentialScopeError/hostError``.
        public static let invalidHost = Code("invalidHost")
        /// The code's stable label.
        public var description: String { self.name }
    }

    /// Which rule was broken.
    public let code: Code
    /// Why the host or pattern is invalid, for ``Code/invalidHost``.
    public let hostError: HostPatternError?
    private let detail: String

    init(_ code: Code, detail: String, hostError: HostPatternError? = nil) {
        self.code = code
        self.detail = detail
        self.hostError = hostError
    }

    /// The error for a base URL that ``RequestURL`` does not read.
    init(reading error: URLReadingError) {
        switch error.code {
        case .userInfo: self.init(.userInfo, detail: "a base URL must not carry user information")
        case .unsupportedScheme: self.init(.unsupportedScheme, detail: "a base URL must be http or https")
        case .missingHost: self.init(.missingHost, detail: "a base URL must have a host")
        case .invalidHost:
            self.init(
                .invalidHost,
                detail: error.hostError?.description ?? error.description,
                hostError: error.hostError
            )
        default: self.init(.invalidURL, detail: "the port is out of range")
        }
    }

    /// `invalid credential scope: …`.
    public var description: String {
        "invalid credential scope: \(self.detail)"
    }
}
