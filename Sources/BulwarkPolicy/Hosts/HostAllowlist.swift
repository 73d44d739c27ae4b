import Foundation

/// The hosts a client may send requests to, checked before any DNS lookup or connection: Siesta's "host
/// whitelisting" as a policy value.
///
/// Each entry is a ``HostPattern`` (`api.example.com`, `*.example.com`, `**.example.com`, an IP address) with optional
/// scheme and port constraints. A request is allowed when its host matches a pattern and an entry with that pattern
/// allows its scheme and effective port (the URL's port, or 443 for `https` and `wss`, 80 for `http` and `ws`).
///
/// When several patterns match a host, the most specific one decides (see ``HostPattern/specificity``), as it does
/// everywhere in Bulwark: an entry for `legacy.example.com` limited to port 8443 restricts that host even if
/// `**.example.com` allows any port. Entries with the same pattern add up: any of them may allow the request.
///
/// ```swift
/// let allowlist = try HostAllowlist([
///     .init("**.example.com", schemes: ["https"]),
///     .init("localhost", ports: [8080, 8443]),
/// ])
/// allowlist.decision(for: URL(string: "https://api.example.com/v1")!)   // .allowed
/// allowlist.decision(for: URL(string: "http://api.example.com/")!)      // .refused(schemeNotAllowed)
/// allowlist.decision(for: URL(string: "https://evil.example.net/")!)    // .refused(hostNotListed)
/// ```
///
/// The decision is a value: the client turns a refusal into its "unauthorized server" error and a
/// ``SecurityEvent/Kind/requestRefusedByAllowlist`` event (see ``AllowlistRefusal/securityEvent(requestID:)``).
public struct HostAllowlist: Sendable, CustomStringConvertible {
    /// One allowed host pattern, with the schemes and ports allowed for it.
    public struct Entry: Hashable, Sendable, CustomStringConvertible {
        /// The hosts this entry allows.
        public let pattern: HostPattern
        /// The allowed schemes, lower-case; nil allows any scheme.
        public let schemes: Set<String>?
        /// The allowed effective ports; nil allows any port.
        public let ports: Set<Int>?

        /// An entry for `pattern`; `schemes` are compared ignoring case.
        public init(_ pattern: HostPattern, schemes: Set<String>? = nil, ports: Set<Int>? = nil) {
            self.pattern = pattern
            self.schemes = schemes.map { Set($0.map { $0.lowercased() }) }
            self.ports = ports
        }

        /// An entry for the host pattern `pattern` (see ``HostPattern/init(_:)``).
        ///
        /// - Throws: ``HostPatternError`` if the pattern is invalid.
        public init(_ pattern: String, schemes: Set<String>? = nil, ports: Set<Int>? = nil) throws(HostPatternError) {
            self.init(try HostPattern(pattern), schemes: schemes, ports: ports)
        }

        /// Whether this entry allows `scheme` (lower-case).
        func allows(scheme: String) -> Bool {
            self.schemes?.contains(scheme) ?? true
        }

        /// Whether this entry allows the effective port `port` (nil when the scheme has no default port).
        func allows(port: Int?) -> Bool {
            guard let ports = self.ports else { return true }
            guard let port else { return false }
            return ports.contains(port)
        }

        /// `https|http://**.example.com:443,8443`, with `*` for an unconstrained scheme and no port list when any
        /// port is allowed.
        public var description: String {
            let schemes = self.schemes.map { $0.sorted().joined(separator: "|") } ?? "*"
            let ports = self.ports.map { ":" + $0.sorted().map(String.init).joined(separator: ",") } ?? ""
            return "\(schemes)://\(self.pattern)\(ports)"
        }
    }

    /// The entries, in the order given.
    public let entries: [Entry]
    /// The entries of each pattern.
    private let matcher: HostMatcher<[Entry]>

