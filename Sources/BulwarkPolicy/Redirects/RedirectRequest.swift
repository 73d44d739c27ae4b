import Foundation

/// The request that got a redirect response, as the policy needs to see it.
public struct RedirectRequest: Hashable, Sendable {
    /// What the request's body was, which decides whether a hop that keeps the method can resend it.
    public enum Body: Hashable, Sendable {
        /// No body.
        case none
        /// A body held in memory: it can be sent again.
        case replayable
        /// A streamed body: it was consumed by sending it once.
        case streamed
    }

    /// The method, as sent (`GET`, `POST`, …).
    public var method: String
    /// The URL the request was sent to.
    public var url: URL
    /// The header fields the caller set, in order (not those the transport adds, such as `host`).
    public var headers: [HeaderField]
    /// Whether the request had a body, and whether it can be sent again.
    public var body: Body

    /// The request as the policy sees it.
    public init(method: String, url: URL, headers: [HeaderField] = [], body: Body = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}
