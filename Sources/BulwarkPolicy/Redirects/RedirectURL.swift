import Foundation

/// An absolute `http` or `https` URL as the redirect rules see it: a canonical host (see ``HostName``), an effective
/// port, a path without dot segments.
struct RedirectURL: Hashable, Sendable {
    /// `https` or `http`.
    var scheme: String
    /// Canonical host: lower-case ASCII, punycode, IPv6 without brackets.
    var host: String
    /// The effective port: the explicit one, or the scheme's default.
    var port: Int
    /// Starts with `/`; percent-encoded.
    var path: String
    /// The query without `?`, percent-encoded; nil when there is no `?`.
    var query: String?
    /// The fragment without `#`, percent-encoded; nil when there is no `#`.
    var fragment: String?

    static func defaultPort(for scheme: String) -> Int {
        scheme == "https" ? 443 : 80
    }

    /// Reads a request URL the way the client does: http(s) only, no userinfo, a host that canonicalizes.
    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            url.user == nil, url.password == nil,
            let rawHost = url.host(percentEncoded: true), !rawHost.isEmpty,
            let host = try? HostName.canonicalize(rawHost)
        else {
            return nil
        }
        let port = url.port ?? Self.defaultPort(for: scheme)
        guard (1...65535).contains(port) else { return nil }
        let path = url.path(percentEncoded: true)
        self.init(
            scheme: scheme,
            host: host,
            port: port,
            path: path.isEmpty ? "/" : RedirectLocation.removeDotSegments(path),
            query: url.query(percentEncoded: true),
            fragment: url.fragment(percentEncoded: true)
        )
    }

    init(scheme: String, host: String, port: Int, path: String, query: String?, fragment: String?) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`; the port only when it is not the scheme's default.
    var authority: String {
        let literal = self.host.contains(":") ? "[\(self.host)]" : self.host
        return self.port == Self.defaultPort(for: self.scheme) ? literal : "\(literal):\(self.port)"
    }

    /// Scheme, host and effective port: two URLs with the same origin may share credentials.
    var origin: String {
        "\(self.scheme)://\(self.host):\(self.port)"
    }

    /// The URL without its fragment: what is requested, and what a loop repeats.
    var withoutFragment: String {
        "\(self.scheme)://\(self.authority)\(self.path)" + (self.query.map { "?" + $0 } ?? "")
    }

    /// The whole URL.
    var text: String {
        self.withoutFragment + (self.fragment.map { "#" + $0 } ?? "")
    }

    /// `url` as events and errors show it: the parsed form's ``redacted`` (scheme, host, port, path), or, for a
    /// URL that does not parse as a redirect target, its text redacted by ``RedirectLocation/redacted(_:)``.
    static func redactedText(of url: URL) -> String {
        RedirectURL(url)?.redacted ?? RedirectLocation.redacted(url.absoluteString)
    }

    /// Scheme, authority and path: no query, no fragment, no userinfo. Safe for logs and events.
    var redacted: String {
        "\(self.scheme)://\(self.authority)\(self.path)"
    }

    /// A Foundation URL for the whole URL (it only holds characters RFC 3986 allows, so the parse succeeds).
    var url: URL? {
        URL(string: self.text)
    }
}
