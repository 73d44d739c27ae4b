/// What ``CredentialStore/attach(to:for:)`` did to a request's headers.
public enum CredentialAttachment: Hashable, Sendable, CustomStringConvertible {
    /// Credentials were added, in these headers (lower-case names, each once).
    case attached(headerNames: [String])
    /// No credential in the store applies to the URL (or the headers already carried them); the request goes out
    /// without any credential from the store.
    case nothingInScope
    /// The URL is outside every credential's scope and the store refuses such requests
    /// (``CredentialStore/OutOfScopeRequests/refuse``); the request must not be sent. The host is the URL's.
    case refused(host: String)

    /// Whether the request may be sent.
    public var allowsRequest: Bool {
        if case .refused = self { return false }
        return true
    }

    /// What was attached or why nothing was, without any value.
    public var description: String {
        switch self {
        case .attached(let names): return "attached credentials in \(names.joined(separator: ", "))"
        case .nothingInScope: return "no credential in scope"
        case .refused(let host): return "request to \(host) refused: it is outside every credential's scope"
        }
    }
}
