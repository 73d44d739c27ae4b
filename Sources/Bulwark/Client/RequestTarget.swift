import BulwarkPolicy
import Foundation

/// Where a request goes: the checked scheme, host and port of its URL, and what its request line asks for.
///
/// The URL is read by ``RequestURL``, as the allowlist, credential scopes, the cookie jar and the redirect rules read
/// it, so the client connects to the origin they decided on.
struct RequestTarget: Hashable, Sendable {
    /// The URL as read: its origin, normalized path, query and fragment.
    let url: RequestURL

    var scheme: String { self.url.scheme }
    /// Canonical host (lower-case, punycode, IPv6 without brackets).
    var host: String { self.url.host }
    var port: Int { self.url.port }
    /// Path and query, as sent in the request line: the path as the URL holds it (dot segments are not removed on
    /// the wire; ``RequestURL/path`` is what scopes and cookies decide on).
    var pathAndQuery: String { self.url.pathAsWritten + (self.url.query.map { "?" + $0 } ?? "") }

    var isTLS: Bool { self.url.origin.isSecure }

    /// The `Host` header value.
    var hostHeader: String { self.url.origin.authority }

    init(_ url: URL) throws(BulwarkError) {
        do throws(URLReadingError) {
            self.url = try RequestURL(url)
        } catch {
            throw BulwarkError(.invalidURL, host: error.host, detail: error.description)
        }
    }

    /// The URL text without userinfo, query or fragment, for error messages.
    static func redacted(_ text: String) -> String {
        URLRedaction.redacted(text)
    }
}
