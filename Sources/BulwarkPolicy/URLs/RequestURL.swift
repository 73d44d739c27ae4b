import Foundation

/// An absolute `http` or `https` URL read once, the way every part of Bulwark reads it: its ``Origin``, one
/// normalized path, its query and fragment.
///
/// The client's request target, redirect resolution (the request URL it resolves against and every URL it produces),
/// credential scopes and the cookie jar read a URL through this type, so they agree on its origin and path:
///
/// - the URL must be absolute, `http` or `https`, without user information (`user:password@`, refused: credentials
///   are never taken from a URL), with a host that canonicalizes (see ``Origin``);
/// - ``path`` has its dot segments removed by ``removingDotSegments(_:)`` (RFC 3986 section 5.2.4): `/v1/../admin`
///   is `/admin`. It stays percent-encoded: `%2e` is not a dot there (as curl reads it; servers that decode it
///   first read such a path differently, which ``CredentialScope/PathAmbiguity`` refuses to guess about);
/// - ``pathAsWritten`` keeps the path as the URL holds it: what the client puts in its request line.
package struct RequestURL: Hashable, Sendable {
    /// Scheme, canonical host and effective port.
    package var origin: Origin
    /// Starts with `/`; percent-encoded; without dot segments.
    package private(set) var path: String
    /// The path as the URL holds it (percent-encoded, `/` when empty), dot segments and all.
    package private(set) var pathAsWritten: String
    /// The query without `?`, percent-encoded; nil when there is no `?`.
    package var query: String?
    /// The fragment without `#`, percent-encoded; nil when there is no `#`.
    package var fragment: String?

    /// Reads `url` (made absolute first).
    ///
    /// - Throws: ``URLReadingError`` for user information, then for what ``Origin/init(_:)`` refuses.
    package init(_ url: URL) throws(URLReadingError) {
        let url = url.absoluteURL
        guard url.user == nil, url.password == nil else {
            throw URLReadingError(.userInfo, host: Origin.rawHost(of: url))
        }
        let origin = try Origin(url)
        self.init(
            origin: origin,
            path: Self.pathAsWritten(of: url),
            query: url.query(percentEncoded: true),
            fragment: url.fragment(percentEncoded: true)
        )
    }

    /// The URL of `origin` with `path` (percent-encoded; its dot segments are removed here, and an empty path is
    /// `/`), `query` and `fragment`.
    package init(origin: Origin, path: String, query: String?, fragment: String?) {
        self.origin = origin
        self.pathAsWritten = path.isEmpty ? "/" : path
        let normalized = Self.removingDotSegments(path)
        self.path = normalized.isEmpty ? "/" : normalized
        self.query = query
        self.fragment = fragment
    }

    /// `https` or `http`.
    package var scheme: String { self.origin.scheme }
    /// The canonical host.
    package var host: String { self.origin.host }
    /// The effective port.
    package var port: Int { self.origin.port }

    /// The normalized path and the query: what a request for this URL asks for.
    package var pathAndQuery: String {
        self.path + (self.query.map { "?" + $0 } ?? "")
    }

    /// The URL without its fragment, normalized: what is requested, and what a redirect loop repeats.
    package var withoutFragment: String {
        "\(self.scheme)://\(self.origin.authority)\(self.pathAndQuery)"
    }

    /// The whole URL, normalized.
    package var text: String {
        self.withoutFragment + (self.fragment.map { "#" + $0 } ?? "")
    }

    /// Scheme, authority and normalized path: no query, no fragment, no user information. Safe for logs and events.
    package var redacted: String {
        "\(self.scheme)://\(self.origin.authority)\(self.path)"
    }

    /// A Foundation URL for ``text`` (it only holds characters RFC 3986 allows, so the parse succeeds).
    package var url: URL? {
        URL(string: self.text)
    }

    /// The percent-encoded path of `url` (made absolute first) as it holds it, `/` when empty: the one place a
    /// Foundation URL's path is read.
    package static func pathAsWritten(of url: URL) -> String {
        let path = url.absoluteURL.path(percentEncoded: true)
        return path.isEmpty ? "/" : path
    }

    /// RFC 3986 section 5.2.4, the one dot-segment removal of the package: `/a/b/../c/./d` becomes `/a/c/d`, `/a/..`
    /// becomes `/`, `/..` above the root stays at the root. Only the segments `.` and `..` count: `%2e`, `..;` and
    /// `.a` are ordinary segments.
    package static func removingDotSegments(_ path: String) -> String {
        // Nearly every path has no dot segment, and then the algorithm gives it back unchanged: say so after one
        // pass over its bytes instead of taking it apart segment by segment (on every request).
        guard Self.hasDotSegment(path) else { return path }
        return Self.removingDotSegmentsStepByStep(path)
    }

    /// RFC 3986 section 5.2.4's loop itself, for any path.
    static func removingDotSegmentsStepByStep(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                _ = output.popLast()
            } else if input == "/.." {
                input = "/"
                _ = output.popLast()
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }

    /// Whether a segment of `path` (between slashes, or at either end) is `.` or `..`: the only input that
    /// ``removingDotSegments(_:)`` changes.
    static func hasDotSegment(_ path: String) -> Bool {
        var length = 0
        var dots = 0
        for byte in path.utf8 {
            if byte == UInt8(ascii: "/") {
                if length > 0, length == dots, dots <= 2 { return true }
                length = 0
                dots = 0
            } else {
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return length > 0 && length == dots && dots <= 2
    }
}
