import Foundation

extension PolicyFile {
    /// The proxy requests go through, for all hosts and per host pattern (a client configuration's `proxy` and
    /// `proxyOverrides`). Credentials are never written into the policy: a proxy URL with user information is refused,
    /// and ``Setting/credentialsFile`` names a file holding one line `user:password`. An `https://` proxy's
    /// certificate is evaluated against the system roots, or only against the CA certificates of
    /// ``Setting/caFile``.
    ///
    /// ```json
    /// "proxy": {
    ///   "use": "https://proxy.corp.example:3129",
    ///   "credentialsFile": "proxy-credentials",
    ///   "caFile": "proxy-ca.pem",
    ///   "hosts": { "**.internal.example": { "use": "none" } }
    /// }
    /// ```
    public struct Proxy: Hashable, Sendable {
        /// The proxy of hosts that no entry of ``hosts`` matches.
        public var setting: Setting
        /// Per host pattern, in the order written: the most specific matching pattern wins, as for trust.
        public var hosts: [Host] = []

        /// A proxy section.
        public init(setting: Setting, hosts: [Host] = []) {
            self.setting = setting
            self.hosts = hosts
        }

        /// Which proxy, and the file its credentials are read from.
        public struct Setting: Hashable, Sendable {
            /// The proxy.
            public var use: Use
            /// A file holding one line `user:password` for the proxy (relative paths start at the policy file's
            /// directory); only with a proxy URL.
            public var credentialsFile: String?
            /// A PEM or DER file of the CA certificates an `https://` proxy's certificate must chain to (relative paths
            /// start at the policy file's directory), in place of the system roots (as curl's `--proxy-cacert`); the
            /// proxy's host name is checked too. Only with an `https://` proxy URL or `"environment"` (for the
            /// `https://` proxies the environment names). It never applies to an origin: an origin certificate issued
            /// by this CA is accepted only if the origin's own evaluator trusts it.
            public var caFile: String?

            /// A setting.
            public init(use: Use, credentialsFile: String? = nil, caFile: String? = nil) {
                self.use = use
                self.credentialsFile = credentialsFile
                self.caFile = caFile
            }
        }

        /// A proxy: none, the environment's, or one at a URL.
        public enum Use: Hashable, Sendable, CustomStringConvertible {
            /// Connect directly (`"none"`).
            case none
            /// The environment's proxy variables, with curl's rules (`"environment"`).
            case environment
            /// The proxy at a URL: `http://`, `https://` (an HTTP proxy reached over TLS), `socks5://` or
            /// `socks5h://`, a host and a port; no user information and no path.
            case url(String)

            /// As written in the file.
            public var description: String {
                switch self {
                case .none: return "none"
                case .environment: return "environment"
                case .url(let url): return url
                }
            }
        }

        /// A host pattern's proxy.
        public struct Host: Hashable, Sendable {
            /// The hosts.
            public var pattern: HostPattern
            /// Their proxy.
            public var setting: Setting

            /// A host entry.
            public init(pattern: HostPattern, setting: Setting) {
                self.pattern = pattern
                self.setting = setting
            }
        }

        /// The proxy URL schemes a policy file accepts.
        public static let schemes: Set<String> = ["http", "https", "socks5", "socks5h"]

        /// Why `text` is not a proxy URL a policy may hold, or nil when it is one: a scheme of ``schemes``, a host,
        /// a port from 1 to 65535 if any, no user information (credentials belong in ``Setting/credentialsFile``), no
        /// path, query or fragment.
        public static func problem(withURL text: String) -> (detail: String, isSecret: Bool)? {
            // The text is shown only redacted: it may hold a password however it fails to parse.
            let shown = PolicyJSON.quoted(ProxyEndpoint.redacted(text))
            guard let components = URLComponents(string: text), let scheme = components.scheme else {
                return (
                    "\(shown) is not a URL; write \"none\", \"environment\" or a proxy URL", false
                )
            }
            guard Self.schemes.contains(scheme) else {
                return (
                    "the proxy scheme \(PolicyJSON.quoted(scheme)) is not supported; use http, https, socks5 or "
                        + "socks5h", false
                )
            }
            if components.user != nil || components.password != nil {
                return (
                    "the proxy URL carries user information; put the credentials in a file named by "
                        + "\"credentialsFile\"", true
                )
            }
            guard let host = components.host, !host.isEmpty else {
                return ("the proxy URL \(shown) has no host", false)
            }
            if let port = components.port, !(1...65535).contains(port) {
                return ("the proxy port \(port) is not between 1 and 65535", false)
            }
            guard components.path.isEmpty || components.path == "/", components.query == nil,
                components.fragment == nil
            else {
                return ("a proxy URL has no path, query or fragment: \(shown)", false)
            }
            return nil
        }
    }
}
