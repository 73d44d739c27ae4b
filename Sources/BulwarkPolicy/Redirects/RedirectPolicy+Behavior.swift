extension RedirectPolicy {
    /// What a per-hop ``Handler`` decides for a hop the rules would follow (Alamofire's `Redirector.Behavior`).
    public enum Behavior: Sendable {
        /// Follow as proposed.
        case follow
        /// Do not follow; the detail becomes ``RedirectRefusalReason/refusedByHandler(detail:)``.
        case refuse(String)
        /// Follow this request instead. Its URL passes the scheme, host, port and loop rules again, and credentials
        /// are stripped again after an origin change: a handler cannot bring them back.
        case modify(RedirectFollow)
    }

    /// A per-hop decision: the hop, and the request the rules would send next.
    public typealias Handler = @Sendable (RedirectHop, RedirectFollow) -> Behavior

    /// What the client does when a hop is refused.
    public enum RefusalAction: Hashable, Sendable {
        /// Throw `BulwarkError` with code `redirect_refused`, carrying the ``RedirectRefusal`` and the history.
        case `throw`
        /// Return the redirect response itself, with the refusal as the last entry of its history.
        case returnRedirectResponse
    }
}
