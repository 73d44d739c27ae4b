import BulwarkPolicy
import Foundation

extension BulwarkClient {
    /// How a client reaches servers: directly, through an HTTP, HTTPS or SOCKS5 proxy, or as the environment's proxy
    /// variables say (curl's rules).
    ///
    /// A proxy never changes the origin's trust policy: the TLS handshake with the origin runs inside the tunnel, with
    /// the origin's host as the TLS server name and the origin's evaluator (pins included). The allowlist is checked
    /// before anything is sent to the proxy. Proxy credentials go to the proxy only: in the `CONNECT` request's
    /// `Proxy-Authorization` header (after the proxy asked for them with a 407, then on every new tunnel through that
    /// proxy), or in the SOCKS5 negotiation; never inside the tunnel, never to the origin.
    ///
    /// An HTTPS proxy (``https(_:credentials:trust:)``) is reached over TLS, its certificate evaluated for the proxy's
    /// host by the proxy's *own* evaluator; the origin's TLS then runs inside that TLS connection, evaluated by the
    /// origin's. The two never stand in for each other: a CA trusted for the proxy makes no origin certificate
    /// acceptable, and the reverse.
    ///
    /// Choose a proxy per host with ``BulwarkClient/Configuration/proxyOverrides``.
    public struct Proxy: Sendable, CustomStringConvertible {
        enum Storage: Sendable {
            case direct
            /// The environment's variables; nil for this process's environment when the client is made. `trust`
            /// evaluates the HTTPS proxies it names (nil: the system roots).
            case environment(ProxyEnvironment?, trust: ProxyTrust?)
            /// `trust` evaluates an HTTPS proxy's certificate (nil: the system roots); nil for other proxies.
            case server(ProxyEndpoint, ProxyCredentials?, bypass: NoProxyList?, trust: ProxyTrust?)
            /// A proxy URL that could not be read: every request fails with ``BulwarkError/Code/invalidConfiguration``.
            case invalid(String)
        }

        let storage: Storage

        /// No proxy: connections go straight to the origin (the default).
        public static let none = Proxy(storage: .direct)

        /// The proxy the environment names for each request, with curl's rules (`https_proxy`, `HTTPS_PROXY`,
        /// `http_proxy` in lower case only, `all_proxy`, `ALL_PROXY`, `no_proxy`, `NO_PROXY`; see
        /// ``/BulwarkPolicy/ProxyEnvironment``), read from this process's environment when the client is made.
        /// Credentials come from the proxy URL's user information. A variable that cannot be read fails the requests
        /// it applies to with ``BulwarkError/Code/invalidConfiguration`` naming the variable.
        ///
        /// An `https://` proxy the environment names (as curl 7.52 and later read `https_proxy=https://…`) is reached
        /// over TLS, its certificate evaluated against the system roots; give another evaluator with
        /// ``trustingProxy(with:)``.
        public static let environment = Proxy(storage: .environment(nil, trust: nil))

        /// The proxy `environment` names for each request, with curl's rules.
        public static func environment(_ environment: ProxyEnvironment) -> Proxy {
            Proxy(storage: .environment(environment, trust: nil))
        }

        /// An HTTP proxy at `url` (`http://host:port`; the port defaults to 1080, as in curl): `https` requests go
        /// through a `CONNECT` tunnel; plain `http` requests, when ``BulwarkClient/Configuration/allowsPlainHTTP``
        /// allows them, are sent to the proxy in absolute form (with `credentials` in `Proxy-Authorization`).
        ///
        /// The connection to the proxy is cleartext: the `CONNECT` request (the origin's host and port) and the proxy
        /// credentials are readable on the path to the proxy. Use ``https(_:credentials:trust:)`` for a proxy that
        /// speaks TLS.
        ///
        /// - Parameters:
        ///   - url: The proxy's URL, `http://host:port`.
        ///   - credentials: For `CONNECT`, sent only when the proxy asks for them (a 407 with a Basic challenge), then
        ///     on each new tunnel through this proxy. A plain-`http` request in absolute form carries them in every
        ///     request, before any 407 (the request may have a body that cannot be sent twice). When nil, the URL's
        ///     user information is used, if any.
        public static func http(_ url: URL, credentials: ProxyCredentials? = nil) -> Proxy {
            Self.parse(url.absoluteString, expecting: .http, credentials: credentials, trust: nil)
        }

