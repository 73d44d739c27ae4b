import BulwarkPolicy
import NIOCore

/// What the connection layer needs of a client's configuration, and nothing else: how to judge a handshake, the TLS
/// options, the time limits, the decompression limits, where to connect.
///
/// The connection layer takes this value instead of ``BulwarkClient/Configuration``, so that what connections
/// depend on is visible in one place, and a configuration field that only requests use (redirects, credentials,
/// cookies, the allowlist) cannot change how a connection is made.
struct ConnectionSettings: Sendable {
    /// Which chains are trusted for which hosts.
    var trust: ServerTrustManager
    /// Receives every trust decision of a handshake.
    var eventMonitor: any EventMonitor
    /// TLS versions, cipher suites and ALPN protocols offered.
    var tls: BulwarkClient.TLSOptions
    /// Connect, handshake and idle-read limits.
    var timeouts: BulwarkClient.Timeouts
    /// Response decompression and its limits; nil for none.
    var decompression: BulwarkClient.Decompression?
    /// The addresses to connect to in place of resolving a host.
    var resolveOverrides: [BulwarkClient.Endpoint: BulwarkClient.ResolvedAddress]
    /// Reuse of trusted decisions across handshakes; nil for none.
    var trustDecisionCache: TrustDecisionCache.Options?
    /// The load a handshake timer gives a second run while a verification waits for it: the system trust roots'
    /// index (tests substitute their own).
    var rootsLoad: BackgroundLoad = SystemTrustRootsLoading.load

    /// The connection settings of `configuration`.
    init(_ configuration: BulwarkClient.Configuration) {
        self.trust = configuration.trust
        self.eventMonitor = configuration.eventMonitor
        self.tls = configuration.tls
        self.timeouts = configuration.timeouts
        self.decompression = configuration.decompression
        self.resolveOverrides = configuration.resolveOverrides
        self.trustDecisionCache = configuration.trustDecisionCache
    }
}
