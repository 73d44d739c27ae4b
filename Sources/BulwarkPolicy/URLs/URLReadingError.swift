/// Why a URL is not one Bulwark sends a request to: what ``Origin`` and ``RequestURL`` report, and each reader turns
/// into its own error (`invalid_url` for the client, ``CredentialScopeError`` for a scope, no match for the cookie jar
/// and the redirect rules).
///
/// Descriptions never quote the URL: it may carry user information or a token.
package struct URLReadingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which rule the URL breaks; compare with the static members.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case unsupportedScheme, userInfo, missingHost, invalidHost, invalidPort
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The scheme is not `http` or `https`, or there is none (a relative URL).
        package static let unsupportedScheme = Code(.unsupportedScheme)
        /// The URL has user information (`user:password@`): credentials are never read from a URL.
        package static let userInfo = Code(.userInfo)
        /// The URL has no host.
        package static let missingHost = Code(.missingHost)
        /// The host does not canonicalize; see ``URLReadingError/hostError``.
        package static let invalidHost = Code(.invalidHost)
        /// The port is not 1-65535.
        package static let invalidPort = Code(.invalidPort)

        /// `unsupported_scheme`, `user_info`, `missing_host`, `invalid_host` or `invalid_port`.
        package var description: String {
            switch self.base {
            case .unsupportedScheme: return "unsupported_scheme"
            case .userInfo: return "user_info"
            case .missingHost: return "missing_host"
            case .invalidHost: return "invalid_host"
            case .invalidPort: return "invalid_port"
            }
        }
    }

    /// Which rule was broken.
    package let code: Code
    /// The host as far as it could be read: canonical for ``Code/invalidPort``, as written for ``Code/invalidHost``,
    /// as the URL holds it for the scheme and user-information errors, nil without a host.
    package let host: String?
    /// Why the host does not canonicalize, for ``Code/invalidHost``.
    package let hostError: HostPatternError?
    /// The port, for ``Code/invalidPort``.
    package let port: Int?

    init(_ code: Code, host: String?, hostError: HostPatternError? = nil, port: Int? = nil) {
        self.code = code
        self.host = host
        self.hostError = hostError
        self.port = port
    }

    /// One phrase saying what is wrong, such as `the URL has no host`.
    package var description: String {
        switch self.code {
        case .unsupportedScheme: return "only https and http URLs are supported"
        case .userInfo: return "the URL carries userinfo; credentials are never sent from a URL"
        case .missingHost: return "the URL has no host"
        case .invalidHost: return self.hostError.map(String.init(describing:)) ?? "the host is invalid"
        default: return "port \(self.port.map(String.init) ?? "") is out of range"
        }
    }
}
