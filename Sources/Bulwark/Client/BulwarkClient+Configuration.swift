import BulwarkPolicy
import NIOCore

extension BulwarkClient {
    /// Everything a client does is decided here. Start from ``init(trust:)``, which is secure, then change fields.
    public struct Configuration: Sendable {
        /// Which chains are trusted for which hosts. Hosts without an evaluator are refused by default.
        public var trust: ServerTrustManager
        /// The TLS versions, cipher suites and ALPN protocols offered.
        public var tls: TLSOptions = TLSOptions()
        /// The connect, handshake and idle-read time limits.
        public var timeouts: Timeouts = Timeouts()
        /// Connection reuse: connections per origin, idle timeout.
        public var pool: PoolOptions = PoolOptions()
        /// Response decompression (gzip, deflate). On by default with a ratio limit against decompression bombs;
        /// `nil` turns it off (no `accept-encoding` is added).
        public var decompression: Decompression? = Decompression()
        /// Allow plain `http://` requests.
        ///
        /// > Warning: Plain HTTP is readable and changeable by anyone on the path. Off by default.
        public var allowsPlainHTTP: Bool = false
        /// Receives every security event: trust decisions, refused redirects, stripped credentials, insecure
        /// options. Compose several with ``/BulwarkPolicy/CompositeEventMonitor``.
        public var eventMonitor: any EventMonitor = CompositeEventMonitor([])
        /// Which redirects are followed, and how requests are rewritten on the way. By default: the starting host
        /// only, https only, at most five hops, no port changes, credentials stripped after any origin change, a
        /// `redirect_refused` error on refusal. Add hosts with ``/BulwarkPolicy/RedirectPolicy/allowedHosts``.
        public var redirects: RedirectPolicy = RedirectPolicy()
        /// The hosts requests may go to. A request (or a redirect hop) to any other host fails with
        /// ``BulwarkError/Code/hostNotAllowed`` before DNS or any connection, and emits a
        /// `request_refused_by_allowlist` event. Nil allows every host the trust manager accepts.
        public var allowlist: HostAllowlist? = nil
        /// The session's credentials (bearer tokens, basic auth, API-key headers, cookies), each attached at send
        /// time to requests and redirect hops inside its scope only, refreshed by its provider when missing, expiring
        /// or rejected with a 401 (the request is then retried once). Nil attaches nothing. See
        /// ``/BulwarkPolicy/CredentialStore``.
        public var credentials: CredentialStore? = nil
        /// An RFC 6265 cookie jar: `Set-Cookie` fields of every response (redirects included) are stored, and
        /// matching cookies sent with each request and hop. Nil (the default, as in OkHttp) keeps no cookies.
        public var cookies: CookieJar? = nil
        /// Send pin-validation failures (enforced and report-only) to collectors; nil sends nothing.
        public var pinFailureReporting: PinFailureReporting? = nil
        /// Whether a request that fails because the server closed a reused keep-alive connection under it is sent
        /// once more on a new connection (servers close idle connections at any moment, and the request may have
        /// crossed the close on the wire). Only requests that are safe to send twice are: idempotent methods (GET,
        /// HEAD, OPTIONS, TRACE, PUT, DELETE; RFC 9110 section 9.2.2) with a body that can be sent again, and
        /// requests of which no byte was written. A POST or PATCH that reached the server is never resent, since
        /// the server may have acted on it; its caller gets ``BulwarkError/Code/remoteConnectionClosed``. A request
        /// an HTTP/2 server says it did not process (refused with `REFUSED_STREAM`, or a stream above the last one
        /// its GOAWAY names, before any response) is sent again whatever its method, up to four times (RFC 9113
        /// section 8.7); a connection that sent GOAWAY, or refused a second stream, takes no new request. Nothing is
        /// sent again once the task is cancelled, or after a ``BulwarkClient/signOut()`` that ended the request's
        /// credentials. On by default, as in AsyncHTTPClient and OkHttp; `false` never resends.
        public var retriesRequestsOnStaleConnections: Bool = true
        /// Connect to another address for a host and port, like curl's `--resolve HOST:PORT:ADDR`: the TLS name
        /// (SNI) and the trust evaluation still use the URL's host. An override applies to a proxy's host and port
        /// too, as curl's does (the proxy's TLS name and its trust still use its own name).
        ///
        /// ```swift
        /// configuration.resolveOverrides[.init(host: "api.example.com", port: 443)] = "127.0.0.1"
        /// ```
        ///
        /// An override whose host or port is invalid, or whose address is not an IP address, makes every request
        /// fail with ``BulwarkError/Code/invalidConfiguration`` naming it.
        public var resolveOverrides: [Endpoint: ResolvedAddress] = [:]
        /// Reuse a *trusted* decision for a new connection to the same host presenting the very same chain, for at
        /// most five minutes and never past the chain's expiry; refusals are never reused, and every handshake still
        /// emits its trust event (detail `cached`). See ``/BulwarkPolicy/TrustDecisionCache`` for why this is safe.
        /// `nil` evaluates every handshake in full.
        public var trustDecisionCache: TrustDecisionCache.Options? = TrustDecisionCache.Options()
        /// The client certificates (mutual TLS) offered to servers that ask for one, by host pattern. A certificate
        /// is sent only to hosts whose pattern selects it; to any other server that asks, none is sent. Empty by
        /// default. See ``ClientIdentities``.
        public var clientIdentities: ClientIdentities = ClientIdentities()
        /// Spans per request and per redirect hop through swift-distributed-tracing. By default the tracer
        /// bootstrapped in `InstrumentationSystem` when the configuration is made, none if it was not bootstrapped.
        /// See ``TracingOptions``.
        public var tracing: TracingOptions = TracingOptions()
        /// The proxy requests go through: ``Proxy/none`` (the default), an HTTP or SOCKS5 proxy, or the environment's
        /// (curl's rules). The origin's trust policy applies unchanged inside the tunnel. See ``Proxy``.
        public var proxy: Proxy = .none
        /// Proxies chosen per host pattern, in place of ``proxy``. Empty by default. See ``ProxyOverrides``.
        public var proxyOverrides: ProxyOverrides = ProxyOverrides()

