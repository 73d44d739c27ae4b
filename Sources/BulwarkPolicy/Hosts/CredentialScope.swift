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
/// Containment is decided the way a server would read the request, erring towards "not contained", and on the URL as
/// the client, the redirect rules and the cookie jar read it (one reader, with one dot-segment removal):
/// - the URL must be absolute, `http` or `https`, without user information, with a host that canonicalizes (see
///   ``HostName``; a `%` escape of an ASCII byte in a host is refused);
/// - dot segments are removed from the path first (`/v1/../admin` is `/admin`, outside `/v1/`);
/// - a path that common servers read differently is never under a base path (see ``PathAmbiguity``): an encoded
///   dot, slash or backslash (`%2e`, `%2f`, `%5c`, in any case) or a raw backslash; a dot segment with a path
///   parameter (`/v1/..;/admin`, which Tomcat reads as `/admin`); an empty segment before `..` (`/v1//../admin`,
///   which nginx reads as `/admin`). Rather than guess which server is behind the URL, the scope leaves such a
///   request without its credential (``pathAmbiguity(of:)`` says why).
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
        /// The origin must be equal; the path must be under `path`, which ends in `/`.
        case base(origin: Origin, path: String)
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
        let url: RequestURL
        do throws(URLReadingError) {
            url = try RequestURL(baseURL)
        } catch {
            throw CredentialScopeError(reading: error)
        }
        guard url.query == nil && url.fragment == nil else {
            throw CredentialScopeError(.queryOrFragment, detail: "a base URL must not have a query or fragment")
        }
        if let ambiguity = Self.ambiguity(ofPath: url.pathAsWritten) {
            throw CredentialScopeError(.invalidURL, detail: "the path is ambiguous: \(ambiguity.explanation)")
        }
        var path = url.path
        if !path.hasSuffix("/") {
            path += "/"
        }
        return CredentialScope(rules: [.base(origin: url.origin, path: path)])
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

    /// Why this scope leaves `url` out for its path alone: the path is ambiguous (see ``PathAmbiguity``) and a
    /// base-URL rule has the URL's scheme, host and port. Nil otherwise, and whenever ``contains(_:)`` is true.
    public func pathAmbiguity(for url: URL) -> PathAmbiguity? {
        guard let url = try? RequestURL(url), let ambiguity = Self.ambiguity(ofPath: url.pathAsWritten),
            !self.contains(url)
        else {
            return nil
        }
        for case .base(let origin, _) in self.rules where origin == url.origin {
            return ambiguity
        }
        return nil
    }

    /// Whether a credential in this scope may be sent with a request to `url`.
    public func contains(_ url: URL) -> Bool {
        guard let url = try? RequestURL(url) else {
            return false
        }
        return self.contains(url)
    }

    /// Whether a credential in this scope may be sent with a request to `url`.
    func contains(_ url: RequestURL) -> Bool {
        // Nil when servers could read the path as another one (see PathAmbiguity).
        let path = Self.ambiguity(ofPath: url.pathAsWritten) == nil ? url.path : nil
        for rule in self.rules {
            switch rule {
            case .base(let origin, let base):
                if origin == url.origin, let path, Self.isPath(path, under: base) {
                    return true
                }
            case .hosts(let patterns, let schemes, let ports):
                guard schemes.contains(url.scheme) else { continue }
                let portAllowed = ports?.contains(url.port) ?? (url.port == Origin.defaultPort(for: url.scheme))
                if portAllowed && patterns.contains(where: { $0.matches(canonicalHost: url.host) }) {
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
            case .base(let origin, let path):
                return "\(origin.scheme)://\(origin.authority)\(path)**"
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

    /// The percent-encoded `path` with dot segments removed (by ``RequestURL/removingDotSegments(_:)``), `/` if
    /// empty; nil if common servers could read it as another path (see ``PathAmbiguity``).
    static func normalizedPath(_ path: String) -> String? {
        guard Self.ambiguity(ofPath: path) == nil else { return nil }
        let normalized = RequestURL.removingDotSegments(path)
        return normalized.isEmpty ? "/" : normalized
    }

    /// Why servers could read the percent-encoded `path` as different paths, or nil when they all read it alike.
    static func ambiguity(ofPath path: String) -> PathAmbiguity? {
        if path.contains("\\") {
            return .backslash
        }
        let lowered = path.lowercased()
        if lowered.contains("%2e") || lowered.contains("%2f") || lowered.contains("%5c") {
            return .encodedDotSlashOrBackslash
        }
        let segments = lowered.split(separator: "/", omittingEmptySubsequences: false)
        var sawEmptySegment = false
        for (index, segment) in segments.enumerated() {
            // Tomcat and Jetty drop a path parameter (";…") before removing dot segments: "..;x" is "..". Some
            // servers decode "%3b" first. Whichever comes first starts the parameter.
            let cuts = [segment.firstRange(of: ";"), segment.firstRange(of: "%3b")].compactMap { $0?.lowerBound }
            if let cut = cuts.min() {
                let name = segment[..<cut]
                if name == "." || name == ".." {
                    return .parameterInDotSegment
                }
            }
            // nginx, Apache (MergeSlashes) and others merge "//" before removing dot segments, so the ".." after an
            // empty segment removes a different segment for them.
            if segment == ".." && sawEmptySegment {
                return .emptySegmentBeforeDotDot
            }
            if segment.isEmpty && index > 0 {
                sawEmptySegment = true
            }
        }
        return nil
    }
}

extension CredentialScope {
    /// Why a path is refused by a base-URL scope: common servers would read it differently, so Bulwark does not guess
    /// whether it is under the base path. A request with such a path gets no credential from a base-URL scope (a
    /// host-pattern scope does not look at paths).
    public enum PathAmbiguity: String, Hashable, Sendable, CustomStringConvertible {
        /// A raw backslash: some servers read it as `/`.
        case backslash = "backslash"
        /// `%2e`, `%2f` or `%5c` in either case (`%2e%2e`, `.%2E`, `a%2Fb`): some servers decode them before
        /// splitting the path and removing dot segments, others after.
        case encodedDotSlashOrBackslash = "encoded_dot_slash_or_backslash"
        /// A dot segment with a path parameter, such as `..;/` or `..;jsessionid=x/` (or `..%3b`): Tomcat and Jetty
        /// read it as `..`, the URL standard as an ordinary segment.
        case parameterInDotSegment = "parameter_in_dot_segment"
        /// An empty segment before a `..` (`/v1//../admin`): servers that merge slashes first (nginx, Apache) remove
        /// a different segment than RFC 3986 does.
        case emptySegmentBeforeDotDot = "empty_segment_before_dot_dot"

        /// The label, for events and metrics.
        public var description: String { self.rawValue }

        /// A phrase saying what was found.
        public var explanation: String {
            switch self {
            case .backslash: return "it holds a backslash"
            case .encodedDotSlashOrBackslash: return "it holds an encoded dot, slash or backslash"
            case .parameterInDotSegment: return "a dot segment carries a path parameter (\"..;\")"
            case .emptySegmentBeforeDotDot: return "an empty segment comes before \"..\""
            }
        }
    }

    /// Why `url`'s path is ambiguous to a base-URL scope, or nil when it is not.
    ///
    /// ``contains(_:)`` is false for a URL with an ambiguous path under every base-URL rule; this says why, for
    /// events and diagnostics.
    public static func pathAmbiguity(of url: URL) -> PathAmbiguity? {
        self.ambiguity(ofPath: RequestURL.pathAsWritten(of: url))
    }
}
