import BulwarkPolicy

extension RequestExecutor {
    /// This executor running requests under `policy`: its trust manager judges the handshakes of the connections the
    /// request makes, its allowlist admits each hop, its redirect policy decides them, and the request's pool keys
    /// carry its generation.
    func under(_ policy: LivePolicy) -> RequestExecutor {
        var configuration = self.configuration
        configuration.trust = policy.trust
        configuration.allowlist = policy.allowlist
        configuration.redirects = policy.redirects
        var connector = self.connector
        connector.settings.trust = policy.trust
        connector.decisionCache = policy.decisionCache
        return RequestExecutor(
            configuration: configuration,
            connector: connector,
            pool: self.pool,
            attacher: self.attacher,
            identities: self.identities,
            inFlight: self.inFlight,
            policies: self.policies,
            policy: policy,
            proxies: self.proxies
        )
    }

    /// Whether a request whose key the pool retired keeps going under the policy it started with: the key was retired
    /// because a newer policy was applied (its client identity is still the one selected). Such a request gets a
    /// one-off connection made under its own policy, which closes after its exchange.
    func keepsReplacedPolicy(_ key: ConnectionPool.Key) -> Bool {
        guard let policies = self.policies, key.policyGeneration < policies.current.generation else { return false }
        return self.identities.identity(scheme: key.scheme, host: key.host) == key.identity
    }
}