        /// The secure defaults: TLS 1.2 or newer, HTTP/2 preferred, decompression with a 100× ratio limit.
        public init(trust: ServerTrustManager) {
            self.trust = trust
        }
    }

    /// TLS settings. Certificate verification is always Bulwark's trust manager; it cannot be turned off here.
    public struct TLSOptions: Sendable, Hashable {
        /// The lowest TLS version offered.
        public enum Version: Sendable, Hashable {
            /// TLS 1.2.
            case tls12
            /// TLS 1.3.
            case tls13
        }

        /// TLS 1.2 by default; `.tls13` refuses servers that cannot speak TLS 1.3.
        public var minimumVersion: Version = .tls12
        /// The TLS 1.2 cipher suites offered, most preferred first (TLS 1.3 suites are fixed); `nil` for BoringSSL's
        /// defaults. An empty list makes every request fail with ``BulwarkError/Code/invalidConfiguration``.
        ///
        /// > Warning: Listing a CBC suite (``CipherSuite/ecdheECDSAWithAES128CBCSHA`` and its kind) lets a server
        /// > choose a MAC-then-encrypt construction with a history of padding-oracle attacks.
        public var cipherSuites: [CipherSuite]? = nil
        /// ALPN protocols, most preferred first.
        public var applicationProtocols: [String] = ["h2", "http/1.1"]

        /// The defaults.
        public init() {}
    }

    /// Time limits. Each failure is a ``BulwarkError`` naming the limit that was hit.
    public struct Timeouts: Sendable, Hashable {
        /// TCP connection establishment.
        public var connect: TimeAmount = .seconds(10)
        /// The TLS handshake, trust evaluation included.
        public var tlsHandshake: TimeAmount = .seconds(10)
        /// The longest silence from the server while a response is awaited or streamed.
        public var idleRead: TimeAmount = .seconds(30)

        /// The defaults.
        public init() {}
    }

    /// Connection reuse.
    public struct PoolOptions: Sendable, Hashable {
        /// HTTP/1.1 connections open at once to one origin; further requests wait.
        public var maximumConnectionsPerHost: Int = 8
        /// How long an unused connection stays open.
        public var idleTimeout: TimeAmount = .seconds(60)

        /// The defaults.
        public init() {}
    }

    /// Response decompression limits. A response that breaks either fails with
    /// ``BulwarkError/Code/decompressionLimitExceeded`` and its connection is closed.
    public struct Decompression: Sendable, Hashable {
        /// The largest accepted ratio of decompressed to compressed bytes.
        public var maximumRatio: Int = 100
        /// The most bytes one response may inflate to, whatever its ratio: 64 MiB by default. A ratio alone bounds
        /// nothing when the compressed body is large, and a high ratio limit (for data that compresses well) would
        /// otherwise let a small body inflate without end. Raise it for large compressed downloads.
        public var maximumSize: Int = 64 << 20

        /// Limits of `maximumRatio` (decompressed to compressed bytes) and `maximumSize` (decompressed bytes).
        public init(maximumRatio: Int = 100, maximumSize: Int = 64 << 20) {
            self.maximumRatio = maximumRatio
            self.maximumSize = maximumSize
        }
    }
}

extension BulwarkClient.Configuration {
    /// The first option the client cannot use, as the error every request of the client fails with; nil when all
    /// are usable. Only what can be checked without the network: a TLS library refusal is found when the TLS context
    /// is made.
    var validationError: BulwarkError? {
        if let suites = self.tls.cipherSuites, suites.isEmpty {
            return .invalidConfiguration(
                "tls.cipherSuites: the cipher suite list is empty; leave it nil for BoringSSL's defaults"
            )
        }
        if self.pool.maximumConnectionsPerHost < 1 {
            return .invalidConfiguration(
                "pool.maximumConnectionsPerHost is \(self.pool.maximumConnectionsPerHost); it must be at least 1"
            )
        }
        if let why = self.proxy.validationError ?? self.proxyOverrides.validationError {
            return .invalidConfiguration("proxy: " + why)
        }
        return self.resolveOverrides.validationError
    }
}

extension BulwarkError {
    /// The error of a client whose configuration holds an option it cannot use: `detail` names the option.
    static func invalidConfiguration(_ detail: String, underlying: String? = nil) -> BulwarkError {
        BulwarkError(
            .invalidConfiguration,
            host: nil,
            detail: "invalid configuration: " + detail,
            underlying: underlying
        )
    }
}
