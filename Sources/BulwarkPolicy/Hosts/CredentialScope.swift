import Foundation

/// Where a credential may be sent: under a base URL (Siesta's `"**"`), or to hosts matching patterns, each with its
/// scheme and port.
///
/// - **Base URL.** `CredentialScope.under("https://api.example.com/v1/")` (a trailing `**` is accepted and
///   ignored) contains every URL with the same scheme, host and effective port whose path is `/v1` or starts with
///   `/v1/`. Paths are compared segment by segment: `/v1x` and `/v10/` are *not* under `/v1/`.
/// - **Host patterns.** `CredentialScope.hosts(["**.example.com"])` contains URLs whose host matches one of the
///   patterns (see ``HostPattern``), whose scheme is allowed (`https` by default) and whose effective port is allowed
///   (by default, the scheme's default port only).
/// - **Several.** `CredentialScope.anyOf([...])` contains what any of its scopes contains.
///
/// Containment is decided the way a server would read the request, erring towards "not contained":
/// - the URL must be absolute, `http` or `https`, without user information, with a host that canonicalizes (see
///   ``HostName``; a `%` escape of an ASCII byte in a host is refused);
/// - dot segments are removed from the path first (`/v1/../admin` is `/admin`, outside `/v1/`);
/// - a path holding an encoded dot, slash or backslash (`%2e`, `%2f`, `%5c`) or a raw backslash is never under a
///   base path, since servers disagree on how to read them.
///
/// ```swift
/// let scope = try CredentialScope.under("https://api.example.com/v1/")
/// scope.contains(URL(string: "https://api.example.com/v1/users?page=2")!)  // true
/// scope.contains(URL(string: "https://api.example.com/v1x")!)              // false
/// scope.contains(URL(string: "http://api.example.com/v1/")!)               // false: scheme
/// scope.contains(URL(string: "https://api.example.com:8443/v1/")!)         // false: port
/// ```
public struct CredentialScope: Hashable, Sendable, CustomStringConvertible {
    private enum Rule: Hashable, Sendable {
        /// Scheme, canonical host and port must be equal; the path must be under `path`, which ends in `/`.
        case base(scheme: String, host: String, port: Int, path: String)
        /// The host must match one of `patterns`, the scheme be in `schemes`, the port in `ports` (nil: the
        /// scheme's default port).
        case hosts(patterns: [HostPattern], schemes: Set<String>, ports: Set<Int>?)
    }

    private let rules: [Rule]

    private init(rules: [Rule]) {
        self.rules = rules
    }

    /// Everything under `baseURL`: same scheme, host and effective port, and a path under the base URL's path.
    ///
    /// - Parameter baseURL: An absolute `http` or `https` URL without user information, query or fragment, such as
    ///   `https://api.example.com/v1/`; a path not ending in `/` is read as a directory (`/v1` is `/v1/`). A final
    ///   `**` path segment (`/v1/**`) is accepted and means the same.
    /// - Throws: ``CredentialScopeError`` saying what is wrong with the URL.
    public static func under(_ baseURL: String) throws(CredentialScopeError) -> CredentialScope {
        var text = baseURL
        if text.hasSuffix("/**") {
            text.removeLast(2)
        }
        guard let url = URL(string: text) else {
            throw CredentialScopeError(.invalidURL, detail: "it cannot be parsed as a URL")
        }
        return try self.under(url)
    }

    /// Everything under `baseURL`; see ``under(_:)-(String)``.
    public static func under(_ baseURL: URL) throws(CredentialScopeError) -> CredentialScope {
        let url = baseURL.absoluteURL
        guard url.user == nil && url.password == nil else {
            throw CredentialScopeError(.userInfo, detail: "a base URL must not carry user information")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
            throw CredentialScopeError(.unsupportedScheme, detail: "a base URL must be http or https")
        }
        guard url.query(percentEncoded: true) == nil && url.fragment(percentEncoded: true) == nil else {
            throw CredentialScopeError(.queryOrFragment, detail: "a base URL must not have a query or fragment")
        }
        guard let rawHost = URLHost.host(of: url) else {
            throw CredentialScopeError(.missingHost, detail: "a base URL must have a host")
        }
        let host: String
        do throws(HostPatternError) {
            host = try HostName.canonicalize(rawHost)
        } catch {
            throw CredentialScopeError(.invalidHost, detail: error.description, hostError: error)
        }
        guard let port = url.port ?? HostAllowlist.defaultPort(for: scheme), (1...65535).contains(port) else {
            throw CredentialScopeError(.invalidURL, detail: "the port is out of range")
        }
        guard var path = Self.normalizedPath(url.path(percentEncoded: true)) else {
            throw CredentialScopeError(
                .invalidURL,
                detail: "the path holds an encoded dot, slash or backslash, or a backslash"
            )
        }
        if !path.hasSuffix("/") {
            path += "/"
        }
        return CredentialScope(rules: [.base(scheme: scheme, host: host, port: port, path: path)])
    }

