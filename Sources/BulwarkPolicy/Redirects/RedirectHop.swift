/// Everything the policy decides one redirect from: the request that got it, the response's status and `Location`
/// values, and the chain so far.
public struct RedirectHop: Sendable {
    /// The request that got the redirect response.
    public var request: RedirectRequest
    /// The response status.
    public var status: Int
    /// Every `Location` value of the response, in order; only the first is used.
    public var locations: [String]
    /// The chain so far: URLs requested, hops followed, whether the origin changed.
    public var chain: RedirectChain

    /// A hop to decide.
    public init(request: RedirectRequest, status: Int, locations: [String], chain: RedirectChain) {
        self.request = request
        self.status = status
        self.locations = locations
        self.chain = chain
    }

    /// The number of this hop in the chain: 1 for the first redirect.
    public var number: Int { self.chain.followedCount + 1 }
}
