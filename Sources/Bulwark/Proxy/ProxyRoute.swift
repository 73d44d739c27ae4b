import BulwarkPolicy

/// The proxy one connection goes through: where it listens, its protocol and the credentials for it. Part of the
/// pool's key, so that connections through different proxies (or with different credentials, or none) are never
/// shared.
struct ProxyRoute: Hashable, Sendable, CustomStringConvertible {
    var endpoint: ProxyEndpoint
    var credentials: ProxyCredentials?

    /// `host:port` of the proxy, as errors and events name it.
    var authority: String { self.endpoint.authority }

    /// The proxy URL, without credentials.
    var description: String { self.endpoint.description }
}

/// Chooses the proxy of each request and redirect hop, from ``BulwarkClient/Configuration/proxyOverrides`` and
/// ``BulwarkClient/Configuration/proxy``; the environment is read once, when the client is made.
struct ProxyRouter: Sendable {
    private enum Choice: Sendable {
        case direct
        case environment(ProxyEnvironment)
        case route(ProxyRoute, bypass: NoProxyList?)
        case invalid(String)

        init(_ proxy: BulwarkClient.Proxy) {
            switch proxy.storage {
            case .direct: self = .direct
            case .environment(let environment): self = .environment(environment ?? .process())
            case .server(let endpoint, let credentials, let bypass):
                self = .route(ProxyRoute(endpoint: endpoint, credentials: credentials), bypass: bypass)
            case .invalid(let why): self = .invalid(why)
            }
        }
    }

    private let base: Choice
    private let overrides: HostMatcher<Choice>

    init(configuration: BulwarkClient.Configuration) {
        self.base = Choice(configuration.proxy)
        var overrides = HostMatcher<Choice>()
        for (pattern, proxy) in configuration.proxyOverrides.entries {
            overrides.insert(Choice(proxy), for: pattern)
        }
        self.overrides = overrides
    }

    /// Whether no request can go through a proxy.
    var isDirect: Bool {
        if case .direct = self.base, self.overrides.isEmpty { return true }
        return false
    }

    /// The proxy for a request to `target`; nil to go direct.
    ///
    /// - Throws: ``BulwarkError/Code/invalidConfiguration`` when the chosen proxy (or the environment variable that
    ///   names it) cannot be read.
    func route(for target: RequestTarget) throws(BulwarkError) -> ProxyRoute? {
        if self.isDirect { return nil }
        let choice =
            self.overrides.isEmpty ? self.base : (self.overrides.match(canonicalHost: target.host)?.value ?? self.base)
        switch choice {
        case .direct:
            return nil
        case .route(let route, let bypass):
            if let bypass, bypass.matches(target.host) { return nil }
            return route
        case .invalid(let why):
            throw BulwarkError.invalidConfiguration("proxy: " + why)
        case .environment(let environment):
            do {
                guard let selection = try environment.proxy(forScheme: target.scheme, host: target.host) else {
                    return nil
                }
                return ProxyRoute(endpoint: selection.endpoint, credentials: selection.credentials)
            } catch {
                throw BulwarkError.invalidConfiguration("proxy environment: " + error.description)
            }
        }
    }
}