        /// An HTTP proxy reached over TLS at `url` (`https://host:port`; the port defaults to 443, as in curl).
        ///
        /// The client opens TLS (1.2 or later, and at least ``BulwarkClient/TLSOptions/minimumVersion``) to the proxy,
        /// with the proxy's host as the TLS server name (none for an IP address), and `trust` evaluates the proxy's
        /// certificate for the proxy's host. Only then does the `CONNECT` request go out, inside that TLS connection
        /// (with `credentials` in `Proxy-Authorization`, as for ``http(_:credentials:)``), and the origin's TLS
        /// handshake runs inside the tunnel, evaluated by the origin's own evaluator from
        /// ``BulwarkClient/Configuration/trust``, pins and minimum version unchanged. Plain `http` requests, when
        /// ``BulwarkClient/Configuration/allowsPlainHTTP`` allows them, are sent to the proxy in absolute form inside
        /// the TLS connection.
        ///
        /// A proxy whose certificate `trust` refuses ends the request with ``BulwarkError/Code/proxyUntrusted``, naming
        /// the proxy and why, and a `proxy_untrusted` event; nothing is sent to the proxy, and the origin is never
        /// contacted.
        ///
        /// ```swift
        /// let proxyCA = try CertificateLoader.certificates(atPath: "/etc/corp/proxy-ca.pem")
        /// configuration.proxy = .https(
        ///     URL(string: "https://proxy.corp.example:3129")!,
        ///     trust: .default(roots: .custom(proxyCA))
        /// )
        /// ```
        ///
        /// - Parameters:
        ///   - url: The proxy's URL, `https://host:port`.
        ///   - credentials: Sent only when the proxy asks for them (a 407 with a Basic challenge), then on each new
        ///     tunnel through this proxy; only inside the TLS connection to the proxy. When nil, the URL's user
        ///     information is used, if any.
        ///   - trust: The proxy's own evaluator, asked about the proxy's host only. The default checks the chain and the
        ///     host name against the system roots. It never evaluates an origin, and the origin's evaluators never
        ///     evaluate the proxy.
        ///
        /// > Warning: An evaluator that does not check the proxy's host name, or does no chain validation, lets anyone
        /// > on the path to the proxy pose as the proxy and read the proxy credentials and every plain-HTTP request
        /// > sent through it. The origin's TLS inside the tunnel is unaffected.
        public static func https(
            _ url: URL,
            credentials: ProxyCredentials? = nil,
            trust: any ServerTrustEvaluating = DefaultTrustEvaluator()
        ) -> Proxy {
            Self.parse(url.absoluteString, expecting: .https, credentials: credentials, trust: ProxyTrust(trust))
        }

        /// A SOCKS5 proxy at `url` (`socks5://host:port` or `socks5h://host:port`; the port defaults to 1080). The
        /// origin's host *name* is sent to the proxy, which resolves it: the client makes no DNS lookup for the
        /// origin.
        ///
        /// - Parameters:
        ///   - url: The proxy's URL, `socks5://host:port` or `socks5h://host:port`.
        ///   - credentials: Offered with RFC 1929 username/password authentication; the proxy may still choose no
        ///     authentication. When nil, the URL's user information is used, if any.
        public static func socks5(_ url: URL, credentials: ProxyCredentials? = nil) -> Proxy {
            Self.parse(url.absoluteString, expecting: .socks5, credentials: credentials, trust: nil)
        }

        /// The proxy a URL text names, as curl's `--proxy` reads it: `http://`, `https://`, `socks5://`, `socks5h://`
        /// or no scheme (an HTTP proxy). An `https://` proxy's certificate is evaluated against the system roots; give
        /// another evaluator with ``trustingProxy(with:)``.
        public static func url(_ text: String, credentials: ProxyCredentials? = nil) -> Proxy {
            Self.parse(text, expecting: nil, credentials: credentials, trust: nil)
        }

        private static func parse(
            _ text: String,
            expecting kind: ProxyEndpoint.Kind?,
            credentials: ProxyCredentials?,
            trust: ProxyTrust?
        )
            -> Proxy
        {
            do {
                let (endpoint, fromURL) = try ProxyEndpoint.parse(text)
                if let kind, endpoint.kind != kind {
                    return Proxy(storage: .invalid("the proxy URL's scheme is not \(kind.rawValue)"))
                }
                let trust = endpoint.kind == .https ? (trust ?? ProxyTrust.systemRoots) : nil
                return Proxy(storage: .server(endpoint, credentials ?? fromURL, bypass: nil, trust: trust))
            } catch {
                return Proxy(storage: .invalid(error.description))
            }
        }

        /// This proxy, with the certificate of an HTTPS proxy evaluated by `evaluator` (for the proxy's host) instead
        /// of against the system roots: what `bulwark fetch --proxy-cacert` and a policy file's `caFile` set. For
        /// ``environment``, it applies to the `https://` proxies the environment names; with no proxy it changes
        /// nothing.
        ///
        /// `evaluator` is the proxy's only: the origin's certificate is still evaluated by the origin's evaluator, so
        /// trusting the proxy's CA here never makes an origin certificate from that CA acceptable.
        ///
        /// An `http://` or SOCKS5 proxy has no certificate to evaluate: every request through it (given here or named
        /// by the environment) then fails with ``BulwarkError/Code/invalidConfiguration``, so that a proxy believed to
        /// be verified never goes unverified in cleartext.
        ///
        /// > Warning: An evaluator that does not check the proxy's host name, or does no chain validation, lets anyone
        /// > on the path to the proxy pose as the proxy and read the proxy credentials.
        public func trustingProxy(with evaluator: any ServerTrustEvaluating) -> Proxy {
            switch self.storage {
            case .direct, .invalid: return self
            case .environment(let environment, _):
                return Proxy(storage: .environment(environment, trust: ProxyTrust(evaluator)))
            case .server(let endpoint, let credentials, let bypass, _):
                guard endpoint.kind == .https else {
                    return Proxy(
                        storage: .invalid(
                            "a proxy trust evaluator is for an https:// proxy; \(endpoint) is not reached over TLS"
                        )
                    )
                }
                return Proxy(storage: .server(endpoint, credentials, bypass: bypass, trust: ProxyTrust(evaluator)))
            }
        }

