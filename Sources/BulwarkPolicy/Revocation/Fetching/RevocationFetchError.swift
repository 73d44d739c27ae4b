/// Why revocation data could not be fetched.
///
/// A struct over a private enum, so that new failures can be added without breaking a `switch` of users; tell
/// failures apart by ``code``. The description names the URL (without an OCSP request's encoded path).
public struct RevocationFetchError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case unsupportedURL(url: String, why: String)
        case unreachable(url: String, detail: String)
        case timedOut(url: String, seconds: Double)
        case httpStatus(url: String, status: Int)
        case tooLarge(url: String, limit: Int)
        case redirectRefused(url: String, location: String)
        case invalidResponse(url: String, detail: String)
    }

    private let backing: Backing

    private init(_ backing: Backing) {
        self.backing = backing
    }

    /// The URL is not an `http://` URL Bulwark fetches revocation data from.
    public static func unsupportedURL(_ url: String, why: String) -> RevocationFetchError {
        RevocationFetchError(.unsupportedURL(url: Self.shown(url), why: why))
    }

    /// No connection could be made (refused, no such host).
    public static func unreachable(_ url: String, detail: String) -> RevocationFetchError {
        RevocationFetchError(.unreachable(url: Self.shown(url), detail: detail))
    }

    /// The fetch took longer than its timeout.
    public static func timedOut(_ url: String, seconds: Double) -> RevocationFetchError {
        RevocationFetchError(.timedOut(url: Self.shown(url), seconds: seconds))
    }

    /// The server answered with a status other than 200.
    public static func httpStatus(_ url: String, status: Int) -> RevocationFetchError {
        RevocationFetchError(.httpStatus(url: Self.shown(url), status: status))
    }

    /// The response body is larger than the cap.
    public static func tooLarge(_ url: String, limit: Int) -> RevocationFetchError {
        RevocationFetchError(.tooLarge(url: Self.shown(url), limit: limit))
    }

    /// The server redirected somewhere other than its own origin (or too often).
    public static func redirectRefused(_ url: String, location: String) -> RevocationFetchError {
        RevocationFetchError(.redirectRefused(url: Self.shown(url), location: Self.shown(location)))
    }

    /// The response is not valid HTTP, or ended early.
    public static func invalidResponse(_ url: String, detail: String) -> RevocationFetchError {
        RevocationFetchError(.invalidResponse(url: Self.shown(url), detail: detail))
    }

    /// A stable label: `unsupported_url`, `unreachable`, `timed_out`, `http_status`, `too_large`, `redirect_refused`
    /// or `invalid_response`.
    public var code: String {
        switch self.backing {
        case .unsupportedURL: return "unsupported_url"
        case .unreachable: return "unreachable"
        case .timedOut: return "timed_out"
        case .httpStatus: return "http_status"
        case .tooLarge: return "too_large"
        case .redirectRefused: return "redirect_refused"
        case .invalidResponse: return "invalid_response"
        }
    }

    /// What failed, for which URL, in words.
    public var description: String {
        switch self.backing {
        case .unsupportedURL(let url, let why):
            return "\(url) cannot be fetched: \(why)"
        case .unreachable(let url, let detail):
            return "\(url) could not be reached (\(detail))"
        case .timedOut(let url, let seconds):
            return "\(url) did not answer within \(Self.format(seconds)) s"
        case .httpStatus(let url, let status):
            return "\(url) answered with HTTP status \(status)"
        case .tooLarge(let url, let limit):
            return "the response of \(url) is larger than the limit of \(limit) bytes"
        case .redirectRefused(let url, let location):
            return "\(url) redirected to \(location), which is not the same origin; revocation fetches follow "
                + "same-origin redirects only"
        case .invalidResponse(let url, let detail):
            return "the response of \(url) is not valid HTTP (\(detail))"
        }
    }

    /// A URL as shown in messages: an OCSP GET carries the whole encoded request in its path, cut here.
    private static func shown(_ url: String) -> String {
        url.count > 120 ? String(url.prefix(100)) + "…" : url
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
