import BulwarkPolicy
import Foundation

extension TLSStream.Configuration {
    /// The URL of the proxy a stream to `host`:`port` goes through, without credentials
    /// (`http://proxy.example:3128`, `socks5://127.0.0.1:1080`); nil when it connects directly (no proxy, an override
    /// of ``BulwarkClient/Proxy/none``, a `--noproxy`-style bypass, or no environment variable for it).
    ///
    /// - Throws: ``BulwarkError``: ``BulwarkError/Code/invalidConfiguration`` when the chosen proxy (or the
    ///   environment variable that names it) cannot be read; ``BulwarkError/Code/invalidURL`` for a host that cannot
    ///   be read.
    public func proxy(forHost host: String, port: Int) throws(BulwarkError) -> String? {
        let canonical: String
        do {
            canonical = try HostName.canonicalize(host)
        } catch {
            throw BulwarkError(.invalidURL, host: host, detail: String(describing: error))
        }
        let route = try ProxyRouter(configuration: self.clientConfiguration).route(toTLSHost: canonical, port: port)
        return route?.description
    }
}

extension ProxyRouter {
    /// The proxy for a TLS stream to `host` (canonical) and `port`, chosen as for an `https` request to that origin
    /// (the environment's `https_proxy` applies); nil to connect directly.
    ///
    /// - Throws: ``BulwarkError/Code/invalidConfiguration`` when the chosen proxy (or the environment variable that
    ///   names it) cannot be read.
    func route(toTLSHost host: String, port: Int) throws(BulwarkError) -> ProxyRoute? {
        if self.isDirect { return nil }
        guard let url = URL(string: "https://" + HandshakeFailure.authority(host: host, port: port)) else {
            throw BulwarkError(.invalidURL, host: host, detail: "\(host):\(port) is not an origin")
        }
        return try self.route(for: try RequestTarget(url))
    }
}