        /// `none`, `environment`, or the proxy URL without credentials (`http://proxy.example:3128`,
        /// `https://proxy.example:3129`, `socks5://127.0.0.1:1080`), with `(credentials)` when it has some.
        public var description: String {
            switch self.storage {
            case .direct: return "none"
            case .environment: return "environment"
            case .server(let endpoint, let credentials, let bypass, _):
                return endpoint.description + (credentials == nil ? "" : " (credentials)")
                    + (bypass.map { " bypassing \"\($0)\"" } ?? "")
            case .invalid(let why): return "invalid (\(why))"
            }
        }

        /// This proxy, except for the hosts `list` matches (curl's `--noproxy`), which go direct. For the
        /// environment's proxies, `list` replaces the environment's `no_proxy` and `NO_PROXY`; with no proxy it changes
        /// nothing.
        public func bypassing(_ list: NoProxyList) -> Proxy {
            switch self.storage {
            case .direct, .invalid: return self
            case .environment(let environment, let trust):
                let variables = environment?.variables ?? ProcessInfo.processInfo.environment
                return Proxy(storage: .environment(ProxyEnvironment(variables, noProxy: list), trust: trust))
            case .server(let endpoint, let credentials, _, let trust):
                return Proxy(storage: .server(endpoint, credentials, bypass: list, trust: trust))
            }
        }

        /// The error every request fails with when the proxy URL could not be read.
        var validationError: String? {
            if case .invalid(let why) = self.storage { return why }
            return nil
        }
    }

    /// Proxies chosen per host pattern, overriding ``BulwarkClient/Configuration/proxy``: the most specific pattern
    /// that matches a request's host decides (as for ``/BulwarkPolicy/ServerTrustManager``), and ``Proxy/none``
    /// sends that host's requests direct.
    ///
    /// ```swift
    /// configuration.proxy = .http(URL(string: "http://proxy.corp.example:3128")!)
    /// configuration.proxyOverrides = try .init(["**.internal.example": .none])
    /// ```
    ///
    /// Each redirect hop chooses again, for its own host.
    public struct ProxyOverrides: Sendable, CustomStringConvertible {
        var matcher = HostMatcher<Proxy>()
        /// The same choices by pattern, for descriptions and validation.
        private var choices: [HostPattern: Proxy] = [:]

        /// No override: every host uses ``BulwarkClient/Configuration/proxy``.
        public init() {}

        /// Proxies by host pattern text (`example.com`, `*.example.com`, `**.example.com`).
        ///
        /// - Throws: ``/BulwarkPolicy/HostPatternError`` for a pattern that is not valid.
        public init(_ proxies: [String: Proxy]) throws(HostPatternError) {
            for (text, proxy) in proxies.sorted(by: { $0.key < $1.key }) {
                self.set(proxy, for: try HostPattern(text))
            }
        }

        /// Chooses `proxy` for the hosts `pattern` matches, replacing what the same pattern chose before.
        public mutating func set(_ proxy: Proxy, for pattern: HostPattern) {
            self.matcher.insert(proxy, for: pattern)
            self.choices[pattern] = proxy
        }

        /// The proxy chosen for `host` and the pattern that chose it; nil when no pattern matches.
        public func proxy(forHost host: String) -> (pattern: HostPattern, proxy: Proxy)? {
            guard !self.matcher.isEmpty else { return nil }
            return self.matcher.match(host).map { (pattern: $0.pattern, proxy: $0.value) }
        }

        /// The patterns and their proxies, in the order the patterns were first set.
        var entries: [(HostPattern, Proxy)] {
            self.matcher.patterns.compactMap { pattern in self.choices[pattern].map { (pattern, $0) } }
        }

        /// Whether no override is set.
        public var isEmpty: Bool { self.matcher.isEmpty }

        /// The patterns and their proxies; never a credential.
        public var description: String {
            let entries = self.matcher.patterns.compactMap { pattern in
                self.choices[pattern].map { "\(pattern): \($0)" }
            }
            return "ProxyOverrides(" + entries.joined(separator: ", ") + ")"
        }

        /// The first override whose proxy URL could not be read, in words.
        var validationError: String? {
            for pattern in self.matcher.patterns {
                if let why = self.choices[pattern]?.validationError { return "proxyOverrides[\(pattern)]: \(why)" }
            }
            return nil
        }
    }
}
