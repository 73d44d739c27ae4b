import BulwarkPolicy

extension BulwarkClient {
    /// Which client certificate (``ClientIdentity``) is offered to which hosts, by host pattern: the most specific
    /// pattern matching a host selects its identity, as for ``/BulwarkPolicy/ServerTrustManager``.
    ///
    /// A certificate names who connects: it is offered **only** to hosts whose pattern selects it. A server that asks
    /// for a certificate and whose host selects none receives none (the handshake goes on without one, and the
    /// server decides). A wildcard pattern never selects an identity for an IP address; list the address exactly.
    ///
    /// ```swift
    /// configuration.clientIdentities = try .init([
    ///     "api.bank.example": deviceIdentity,
    ///     "**.internal.example": serviceIdentity,
    /// ])
    /// ```
    ///
    /// Connections made with an identity are pooled apart from every other: a request never goes over a connection
    /// that authenticated with another identity, or with none.
    public struct ClientIdentities: Sendable, CustomStringConvertible {
        private var matcher = HostMatcher<ClientIdentity>()

        /// No identity: no client certificate is ever sent.
        public init() {}

        /// Identities by host pattern text (`example.com`, `*.example.com`, `**.example.com`).
        ///
        /// - Throws: ``/BulwarkPolicy/HostPatternError`` for a pattern that is not valid.
        public init(_ identities: [String: ClientIdentity]) throws(HostPatternError) {
            for (text, identity) in identities.sorted(by: { $0.key < $1.key }) {
                self.matcher.insert(identity, for: try HostPattern(text))
            }
        }

        /// Identities by host pattern; a later duplicate of a pattern replaces an earlier one.
        public init(patterns: [(HostPattern, ClientIdentity)]) {
            self.matcher = HostMatcher(patterns)
        }

        /// Selects `identity` for the hosts `pattern` matches, replacing the identity the same pattern selected
        /// before.
        public mutating func set(_ identity: ClientIdentity, for pattern: HostPattern) {
            self.matcher.insert(identity, for: pattern)
        }

        /// The identity offered to `host`, and the pattern that selected it; nil when none is.
        public func identity(forHost host: String) -> (pattern: HostPattern, identity: ClientIdentity)? {
            guard !self.matcher.isEmpty else { return nil }
            return self.matcher.match(host).map { (pattern: $0.pattern, identity: $0.value) }
        }

        /// Whether no identity is configured.
        public var isEmpty: Bool { self.matcher.isEmpty }

        /// The patterns, in the order they were first set.
        public var patterns: [HostPattern] { self.matcher.patterns }

        /// The patterns; never a key.
        public var description: String {
            "ClientIdentities(" + self.matcher.patterns.map(\.description).joined(separator: ", ") + ")"
        }
    }
}