    /// URLs whose host matches one of `patterns`, over one of `schemes`, on one of `ports`.
    ///
    /// - Parameters:
    ///   - patterns: Host patterns (see ``HostPattern``).
    ///   - schemes: Allowed schemes, compared ignoring case; `https` only by default.
    ///   - ports: Allowed effective ports; nil (the default) allows only the default port of the URL's scheme.
    public static func hosts(
        _ patterns: [HostPattern],
        schemes: Set<String> = ["https"],
        ports: Set<Int>? = nil
    ) -> CredentialScope {
        let schemes = Set(schemes.map { $0.lowercased() })
        return CredentialScope(rules: [.hosts(patterns: patterns, schemes: schemes, ports: ports)])
    }

    /// URLs whose host matches one of the host patterns `patterns`; see the variant taking ``HostPattern`` values.
    ///
    /// - Throws: ``CredentialScopeError`` with ``CredentialScopeError/Code/invalidHost`` for the first invalid
    ///   pattern.
    public static func hosts(
        _ patterns: [String],
        schemes: Set<String> = ["https"],
        ports: Set<Int>? = nil
    ) throws(CredentialScopeError) -> CredentialScope {
        var parsed: [HostPattern] = []
        for pattern in patterns {
            do throws(HostPatternError) {
                parsed.append(try HostPattern(pattern))
            } catch {
                throw CredentialScopeError(.invalidHost, detail: error.description, hostError: error)
            }
        }
        return self.hosts(parsed, schemes: schemes, ports: ports)
    }

    /// URLs that any of `scopes` contains. An empty list contains nothing.
    public static func anyOf(_ scopes: [CredentialScope]) -> CredentialScope {
        CredentialScope(rules: scopes.flatMap(\.rules))
    }

    /// Whether a credential in this scope may be sent with a request to `url`.
    public func contains(_ url: URL) -> Bool {
        let url = url.absoluteURL
        guard url.user == nil && url.password == nil,
            let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let rawHost = URLHost.host(of: url),
            let host = try? HostName.canonicalize(rawHost),
            let port = url.port ?? HostAllowlist.defaultPort(for: scheme)
        else {
            return false
        }
        var path: String??
        for rule in self.rules {
            switch rule {
            case .base(let ruleScheme, let ruleHost, let rulePort, let base):
                guard scheme == ruleScheme && host == ruleHost && port == rulePort else { continue }
                if path == nil {
                    path = .some(Self.normalizedPath(url.path(percentEncoded: true)))
                }
                if let path = path ?? nil, Self.isPath(path, under: base) {
                    return true
                }
            case .hosts(let patterns, let schemes, let ports):
                guard schemes.contains(scheme) else { continue }
                let portAllowed = ports?.contains(port) ?? (port == HostAllowlist.defaultPort(for: scheme))
                if portAllowed && patterns.contains(where: { $0.matches(canonicalHost: host) }) {
                    return true
                }
            }
        }
        return false
    }

    /// `https://api.example.com/v1/**` for a base URL, `https://**.example.com` for host patterns (with the ports
    /// when given), ` | ` between several.
    public var description: String {
        guard !self.rules.isEmpty else { return "(empty scope)" }
        return self.rules.map { rule in
            switch rule {
            case .base(let scheme, let host, let port, let path):
                let literal = host.contains(":") ? "[\(host)]" : host
                let authority = port == HostAllowlist.defaultPort(for: scheme) ? literal : "\(literal):\(port)"
                return "\(scheme)://\(authority)\(path)**"
            case .hosts(let patterns, let schemes, let ports):
                let scheme = schemes.sorted().joined(separator: "|")
                let portList = ports.map { ":" + $0.sorted().map(String.init).joined(separator: ",") } ?? ""
                return patterns.map { "\(scheme)://\($0)\(portList)" }.joined(separator: " | ")
            }
        }.joined(separator: " | ")
    }

    // MARK: - Paths

    /// Whether `path` (normalized) is `base` without its final slash, or starts with `base` (which ends in `/`).
    private static func isPath(_ path: String, under base: String) -> Bool {
        if path.utf8.starts(with: base.utf8) {
            return true
        }
        return path.utf8.count + 1 == base.utf8.count && base.utf8.starts(with: path.utf8)
    }

    /// The percent-encoded `path` with dot segments removed (RFC 3986 section 5.2.4), `/` if empty; nil if it
    /// holds `%2e`, `%2f` or `%5c` in either case, or a backslash.
    static func normalizedPath(_ path: String) -> String? {
        let lowered = path.lowercased()
        if lowered.contains("%2e") || lowered.contains("%2f") || lowered.contains("%5c") || path.contains("\\") {
            return nil
        }
        guard !path.isEmpty else { return "/" }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        // The first element is what precedes the leading slash: empty for an absolute path.
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        var result = output.joined(separator: "/")
        if !result.hasPrefix("/") {
            result = "/" + result
        }
        return result
    }
}
