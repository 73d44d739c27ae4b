/// A host pattern with the semantics of OkHttp's `CertificatePinner`.
///
/// - `example.com` matches exactly that host.
/// - `*.example.com` matches exactly **one** label in front of `example.com`: `a.example.com`, but neither
///   `example.com` nor `a.b.example.com`.
/// - `**.example.com` matches `example.com` itself and any number of labels in front of it: `example.com`,
///   `a.example.com`, `a.b.c.example.com`.
///
/// An asterisk is allowed only as the whole leftmost label (`*.` or `**.`); anywhere else (`a*.example.com`,
/// `*example.com`, `example.*.com`, `*`, `**`, `*.*.com`, `***.example.com`) it is an error, and so is a wildcard
/// with nothing after it (`*.`, `**.`). A wildcard over a single label (`*.com`) is allowed, as in OkHttp.
///
/// Patterns and hosts are compared in their canonical form (see ``HostName``): lower-case ASCII, IDN labels in
/// punycode (`*.bücher.example` and `*.xn--bcher-kva.example` are the same pattern), and no trailing dot, so
/// `example.com.` and `example.com` are the same host and the same pattern.
///
/// IP addresses (`127.0.0.1`, `::1`, `[::1]`) are allowed as exact patterns only. A wildcard never matches an IP
/// address, and a wildcard pattern whose base is an IP address or ends in a numeric label (`*.0.0.1`) is refused.
public struct HostPattern: Hashable, Sendable, CustomStringConvertible {
    /// How a pattern relates its ``HostPattern/base`` to the hosts it matches.
    public enum Kind: Hashable, Sendable {
        /// The host must equal the base (`example.com`).
        case exact
        /// The host must be exactly one label followed by the base (`*.example.com`).
        case singleLabelWildcard
        /// The host must be the base or any number of labels followed by the base (`**.example.com`).
        case anyDepthWildcard
    }

    /// Whether the pattern is exact or which kind of wildcard it is.
    public let kind: Kind
    /// Canonical base: lower-case ASCII, no wildcard prefix, no trailing dot.
    public let base: String

    private init(kind: Kind, base: String) {
        self.kind = kind
        self.base = base
    }

    /// Parses a host pattern: `example.com`, `*.example.com` or `**.example.com`, or an IP address.
    ///
    /// - Throws: ``HostPatternError`` naming the pattern and the broken rule.
    public init(_ pattern: String) throws(HostPatternError) {
        func failure(_ code: HostPatternError.Code, _ detail: String) -> HostPatternError {
            HostPatternError(code, input: pattern, isPattern: true, detail: detail)
        }

        guard !pattern.isEmpty else {
            throw failure(.empty, "the pattern is empty")
        }
        // Reported before any wildcard rule, so that " *.example.com" is refused for its space.
        if pattern.unicodeScalars.contains(where: ControlCharacters.isInvisible) {
            throw failure(
                .whitespaceOrControl,
                "whitespace, control and invisible formatting characters are not allowed"
            )
        }
        let kind: Kind
        let rest: Substring
        let scalars = pattern.unicodeScalars
        if scalars.starts(with: "**.".unicodeScalars) {
            kind = .anyDepthWildcard
            rest = Substring(scalars.dropFirst(3))
        } else if scalars.starts(with: "*.".unicodeScalars) {
            kind = .singleLabelWildcard
            rest = Substring(scalars.dropFirst(2))
        } else {
            kind = .exact
            rest = pattern[...]
        }
        if rest.utf8.contains(UInt8(ascii: "*")) {
            throw failure(
                .misplacedWildcard,
                "an asterisk is only allowed as the whole leftmost label (\"*.\" or \"**.\")"
            )
        }
        if kind == .exact {
            self.init(kind: .exact, base: try HostName.canonicalize(rest, input: pattern, isPattern: true))
            return
        }

        guard !rest.isEmpty else {
            throw failure(.wildcardWithoutBase, "a wildcard must be followed by a domain name (\"*.example.com\")")
        }
        let wildcardOverIPAddress =
            "a wildcard cannot match an IP address (the base is an IP address or ends in a numeric label); "
            + "use the exact address"
        let base: String
        do throws(HostPatternError) {
            base = try HostName.canonicalize(rest, input: pattern, isPattern: true)
        } catch {
            if error.code == .invalidIPv4 {
                throw error.with(.wildcardOverIPAddress, detail: wildcardOverIPAddress)
            }
            throw error
        }
        if HostName.isIPAddress(base) || HostName.endsInNumber(base) {
            throw failure(.wildcardOverIPAddress, wildcardOverIPAddress)
        }
        self.init(kind: kind, base: base)
    }

    /// A pattern that matches exactly `host`: no wildcard is read, so an asterisk is an error.
    ///
    /// - Throws: ``HostPatternError`` naming the host and the broken rule.
    public static func exact(_ host: String) throws(HostPatternError) -> HostPattern {
        HostPattern(kind: .exact, base: try HostName.canonicalize(host))
    }

    /// Whether `host` matches this pattern. The host is canonicalized first (see ``HostName``); a host that cannot
    /// be canonicalized never matches.
    public func matches(_ host: String) -> Bool {
        guard let canonical = try? HostName.canonicalize(host) else {
            return false
        }
        return self.matches(canonicalHost: canonical)
    }

    /// Whether `canonicalHost`, which must already be in canonical form (see ``HostName/canonicalize(_:)``),
    /// matches this pattern. Non-canonical text (upper case, a trailing dot, Unicode) simply does not match.
    public func matches(canonicalHost: String) -> Bool {
        let host = canonicalHost.utf8
        let base = self.base.utf8
        switch self.kind {
        case .exact:
            return host.elementsEqual(base)
        case .singleLabelWildcard, .anyDepthWildcard:
            if host.count == base.count {
                return self.kind == .anyDepthWildcard && host.elementsEqual(base)
            }
            // The host must be at least one label, a dot and the base.
            guard host.count > base.count + 1 else {
                return false
            }
            let baseStart = host.index(host.endIndex, offsetBy: -base.count)
            let dot = host.index(before: baseStart)
            guard host[dot] == UInt8(ascii: "."), host[baseStart...].elementsEqual(base) else {
                return false
            }
            let prefix = host[..<dot]
            if self.kind == .singleLabelWildcard && prefix.contains(UInt8(ascii: ".")) {
                return false
            }
            return !prefix.isEmpty && !HostName.isIPAddress(canonicalHost)
        }
    }

    /// The canonical text of the pattern, such as `*.example.com`.
    public var description: String {
        switch self.kind {
        case .exact: return self.base
        case .singleLabelWildcard: return "*." + self.base
        case .anyDepthWildcard: return "**." + self.base
        }
    }

    /// Higher = more specific: exact beats any wildcard; deeper base beats shallower; "*." beats "**." for the same
    /// base.
    ///
    /// The values only mean something relative to one another. For two patterns that both match a host, the more
    /// specific one is the one ``HostMatcher`` picks.
    public var specificity: Int {
        let labels = self.base.utf8.reduce(1) { $1 == UInt8(ascii: ".") ? $0 + 1 : $0 }
        switch self.kind {
        case .exact: return (1 << 16) + labels
        case .singleLabelWildcard: return labels * 2 + 1
        case .anyDepthWildcard: return labels * 2
        }
    }
}