    /// An allowlist of `entries`. An empty allowlist refuses every request.
    public init(_ entries: [Entry]) {
        self.entries = entries
        var byPattern: [HostPattern: [Entry]] = [:]
        var order: [HostPattern] = []
        for entry in entries {
            if byPattern[entry.pattern] == nil {
                order.append(entry.pattern)
            }
            byPattern[entry.pattern, default: []].append(entry)
        }
        self.matcher = HostMatcher(order.map { ($0, byPattern[$0]!) })
    }

    /// An allowlist of host patterns, any scheme and any port.
    ///
    /// - Throws: ``HostPatternError`` for the first invalid pattern.
    public init(patterns: [String]) throws(HostPatternError) {
        var entries: [Entry] = []
        for pattern in patterns {
            entries.append(try Entry(pattern))
        }
        self.init(entries)
    }

    /// Whether a request to `url` may be sent.
    ///
    /// The URL must be absolute with a host (a relative URL is judged by its absolute form). Its host is read as
    /// every other part of Bulwark reads it (see `Origin`): canonicalized (see ``HostName``) from its
    /// percent-encoded form, decoding only escapes of non-ASCII bytes (internationalized names), so `a%2eb.example`
    /// is refused as an invalid host rather than read as `a.b.example`. Any scheme is judged (`wss`, or `tls` for a
    /// raw TLS stream); user information is ignored here, and refused by the client.
    public func decision(for url: URL) -> AllowlistDecision {
        let url = url.absoluteURL
        let scheme = url.scheme?.lowercased() ?? ""
        guard let host = Origin.rawHost(of: url) else {
            return .refused(AllowlistRefusal(.missingHost, host: "", scheme: scheme, port: url.port))
        }
        return self.decision(scheme: scheme, host: host, port: url.port)
    }

    /// Whether a request to `host` over `scheme` on `port` (nil for the scheme's default) may be sent.
    public func decision(scheme: String, host: String, port: Int?) -> AllowlistDecision {
        let scheme = scheme.lowercased()
        let effectivePort = port ?? Self.defaultPort(for: scheme)
        let canonicalHost: String
        do throws(HostPatternError) {
            canonicalHost = try HostName.canonicalize(host)
        } catch {
            return .refused(
                AllowlistRefusal(.invalidHost, host: host, scheme: scheme, port: effectivePort, hostError: error)
            )
        }
        guard let (pattern, entries) = self.matcher.match(canonicalHost: canonicalHost) else {
            return .refused(AllowlistRefusal(.hostNotListed, host: canonicalHost, scheme: scheme, port: effectivePort))
        }
        if let entry = entries.first(where: { $0.allows(scheme: scheme) && $0.allows(port: effectivePort) }) {
            return .allowed(entry)
        }
        let schemeAllowed = entries.contains { $0.allows(scheme: scheme) }
        let allowedPorts = entries.filter { $0.allows(scheme: scheme) }.compactMap(\.ports).reduce(into: Set<Int>()) {
            $0.formUnion($1)
        }
        let allowedSchemes = entries.compactMap(\.schemes).reduce(into: Set<String>()) { $0.formUnion($1) }
        return .refused(
            AllowlistRefusal(
                schemeAllowed ? .portNotAllowed : .schemeNotAllowed,
                host: canonicalHost,
                scheme: scheme,
                port: effectivePort,
                pattern: pattern,
                allowedSchemes: schemeAllowed ? [] : allowedSchemes.sorted(),
                allowedPorts: schemeAllowed ? allowedPorts.sorted() : []
            )
        )
    }

    /// The port a URL without one uses: 443 for `https` and `wss`, 80 for `http` and `ws`, nil otherwise.
    public static func defaultPort(for scheme: String) -> Int? {
        Origin.defaultPort(for: scheme)
    }

    /// The entries, one per line.
    public var description: String {
        self.entries.isEmpty ? "(empty allowlist)" : self.entries.map(\.description).joined(separator: "\n")
    }
}
