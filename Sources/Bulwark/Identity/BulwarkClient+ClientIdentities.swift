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
        /// What a pattern selects.
        private struct Selection: Sendable {
            var identity: ClientIdentity
            var sessionBound: Bool
        }

        private var matcher = HostMatcher<Selection>()
        /// The same selections by pattern, for ``remove(for:)`` and ``removeSessionBound()`` (the matcher has no
        /// removal: it is rebuilt).
        private var selections: [HostPattern: Selection] = [:]

        /// No identity: no client certificate is ever sent.
        public init() {}

        /// Identities by host pattern text (`example.com`, `*.example.com`, `**.example.com`).
        ///
        /// - Throws: ``/BulwarkPolicy/HostPatternError`` for a pattern that is not valid.
        public init(_ identities: [String: ClientIdentity]) throws(HostPatternError) {
            for (text, identity) in identities.sorted(by: { $0.key < $1.key }) {
                self.set(identity, for: try HostPattern(text))
            }
        }

        /// Identities by host pattern; a later duplicate of a pattern replaces an earlier one.
        public init(patterns: [(HostPattern, ClientIdentity)]) {
            for (pattern, identity) in patterns {
                self.set(identity, for: pattern)
            }
        }

        /// Selects `identity` for the hosts `pattern` matches, replacing the identity the same pattern selected
        /// before.
        ///
        /// - Parameters:
        ///   - identity: The identity to offer.
        ///   - pattern: The hosts to offer it to.
        ///   - sessionBound: Whether the identity belongs to the signed-in session: ``BulwarkClient/signOut()``
        ///     removes it (and drains the connections made with it).
        public mutating func set(_ identity: ClientIdentity, for pattern: HostPattern, sessionBound: Bool = false) {
            let selection = Selection(identity: identity, sessionBound: sessionBound)
            self.matcher.insert(selection, for: pattern)
            self.selections[pattern] = selection
        }

        /// Stops selecting an identity for `pattern`; returns the identity it selected, if any.
        @discardableResult
        public mutating func remove(for pattern: HostPattern) -> ClientIdentity? {
            guard let removed = self.selections[pattern] else { return nil }
            self.rebuild(keeping: { $0 != pattern })
            return removed.identity
        }

        /// Removes every identity set as session-bound; returns how many patterns selected one.
        @discardableResult
        public mutating func removeSessionBound() -> Int {
            let bound = self.selections.values.filter(\.sessionBound).count
            guard bound > 0 else { return 0 }
            let selections = self.selections
            self.rebuild(keeping: { selections[$0]?.sessionBound == false })
            return bound
        }

        private mutating func rebuild(keeping keep: (HostPattern) -> Bool) {
            let kept = self.matcher.patterns.filter(keep).compactMap { pattern in
                self.selections[pattern].map { (pattern, $0) }
            }
            self.matcher = HostMatcher(kept)
            self.selections = Dictionary(kept, uniquingKeysWith: { $1 })
        }

        /// The identity offered to `host`, and the pattern that selected it; nil when none is.
        public func identity(forHost host: String) -> (pattern: HostPattern, identity: ClientIdentity)? {
            guard !self.matcher.isEmpty else { return nil }
            return self.matcher.match(host).map { (pattern: $0.pattern, identity: $0.value.identity) }
        }

        /// The identity `pattern` itself selects (not the one a more specific pattern selects for some host).
        public func identity(for pattern: HostPattern) -> ClientIdentity? {
            self.selections[pattern]?.identity
        }

        /// Whether the identity `pattern` selects is session-bound (see ``set(_:for:sessionBound:)``).
        public func isSessionBound(_ pattern: HostPattern) -> Bool {
            self.selections[pattern]?.sessionBound ?? false
        }

        /// Whether no identity is configured.
        public var isEmpty: Bool { self.matcher.isEmpty }

        /// The patterns, in the order they were first set.
        public var patterns: [HostPattern] { self.matcher.patterns }

        /// The distinct identities selected by some pattern.
        public var identities: Set<ClientIdentity> { Set(self.selections.values.map(\.identity)) }

        /// The patterns; never a key.
        public var description: String {
            "ClientIdentities(" + self.matcher.patterns.map(\.description).joined(separator: ", ") + ")"
        }
    }
}
