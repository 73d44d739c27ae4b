/// What the ``RedirectPolicy`` decided for one redirect response.
public enum RedirectDecision: Hashable, Sendable {
    /// Send ``RedirectFollow`` next.
    case follow(RedirectFollow)
    /// Stop here.
    case refuse(RedirectRefusal)

    /// The next request, when the hop is followed.
    public var follow: RedirectFollow? {
        if case .follow(let follow) = self { return follow }
        return nil
    }

    /// The refusal, when the hop is refused.
    public var refusal: RedirectRefusal? {
        if case .refuse(let refusal) = self { return refusal }
        return nil
    }

    /// `follow`, or `refuse:REASON`: bounded and value-free.
    public var shortDescription: String {
        switch self {
        case .follow: return "follow"
        case .refuse(let refusal): return "refuse:\(refusal.shortDescription)"
        }
    }
}
