import BulwarkPolicy

extension BulwarkClient {
    /// The client identities offered now: ``Configuration/clientIdentities`` as changed since by
    /// ``updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)`` and ``signOut()``.
    public var clientIdentities: ClientIdentities { self.identities.current }

    /// Replaces the client certificate offered to the hosts `pattern` matches, or stops offering one (`nil`), while
    /// the client runs:
    ///
    /// - every request that chooses its connection after the call uses the new identity: a new connection is made
    ///   with it;
    /// - pooled connections made with the identity it replaces are drained: idle ones close now, busy HTTP/1.1 ones
    ///   when their response ends, HTTP/2 ones when their last stream ends. None is handed to a request again, and
    ///   no request running on one fails;
    /// - the replaced identity's key object is freed once the last connection that used it has closed and nothing
    ///   else holds it (copies of the ``ClientIdentity`` value your code keeps hold it too). BoringSSL, which holds
    ///   the key, overwrites it with zeros as it frees it.
    ///
    /// Emits one `client_identity_updated` event: the pattern, the new certificate's subject and fingerprint (never
    /// the key), and the number of connections drained.
    ///
    /// - Parameters:
    ///   - identity: The identity to offer, or nil to offer none to these hosts (a less specific pattern's identity
    ///     then applies, if one matches).
    ///   - pattern: The host pattern, as in ``ClientIdentities``.
    ///   - sessionBound: Whether the identity belongs to the signed-in session: ``signOut()`` removes it.
    /// - Returns: The number of pooled connections drained (closed now, or when the requests on them end).
    @discardableResult
    public func updateClientIdentity(
        _ identity: ClientIdentity?,
        for pattern: HostPattern,
        sessionBound: Bool = false
    ) -> Int {
        let (_, drained) = self.identities.update(
            { identities in
                if let identity {
                    identities.set(identity, for: pattern, sessionBound: sessionBound)
                } else {
                    identities.remove(for: pattern)
                }
            },
            then: self.retireConnections(notUsing:)
        )
        var details: SecurityEvent.Details = [.pattern: .text(pattern.description)]
        details[.certificate] = identity.map { .text($0.subject) }
        details[.fingerprint] = identity.map { .text($0.fingerprint) }
        details[.connectionsClosed] = .number(drained)
        self.baseConfiguration.eventMonitor.record(
            SecurityEvent(
                kind: .clientIdentityUpdated,
                message: identity.map {
                    "the client identity for \(pattern) is now \"\($0.subject)\" (sha256 \($0.fingerprint)); "
                        + "\(drained) connections drained"
                } ?? "no client identity for \(pattern) any more; \(drained) connections drained",
                details: details
            )
        )
        return drained
    }

    /// ``updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)`` with the pattern as text (`api.example.com`,
    /// `*.example.com`, `**.example.com`).
    ///
    /// - Throws: ``/BulwarkPolicy/HostPatternError`` for a pattern that is not valid (nothing changes).
    @discardableResult
    public func updateClientIdentity(
        _ identity: ClientIdentity?,
        for pattern: String,
        sessionBound: Bool = false
    ) throws(HostPatternError) -> Int {
        self.updateClientIdentity(identity, for: try HostPattern(pattern), sessionBound: sessionBound)
    }

    /// Drops the session-bound identities (for ``signOut()``); returns how many patterns selected one and how many
    /// connections were drained.
    func removeSessionBoundIdentities() -> (identities: Int, drained: Int) {
        let (removed, drained) = self.identities.update(
            { $0.removeSessionBound() },
            then: self.retireConnections(notUsing:)
        )
        return (removed, removed > 0 ? drained : 0)
    }

    /// Retires the pool's keys whose identity is not the one `identities` selects for their host, and forgets the
    /// TLS contexts of identities no longer selected. Returns the number of connections drained.
    private func retireConnections(notUsing identities: ClientIdentities) -> Int {
        let drained = self.pool.retire { key in
            key.scheme == "https" && identities.identity(forHost: key.host)?.identity != key.identity
        }
        self.connector?.handshakeContexts.forget(except: identities.identities)
        return drained
    }
}
