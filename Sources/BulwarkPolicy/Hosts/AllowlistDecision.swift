/// Whether a request may be sent, according to a ``HostAllowlist``.
public enum AllowlistDecision: Hashable, Sendable, CustomStringConvertible {
    /// The request may be sent; the entry is the one that allowed it.
    case allowed(HostAllowlist.Entry)
    /// The request must not be sent, nor its host looked up.
    case refused(AllowlistRefusal)

    /// Whether the request may be sent.
    public var isAllowed: Bool {
        if case .allowed = self { return true }
        return false
    }

    /// The refusal, if the request was refused.
    public var refusal: AllowlistRefusal? {
        if case .refused(let refusal) = self { return refusal }
        return nil
    }

    /// `allowed by …` or the refusal's description.
    public var description: String {
        switch self {
        case .allowed(let entry): return "allowed by \(entry)"
        case .refused(let refusal): return refusal.description
        }
    }
}
