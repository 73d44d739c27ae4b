import BulwarkPolicy

extension TLSStream {
    /// What a ``TLSStream`` needs and nothing of HTTP: the trust policy, TLS options, timeouts, the allowlist, where
    /// decisions and pin failures go, the resolve overrides and the proxy.
    ///
    /// Start from the secure defaults with ``init(trust:)``, then change fields; or take the matching fields of a
    /// client's configuration with ``init(_:)``, so a stream follows the same policy as the client.
    public struct Configuration: Sendable {
        /// Which chains are trusted for which hosts.
        public var trust: ServerTrustManager
        /// TLS versions and cipher suites (the ALPN protocols are the `applicationProtocols` of
        /// ``TLSStream/connect(host:port:configuration:applicationProtocols:eventLoopGroup:)-(_,_,TLSStream.Configuration,_,_)``).
        public var tls: BulwarkClient.TLSOptions = BulwarkClient.TLSOptions()
        /// Connect, handshake and idle-read limits.
        public var timeouts: BulwarkClient.Timeouts = BulwarkClient.Timeouts()
        /// The hosts the stream may connect to (checked with the scheme `tls` before any DNS lookup); nil allows
        /// every host.
        public var allowlist: HostAllowlist? = nil
        /// Receives every trust decision and allowlist refusal.
        public var eventMonitor: any EventMonitor = CompositeEventMonitor([])
        /// Where pin failures are reported; nil for nowhere.
        public var pinFailureReporting: BulwarkClient.PinFailureReporting? = nil
        /// The addresses to connect to in place of resolving a host.
        public var resolveOverrides: [BulwarkClient.Endpoint: BulwarkClient.ResolvedAddress] = [:]
        /// Reuse of trusted decisions across handshakes; nil for none.
        public var trustDecisionCache: TrustDecisionCache.Options? = TrustDecisionCache.Options()
        /// The client certificates offered to servers that ask for one, by host pattern, as for the client: sent only
        /// to hosts whose pattern selects them. Empty by default.
        public var clientIdentities: BulwarkClient.ClientIdentities = BulwarkClient.ClientIdentities()
        /// The proxy the stream goes through, as for the client: ``BulwarkClient/Proxy/none`` (the default), an HTTP
        /// or HTTPS proxy (a `CONNECT` tunnel), a SOCKS5 proxy, or the environment's proxy variables, read as for an
        /// `https` URL (`https_proxy`, `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`, `no_proxy`, `NO_PROXY`).
        ///
        /// The proxy changes where the bytes go, never what is trusted: the TLS handshake runs inside the tunnel
        /// with the stream's host as the server name and ``trust``'s evaluator for that host (pins included), and
        /// ``allowlist`` is checked before anything is sent to the proxy.
        public var proxy: BulwarkClient.Proxy = .none
        /// Proxies chosen per host pattern, in place of ``proxy``. Empty by default. See
        /// ``BulwarkClient/ProxyOverrides``.
        public var proxyOverrides: BulwarkClient.ProxyOverrides = BulwarkClient.ProxyOverrides()

        /// The secure defaults (TLS 1.2 or later, no allowlist, no reporting) with `trust`.
        public init(trust: ServerTrustManager) {
            self.trust = trust
        }

        /// The stream-relevant fields of a client's configuration: trust, TLS options, timeouts, allowlist, event
        /// monitor, pin-failure reporting, resolve overrides, the decision cache, the client identities, the proxy and
        /// the proxy overrides.
        public init(_ client: BulwarkClient.Configuration) {
            self.trust = client.trust
            self.tls = client.tls
            self.timeouts = client.timeouts
            self.allowlist = client.allowlist
            self.eventMonitor = client.eventMonitor
            self.pinFailureReporting = client.pinFailureReporting
            self.resolveOverrides = client.resolveOverrides
            self.trustDecisionCache = client.trustDecisionCache
            self.clientIdentities = client.clientIdentities
            self.proxy = client.proxy
            self.proxyOverrides = client.proxyOverrides
        }

        /// A client configuration with these fields, for the connector and the pin-failure reporter (which sends
        /// reports through a client of its own under the same policy).
        var clientConfiguration: BulwarkClient.Configuration {
            var configuration = BulwarkClient.Configuration(trust: self.trust)
            configuration.tls = self.tls
            configuration.timeouts = self.timeouts
            configuration.allowlist = self.allowlist
            configuration.eventMonitor = self.eventMonitor
            configuration.pinFailureReporting = self.pinFailureReporting
            configuration.resolveOverrides = self.resolveOverrides
            configuration.trustDecisionCache = self.trustDecisionCache
            configuration.clientIdentities = self.clientIdentities
            configuration.proxy = self.proxy
            configuration.proxyOverrides = self.proxyOverrides
            return configuration
        }
    }
}
