/// An error about a credential: a value that cannot be sent safely, or a token refresh that failed.
///
/// Descriptions name the header and the rule, never the secret or where in it the problem is:
///
/// ```text
/// invalid credential for header "X-Auth-Token": the value holds a character not allowed in a header field
/// ```
public struct CredentialError: Error, Sendable, CustomStringConvertible, CustomReflectable {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The header name is not an HTTP token.
        public static let invalidHeaderName = Code("invalidHeaderName")
        /// The header name frames or routes the request (`Host`, `Content-Length`, …) or is `Cookie`.
        public static let reservedHeaderName = Code("reservedHeaderName")
        /// The value is empty.
        public static let emptyValue = Code("emptyValue")
        /// The value holds a character its header does not allow (a newline, a control character, …).
        public static let invalidValue = Code("invalidValue")
        /// The cookie name is not an HTTP token.
        public static let invalidCookieName = Code("invalidCookieName")
        /// The basic-auth user name holds a colon or a control character.
        public static let invalidUsername = Code("invalidUsername")
        /// A refresh provider threw; see ``CredentialError/underlyingError``.
        public static let refreshFailed = Code("refreshFailed")
        /// The code's stable label.
        public var description: String { self.name }
    }

    /// Which problem was found.
    public let code: Code
    /// The header concerned (header names are not secrets), or nil.
    public let headerName: String?
    /// The scope of the credential whose refresh failed, for ``Code/refreshFailed``.
    public let scope: CredentialScope?
    /// What the refresh provider threw, for ``Code/refreshFailed``. It is not part of the description, since the
    /// provider's errors are not known to be free of secrets.
    public let underlyingError: (any Error)?

    init(_ code: Code, headerName: String? = nil, scope: CredentialScope? = nil, underlyingError: (any Error)? = nil) {
        self.code = code
        self.headerName = headerName
        self.scope = scope
        self.underlyingError = underlyingError
    }

    /// The code, header and scope, and the underlying error's type only: `dump` shows nothing the provider's error
    /// might hold.
    public var customMirror: Mirror {
        var children: [(label: String?, value: Any)] = [("code", self.code.description)]
        if let headerName = self.headerName { children.append(("headerName", headerName)) }
        if let scope = self.scope { children.append(("scope", scope.description)) }
        if let underlyingError = self.underlyingError {
            children.append(("underlyingError", String(describing: type(of: underlyingError))))
        }
        return Mirror(self, children: children, displayStyle: .struct)
    }

    /// Names the header or scope and the problem.
    public var description: String {
        let subject = self.headerName.map { "header \"\($0)\"" } ?? "a credential"
        switch self.code {
        case .invalidHeaderName:
            return "invalid credential for \(subject): the name is not an HTTP token"
        case .reservedHeaderName:
            return "invalid credential for \(subject): this header cannot carry a credential"
        case .emptyValue:
            return "invalid credential for \(subject): the value is empty"
        case .invalidValue:
            return "invalid credential for \(subject): the value holds a character not allowed in this header field"
        case .invalidCookieName:
            return "invalid cookie credential: the cookie name is not an HTTP token"
        case .invalidUsername:
            return "invalid basic credential: the user name holds a colon or a control character"
        default:
            let type = self.underlyingError.map { String(describing: Swift.type(of: $0)) } ?? "an error"
            return "the credential refresh for \(self.scope?.description ?? "a scope") failed (\(type))"
        }
    }
}
