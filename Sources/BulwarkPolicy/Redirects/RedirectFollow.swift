import Foundation

/// The request to send next, when a redirect is followed.
///
/// It prints credential header values as `<redacted>` (see ``HeaderField/redactedNames``), in ``description``,
/// ``debugDescription``, `dump` and `Mirror`, and its URL without query, fragment or user information.
public struct RedirectFollow: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The resolved target: canonical host, no dot segments, the fragment of the `Location` (or of the previous URL
    /// when the `Location` has none).
    public var url: URL
    /// The method of the next request: `GET` after a 303 (unless the method was `HEAD`) and after a 301 or 302 of a
    /// `POST`; otherwise unchanged.
    public var method: String
    /// The header fields of the next request, after stripping.
    public var headers: [HeaderField]
    /// The lower-case names of the header fields removed, in the order they appeared: credentials after an origin
    /// change, body headers when the body is dropped, `host` when the origin changes.
    public var strippedHeaders: [String]
    /// The credential headers among ``strippedHeaders`` (`authorization`, `cookie`, `proxy-authorization` and any
    /// the policy adds).
    public var strippedCredentials: [String]
    /// Whether the request body is sent again (307, 308, and 301 or 302 of a method other than `POST`).
    public var keepsBody: Bool
    /// Whether the scheme, host or effective port differs from the previous request's.
    public var changesOrigin: Bool
    /// Whether this hop goes from https to http, which only the dangerous opt-in allows.
    public var isDowngrade: Bool

    /// A follow decision; the flags default to a same-origin hop that drops the body.
    public init(
        url: URL,
        method: String,
        headers: [HeaderField],
        strippedHeaders: [String] = [],
        strippedCredentials: [String] = [],
        keepsBody: Bool = false,
        changesOrigin: Bool = false,
        isDowngrade: Bool = false
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.strippedHeaders = strippedHeaders
        self.strippedCredentials = strippedCredentials
        self.keepsBody = keepsBody
        self.changesOrigin = changesOrigin
        self.isDowngrade = isDowngrade
    }

    /// `GET https://a.example/next [Accept: */*, Authorization: <redacted>]`, then the stripped headers if any.
    public var description: String {
        var text = "\(self.method) \(URLRedaction.redacted(self.url)) ["
        text += self.headers.map(\.description).joined(separator: ", ") + "]"
        if !self.strippedHeaders.isEmpty {
            text += " (stripped \(self.strippedHeaders.joined(separator: ", ")))"
        }
        return text
    }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// The fields, with the URL redacted and the headers printing credentials as `<redacted>`.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "url": URLRedaction.redacted(self.url), "method": self.method, "headers": self.headers,
                "strippedHeaders": self.strippedHeaders, "strippedCredentials": self.strippedCredentials,
                "keepsBody": self.keepsBody, "changesOrigin": self.changesOrigin, "isDowngrade": self.isDowngrade,
            ],
            displayStyle: .struct
        )
    }
}
