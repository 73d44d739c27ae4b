import BulwarkPolicy
import Foundation

extension BulwarkClient {
    /// What ``signOut()`` removed.
    public struct SignOutSummary: Sendable, Hashable, CustomStringConvertible {
        /// Entries removed from the ``Configuration/credentials`` store (their secrets zeroized).
        public var credentials: Int
        /// Cookies removed from the ``Configuration/cookies`` jar (their values zeroized).
        public var cookies: Int
        /// Pooled connections that had carried credentials or cookies, closed now, and those made with a
        /// session-bound client identity, drained.
        public var connectionsClosed: Int
        /// Host patterns whose session-bound client identity was removed (see
        /// ``BulwarkClient/updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)``).
        public var clientIdentities: Int = 0

        /// `2 credentials, 1 cookies, 1 connections closed` (and `, 1 client identities` when one was removed).
        public var description: String {
            let identities = self.clientIdentities > 0 ? ", \(self.clientIdentities) client identities" : ""
            return "\(self.credentials) credentials, \(self.cookies) cookies, \(self.connectionsClosed) connections "
                + "closed\(identities)"
        }
    }

    /// Ends the session, so that nothing of it reaches the next one:
    ///
    /// - every credential in ``Configuration/credentials`` is wiped (zeroized) and its refresh provider forgotten;
    ///   refreshes in flight are cancelled and their results wiped;
    /// - every cookie in ``Configuration/cookies`` is removed and its value wiped;
    /// - client identities set as session-bound (``updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)``) are removed, and the
    ///   connections made with them drained as for a replaced identity;
    /// - pooled connections that carried a credential or a cookie (from the store, the jar or the request's own
    ///   `Authorization`, `Cookie` or `Proxy-Authorization` header) are closed: idle ones now, busy HTTP/1.1 ones
    ///   when their response ends; requests still running on such an HTTP/2 connection fail. Connections that never
    ///   carried one stay open.
    ///
    /// Bulwark keeps no response cache and no TLS session cache, so there is nothing else to clear (the trust-decision
    /// cache holds verdicts about servers' certificate chains, nothing of the session, and stays). A request
    /// whose credentials were attached before the call still completes with them; every request started after it
    /// carries none, and goes over a new connection if its origin's connections carried credentials.
    ///
    /// Emits one `sign_out` event with the counts.
    @discardableResult
    public func signOut() async -> SignOutSummary {
        let credentials = self.baseConfiguration.credentials?.signOut() ?? 0
        let cookies = self.baseConfiguration.cookies?.removeAll() ?? 0
        let connections = await self.pool.signOut()
        let (identities, drained) = self.removeSessionBoundIdentities()
        let summary = SignOutSummary(
            credentials: credentials,
            cookies: cookies,
            connectionsClosed: connections + drained,
            clientIdentities: identities
        )
        var details: SecurityEvent.Details = [
            .credentials: .number(credentials), .cookies: .number(cookies),
            .connectionsClosed: .number(connections + drained),
        ]
        // Only when one was removed: the event of a client without session-bound identities is unchanged.
        if identities > 0 { details[.clientIdentities] = .number(identities) }
        self.baseConfiguration.eventMonitor.record(
            SecurityEvent(kind: .signOut, message: "signed out: \(summary)", details: details)
        )
        return summary
    }
}
