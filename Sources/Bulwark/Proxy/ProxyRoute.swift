import BulwarkPolicy

/// The proxy one connection goes through: where it listens, its protocol, the credentials for it and, for an HTTPS
/// proxy, the trust its certificate is evaluated with. Part of the pool's key, so that connections through different
/// proxies (or with different credentials, or none, or another proxy trust) are never shared.
struct ProxyRoute: Hashable, Sendable, CustomStringConvertible {
    var endpoint: ProxyEndpoint
    var credentials: ProxyCredentials?
    /// The proxy's own trust, for an HTTPS proxy; nil for the others.
    var trust: ProxyTrust?

    init(endpoint: ProxyEndpoint, credentials: ProxyCredentials?, trust: ProxyTrust? = nil) {
        self.endpoint = endpoint
        self.credentials = credentials
        self.trust = endpoint.kind == .https ? (trust ?? .systemRoots) : nil
    }

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
        case environment(EnvironmentRoutes)
        case route(ProxyRoute, bypass: NoProxyList?)
        case invalid(String)

        init(_ proxy: BulwarkClient.Proxy) {
            switch proxy.storage {
            case .direct: self = .direct
            case .environment(let environment, let trust):
                self = .environment(EnvironmentRoutes(environment ?? .process(), trust: trust))
            case .server(let endpoint, let credentials, let bypass, let trust):
                self = .route(ProxyRoute(endpoint: endpoint, credentials: credentials, trust: trust), bypass: bypass)
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
    ///
    /// Not inlined: inlined into the request's async function, its copy of the router would take a slot in the async
    /// frame that stays allocated while the request is in flight.
    @inline(never)
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
        case .environment(let routes):
            return try routes.route(for: target)
        }
    }
}

/// The environment's proxy for each scheme, read once when the client is made. A proxy URL's credentials are compared
/// by identity in the pool's key, so reading the variable again for each request would give every request through a
/// proxy with credentials connections of its own, never reused.
private struct EnvironmentRoutes: Sendable {
    private let environment: ProxyEnvironment
    private let trust: ProxyTrust?
    private let byScheme: [String: Result<ProxyRoute?, BulwarkError>]

    init(_ environment: ProxyEnvironment, trust: ProxyTrust?) {
        self.environment = environment
        self.trust = trust
        var byScheme: [String: Result<ProxyRoute?, BulwarkError>] = [:]
        for scheme in ["http", "https"] {
            byScheme[scheme] = Self.read(environment, scheme: scheme, trust: trust)
        }
        self.byScheme = byScheme
    }

    /// The proxy for a request to `target`, or nil when no variable names one or `no_proxy` matches the host.
    func route(for target: RequestTarget) throws(BulwarkError) -> ProxyRoute? {
        if let noProxy = self.environment.noProxy, noProxy.matches(target.host) { return nil }
        let result =
            self.byScheme[target.scheme] ?? Self.read(self.environment, scheme: target.scheme, trust: self.trust)
        return try result.get()
    }

    /// The variable for `scheme`, read as a route; `no_proxy` is applied per host by ``route(for:)``.
    private static func read(
        _ environment: ProxyEnvironment,
        scheme: String,
        trust: ProxyTrust?
    ) -> Result<ProxyRoute?, BulwarkError> {
        let everyHost = ProxyEnvironment(environment.variables, noProxy: NoProxyList(""))
        do {
            guard let selection = try everyHost.proxy(forScheme: scheme, host: "") else { return .success(nil) }
            // A proxy trust was asked for: a proxy reached in cleartext would drop it without a word.
            if trust != nil, selection.endpoint.kind != .https {
                return .failure(
                    BulwarkError.invalidConfiguration(
                        "proxy environment: a proxy trust evaluator is for an https:// proxy; \(selection.variable) "
                            + "names \(selection.endpoint), which is not reached over TLS"
                    )
                )
            }
            return .success(ProxyRoute(endpoint: selection.endpoint, credentials: selection.credentials, trust: trust))
        } catch {
            return .failure(BulwarkError.invalidConfiguration("proxy environment: " + error.description))
        }
    }
}

/// The trust an HTTPS proxy's own certificate is evaluated with: an evaluator, in a trust manager of its own (so that
/// no decision, cached or not, is ever shared with an origin's). Compared by identity: part of the pool's key.
final class ProxyTrust: Hashable, Sendable {
    /// The evaluator, for the proxy's host.
    let evaluator: any ServerTrustEvaluating
    /// A manager that gives every host ``evaluator``: the proxy's host is the only one it is asked about.
    let manager: ServerTrustManager

    init(_ evaluator: any ServerTrustEvaluating) {
        self.evaluator = evaluator
        self.manager = ServerTrustManager(allHostsMustBeEvaluated: false, patterns: [], defaultEvaluator: evaluator)
    }

    /// The default: chain and host name against the system roots.
    static let systemRoots = ProxyTrust(DefaultTrustEvaluator())

    static func == (lhs: ProxyTrust, rhs: ProxyTrust) -> Bool { lhs === rhs }

    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
