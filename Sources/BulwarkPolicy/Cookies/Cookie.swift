import Foundation

/// A cookie kept by a ``CookieJar``, with the fields of RFC 6265's storage model (section 5.3).
///
/// The value is a secret (session cookies are credentials): it lives in a ``SecretBox``, is wiped when the cookie is
/// replaced, expires, is evicted or the jar is cleared, and prints as `<redacted>`.
public struct Cookie: Sendable, CustomStringConvertible, CustomReflectable {
    /// `SameSite` as the server sent it. Bulwark is not a browser: it has no cross-site requests, so the attribute is
    /// kept for inspection only.
    public enum SameSite: String, Sendable, CaseIterable {
        /// `SameSite=Strict`.
        case strict = "Strict"
        /// `SameSite=Lax`.
        case lax = "Lax"
        /// `SameSite=None`.
        case none = "None"
    }

    /// The cookie's name.
    public let name: String
    /// The canonical host (host-only cookie) or domain the cookie is sent to.
    public let domain: String
    /// Whether the cookie goes to ``domain`` exactly (no `Domain` attribute), rather than to it and its subdomains.
    public let isHostOnly: Bool
    /// The path the cookie is sent to, and below it: the `Path` attribute, or the default path of the URL that set
    /// it (RFC 6265 5.1.4).
    public let path: String
    /// Sent over `https` only.
    public let isSecure: Bool
    /// Whether the server set `HttpOnly`. Bulwark runs no scripts, so it is kept for inspection only.
    public let isHTTPOnly: Bool
    /// The `SameSite` attribute, if the server set one.
    public let sameSite: SameSite?
    /// When the cookie expires; nil for a session cookie (kept until ``CookieJar/removeAll()``).
    public let expiresAt: Date?
    /// When the cookie was first stored (kept when a response replaces it).
    public let createdAt: Date
    let value: SecretBox

    init(
        name: String,
        value: SecretBox,
        domain: String,
        isHostOnly: Bool,
        path: String,
        isSecure: Bool,
        isHTTPOnly: Bool,
        sameSite: SameSite?,
        expiresAt: Date?,
        createdAt: Date
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.isHostOnly = isHostOnly
        self.path = path
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }

    /// Calls `body` with the value's bytes, or returns nil once the cookie was wiped. The pointer must not escape.
    public func withUnsafeValueBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result? {
        try self.value.withUnsafeBytes(body)
    }

    /// Whether the value was wiped.
    public var isWiped: Bool { self.value.isWiped }

    /// `Cookie(session=<redacted>; domain=.example.com; path=/; secure)`: never the value.
    public var description: String {
        var text = "Cookie(\(self.name)=\(self.value.isWiped ? "<wiped>" : "<redacted>"); domain="
        text += (self.isHostOnly ? "" : ".") + self.domain + "; path=" + self.path
        if self.isSecure { text += "; secure" }
        if self.isHTTPOnly { text += "; httponly" }
        if let expiresAt = self.expiresAt { text += "; expires=\(expiresAt)" }
        return text + ")"
    }

    /// The fields without the value.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "name": self.name, "domain": self.domain, "isHostOnly": self.isHostOnly, "path": self.path,
                "isSecure": self.isSecure, "expiresAt": self.expiresAt as Any,
                "value": self.value.isWiped ? "<wiped>" : "<redacted>",
            ],
            displayStyle: .struct
        )
    }
}
