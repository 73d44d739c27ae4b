@_spi(Insecure) import BulwarkPolicy

/// The parts of a client's policy that a ``PolicyUpdater`` can replace while the client runs, as one value: a request
/// reads it once, when it starts, and keeps it for its whole life, redirects included, so that it sees one policy or
/// the other, never a mix.
///
/// What applies live: the trust manager (host patterns, evaluators, pins, roots, revocation), the host allowlist and
/// the redirect policy. What does not: the minimum TLS version (the TLS contexts are made when the client is made),
/// client certificates (see ``BulwarkClient/updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)``),
/// credential scopes (credentials are attached in code) and the proxy (its credentials are files on the machine, not
/// part of a bundle).
struct LivePolicy: Sendable {
    /// Counts the policies a client applied: 0 for the one it was made with. Part of every pool key, so that a
    /// connection made under one policy never serves a request that read another.
    var generation: Int
    /// Which chains are trusted for which hosts.
    var trust: ServerTrustManager
    /// The hosts requests may go to; nil for every host.
    var allowlist: HostAllowlist?
    /// Which redirects are followed.
    var redirects: RedirectPolicy
    /// The trusted decisions reused across handshakes under this policy only (a new policy starts with none, so that
    /// no decision of the old one is reused); nil when the configuration turns the cache off.
    var decisionCache: TrustDecisionCache?
    /// The version of the bundle the policy came from; nil for the client's built-in policy.
    var bundleVersion: UInt64?

    /// The policy `configuration` says: the client's built-in policy.
    init(builtIn configuration: BulwarkClient.Configuration, generation: Int) {
        self.generation = generation
        self.trust = configuration.trust
        self.allowlist = configuration.allowlist
        self.redirects = configuration.redirects
        self.decisionCache = configuration.trustDecisionCache.map { TrustDecisionCache(options: $0) }
        self.bundleVersion = nil
    }

    /// The members of `file` that a running client does not apply (see the type's description), as JSON pointers.
    static func notLive(in file: PolicyFile) -> [String] {
        var members: [String] = []
        if file.minimumTLSVersion != nil { members.append("/tls/minimumVersion") }
        if !file.clientCertificates.isEmpty { members.append("/clientCertificates") }
        if !file.credentialScopes.isEmpty { members.append("/credentialScopes") }
        if file.proxy != nil { members.append("/proxy") }
        return members
    }

    /// The policy `file` says, over the client's built-in `configuration`: the file's trust manager always; its
    /// allowlist and redirect policy when it has them, the built-in ones otherwise (a bundle cannot remove the
    /// allowlist the application was built with). The redirect policy keeps the built-in credential headers,
    /// refusal action and handler, which a file cannot say.
    init(
        file: PolicyFile,
        over configuration: BulwarkClient.Configuration,
        generation: Int,
        bundleVersion: UInt64
    ) throws(PolicyFileError) {
        self.init(builtIn: configuration, generation: generation)
        self.trust = try ServerTrustManager(policy: file)
        self.bundleVersion = bundleVersion
        if let allowlist = file.allowlist {
            self.allowlist = HostAllowlist(
                allowlist.map { .init($0.pattern, schemes: $0.schemes.map(Set.init), ports: $0.ports.map(Set.init)) }
            )
        }
        if let redirects = file.redirects {
            var policy = RedirectPolicy(allowedHosts: redirects.allowedHosts, maximumHops: redirects.maximumHops)
            policy.followsRedirects = redirects.follow
            policy.allowedPorts = Set(redirects.allowedPorts)
            policy.allowedSchemes = Set(redirects.allowedSchemes)
            policy.allowsHTTPSToHTTP = redirects.allowsHTTPSToHTTP
            policy.credentialHeaders = configuration.redirects.credentialHeaders
            policy.onRefusal = configuration.redirects.onRefusal
            policy.handler = configuration.redirects.handler
            self.redirects = policy
        }
    }
}
