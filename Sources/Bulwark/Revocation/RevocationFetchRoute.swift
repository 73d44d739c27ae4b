/// The proxy of the connection whose chain is being evaluated, for the revocation fetches that evaluation makes: a
/// request the client makes on its own goes the way of the request that caused it. ``TrustVerification`` sets it
/// around each evaluation (nil for a direct connection); ``HTTPRevocationFetcher`` reads it.
enum RevocationFetchRoute {
    /// The route of the connection being verified; nil when it is direct (or when no connection is being verified).
    @TaskLocal static var proxy: ProxyRoute?
}
