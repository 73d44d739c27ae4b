import Foundation

/// One redirect of a request's history: the URL that answered with a redirect, its status, and the decision.
public struct RedirectRecord: Hashable, Sendable, CustomStringConvertible {
    /// The URL of the request that got the redirect response.
    public let url: URL
    /// The redirect status.
    public let status: Int
    /// What the policy decided.
    public let decision: RedirectDecision

    /// A history entry.
    public init(url: URL, status: Int, decision: RedirectDecision) {
        self.url = url
        self.status = status
        self.decision = decision
    }

    /// `302 https://a.example/old -> https://a.example/new: follow`, URLs without queries; for a refusal, the reason
    /// and its sentence.
    public var description: String {
        let from = URLRedaction.redacted(self.url)
        switch self.decision {
        case .follow(let follow):
            let to = URLRedaction.redacted(follow.url)
            var text = "\(self.status) \(from) -> \(follow.method) \(to): follow"
            if !follow.strippedHeaders.isEmpty {
                text += " (stripped \(follow.strippedHeaders.joined(separator: ", ")))"
            }
            return text
        case .refuse(let refusal):
            return "\(self.status) \(from) -> \(refusal.to ?? "(no Location)"): refused "
                + "(\(refusal.shortDescription)): \(refusal.detail)"
        }
    }
}
