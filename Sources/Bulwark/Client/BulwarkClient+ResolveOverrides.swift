import BulwarkPolicy

extension BulwarkClient {
    /// A host and a port: the key of ``Configuration/resolveOverrides``.
    ///
    /// The host is kept canonical (lower-case, an internationalized name in punycode, an IPv6 address without
    /// brackets), so `API.Example.com` and `api.example.com` name the same endpoint, as they name the same server in
    /// a URL. A host that cannot be canonicalized, or a port outside 1–65535, makes the configuration invalid: the
    /// client's requests then fail with ``BulwarkError/Code/invalidConfiguration``.
    public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
        /// The canonical host, or the text given when it is not a valid host name.
        public let host: String
        /// The TCP port.
        public let port: Int
        /// Whether ``host`` could be canonicalized.
        let hasValidHost: Bool

        /// An endpoint for `host` (a name or an IP address, brackets allowed around IPv6) and `port`.
        public init(host: String, port: Int) {
            let canonical = try? HostName.canonicalize(host)
            self.host = canonical ?? host
            self.port = port
            self.hasValidHost = canonical != nil
        }

        /// An endpoint for a host already canonical, as a ``RequestTarget`` holds it.
        init(canonicalHost: String, port: Int) {
            self.host = canonicalHost
            self.port = port
            self.hasValidHost = true
        }

        /// `host:port`, `[2001:db8::1]:443` for an IPv6 address.
        public var description: String {
            self.host.contains(":") ? "[\(self.host)]:\(self.port)" : "\(self.host):\(self.port)"
        }

        /// Why the endpoint cannot be used, if it cannot.
        var problem: String? {
            guard self.hasValidHost else { return "the host is not a valid host name" }
            guard (1...65535).contains(self.port) else { return "port \(self.port) is out of range" }
            return nil
        }
    }

    /// The IP address a connection goes to in place of the addresses a host name resolves to: the value of
    /// ``Configuration/resolveOverrides``. An IPv4 address (`127.0.0.1`) or an IPv6 address, with or without
    /// brackets (`::1`, `[::1]`).
    ///
    /// The text is checked when the client is first used: one that is not an IP address makes the client's requests
    /// fail with ``BulwarkError/Code/invalidConfiguration``. No name is resolved for it.
    public struct ResolvedAddress: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The address as given.
        public let text: String

        /// An address from its text.
        public init(_ text: String) {
            self.text = text
        }

        /// An address from a string literal: `"127.0.0.1"`.
        public init(stringLiteral text: String) {
            self.init(text)
        }

        /// The address as given.
        public var description: String { self.text }

        /// The address without brackets, when it is an IP address.
        var literal: String? {
            var literal = self.text
            if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
            return HostName.isIPAddress(literal.lowercased()) ? literal : nil
        }
    }
}

extension [BulwarkClient.Endpoint: BulwarkClient.ResolvedAddress] {
    /// The first override that cannot be used (in the order of the endpoints' text), as an
    /// ``BulwarkError/Code/invalidConfiguration`` error naming it; nil when every one can.
    var validationError: BulwarkError? {
        for (endpoint, address) in self.sorted(by: { $0.key.description < $1.key.description }) {
            if let problem = endpoint.problem {
                return .invalidConfiguration("resolveOverrides[\(endpoint)]: \(problem)")
            }
            if address.literal == nil {
                return .invalidConfiguration(
                    "resolveOverrides[\(endpoint)]: \"\(address)\" is not an IP address; overrides name addresses, "
                        + "not hosts"
                )
            }
        }
        return nil
    }
}
