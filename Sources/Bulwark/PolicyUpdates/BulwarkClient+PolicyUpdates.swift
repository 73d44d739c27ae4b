import BulwarkPolicy

extension BulwarkClient {
    /// The version of the signed policy bundle in force (applied by a ``PolicyUpdater``), or nil while the client's
    /// built-in policy applies.
    ///
    /// ``configuration`` stays the configuration the client was made with, its trust manager, allowlist and redirect
    /// policy being the built-in ones, which apply again when a bundle expires.
    public var policyBundleVersion: UInt64? { self.policies.current.bundleVersion }

    /// Applies `policy` while the client runs, as ``updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)``
    /// applies an identity:
    ///
    /// - every request that starts after the call runs under the new policy; a request already running keeps the one
    ///   it started with, for all its hops (a hop that needs a new connection gets a one-off one made under it);
    /// - pooled connections made under older policies are drained: idle ones close now, busy HTTP/1.1 ones when
    ///   their response ends, HTTP/2 ones when their last stream ends. None is handed to a request again.
    ///
    /// Returns the policy installed (with its generation) and the number of connections drained.
    @discardableResult
    func replacePolicy(with policy: LivePolicy) -> (policy: LivePolicy, drained: Int) {
        // Under the identity store's lock, so that an identity change cannot retire keys with a stale view of the
        // identities in between (the pool keeps retiring older generations whatever later calls say).
        let (_, result) = self.identities.update(
            { _ in },
            then: { identities in
                self.policies.replace(with: policy) { installed in
                    self.pool.retire(policyGenerationsBelow: installed.generation) { key in
                        key.scheme == "https" && identities.identity(forHost: key.host)?.identity != key.identity
                    }
                }
            }
        )
        return (result.0, result.1)
    }
}
