/// A redirect that was not followed: the reason, and where it came from and pointed to.
///
/// The URLs are redacted (no query, fragment or user information), so the description is safe to log.
public struct RedirectRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    /// Why.
    public let reason: RedirectRefusalReason
    /// The status of the redirect response.
    public let status: Int
    /// The URL of the request that got the redirect, redacted.
    public let from: String
    /// Where the redirect pointed, redacted: the resolved URL when resolution got that far, otherwise the
    /// `Location` text; nil when there was no `Location`.
    public let to: String?

    /// A refusal; `from` and `to` must already be redacted.
    public init(reason: RedirectRefusalReason, status: Int, from: String, to: String?) {
        self.reason = reason
        self.status = status
        self.from = from
        self.to = to
    }

    /// The reason's bounded label (`host_not_allowed`, `loop`, …).
    public var shortDescription: String { self.reason.shortDescription }

    /// The reason's sentence.
    public var detail: String { self.reason.description }

    /// `redirect (302) from https://a.example/login to https://evil.example/ refused: the host … allowlist`.
    public var description: String {
        "redirect (\(self.status)) from \(self.from) to \(self.to ?? "(no Location)") refused: \(self.detail)"
    }
}
