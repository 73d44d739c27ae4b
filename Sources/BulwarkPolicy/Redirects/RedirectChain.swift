import Foundation

/// What a chain of redirects has done so far: the URLs requested, the hops followed, and whether the origin ever
/// changed. A transport keeps one per request and ``record(_:)``s every hop it follows.
///
/// The origin flag is sticky: once any hop left the first origin, credentials are stripped from every later hop,
/// even one that comes back (Go's CVE-2024-45336 re-added them there).
public struct RedirectChain: Hashable, Sendable {
    /// The canonical host of the first request; redirects may always return to it.
    public let initialHost: String?
    /// The URLs requested so far, without fragments, in canonical form.
    public private(set) var requested: [String]
    /// How many redirects were followed.
    public private(set) var followedCount: Int
    /// Whether any hop so far changed the origin (scheme, host or effective port).
    public private(set) var hasChangedOrigin: Bool

    /// A chain that begins with a request to `url`.
    ///
    /// - Parameters:
    ///   - url: The URL of the first request.
    ///   - followedCount: redirects already followed before `url` (for a transport that only knows the count).
    ///   - hasChangedOrigin: whether the origin already changed before `url`.
    public init(startingAt url: URL, followedCount: Int = 0, hasChangedOrigin: Bool = false) {
        let parsed = try? RequestURL(url)
        self.initialHost = parsed?.host
        self.requested = [parsed?.withoutFragment ?? URLRedaction.redacted(url.absoluteString)]
        self.followedCount = followedCount
        self.hasChangedOrigin = hasChangedOrigin
    }

    /// Records a followed hop: its URL joins those requested, the count goes up, and an origin change sticks.
    public mutating func record(_ follow: RedirectFollow) {
        self.requested.append((try? RequestURL(follow.url))?.withoutFragment ?? follow.url.absoluteString)
        self.followedCount += 1
        if follow.changesOrigin {
            self.hasChangedOrigin = true
        }
    }
}
