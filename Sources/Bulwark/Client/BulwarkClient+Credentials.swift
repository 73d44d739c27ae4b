import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1

extension BulwarkClient {
    /// What ``signOut()`` removed.
    public struct SignOutSummary: Sendable, Hashable, CustomStringConvertible {
        /// Entries removed from the ``Configuration/credentials`` store (their secrets zeroized).
        public var credentials: Int
        /// Cookies removed from the ``Configuration/cookies`` jar (their values zeroized).
        public var cookies: Int
        /// Pooled connections that had carried credentials or cookies, closed now.
        public var connectionsClosed: Int

        public var description: String {
            "\(self.credentials) credentials, \(self.cookies) cookies, \(self.connectionsClosed) connections closed"
        }
    }

    /// Ends the session, so that nothing of it reaches the next one:
    ///
    /// - every credential in ``Configuration/credentials`` is wiped (zeroized) and its refresh provider forgotten;
    ///   refreshes in flight are cancelled and their results wiped;
    /// - every cookie in ``Configuration/cookies`` is removed and its value wiped;
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
        let credentials = self.configuration.credentials?.signOut() ?? 0
        let cookies = self.configuration.cookies?.removeAll() ?? 0
        let connections = await self.pool.signOut()
        let summary = SignOutSummary(credentials: credentials, cookies: cookies, connectionsClosed: connections)
        self.configuration.eventMonitor.record(
            SecurityEvent(
                kind: .signOut,
                message: "signed out: \(summary)",
                details: [
                    .credentials: .number(credentials), .cookies: .number(cookies),
                    .connectionsClosed: .number(connections),
                ]
            )
        )
        return summary
    }

    /// A hop's response, with what the credential store attached to it.
    struct SentHop {
        var response: BulwarkResponse
        /// The lower-case names of the headers the store's credentials went in.
        var storeCredentials: [String]
        /// The store entries whose credentials the hop carried: all the next hop may carry.
        var storeEntries: Set<CredentialStore.EntryID>
        /// Whether the hop's URL was in a credential's scope, though its credentials were withheld.
        var withheldInScope = false
    }

    /// The lower-case names of the headers that carry credentials: ``fixedSensitiveHeaderNames`` and the headers the
    /// store attaches credentials in. A request with one of them marks its connection for ``signOut()``, and on
    /// HTTP/2 they are never indexed by HPACK.
    var sensitiveHeaderNames: Set<String> {
        guard let store = self.configuration.credentials else { return self.fixedSensitiveHeaderNames }
        return self.fixedSensitiveHeaderNames.union(store.credentialHeaderNames)
    }

    /// Whether `headers` hold one of `names` (lower-case), compared without allocating.
    static func carriesAny(of names: Set<String>, _ headers: HTTPHeaders) -> Bool {
        names.contains { headers.contains(name: $0) }
    }

    /// Sends one request or redirect hop: admits it, attaches the store's in-scope credentials and the jar's
    /// cookies, sends it, stores the response's cookies, and after a 401 to a request that carried store
    /// credentials asks their providers for new ones and sends it once more.
    ///
    /// - Parameters:
    ///   - carrying: For a redirect hop, the store entries the previous hop carried: only those may be attached (the
    ///     others are withheld; the store's `.refuse` policy still applies). Nil for the request itself.
    ///   - cookieEpoch: The cookie jar's epoch when the request started: a response stores cookies only if no
    ///     sign-out happened since.
    func sendHop(
        _ request: BulwarkRequest,
        deadline: NIODeadline?,
        requestID: UInt64,
        carrying: Set<CredentialStore.EntryID>? = nil,
        cookieEpoch: UInt64?
    ) async throws -> SentHop {
        let target = try self.admit(request, requestID: requestID)
        let store = self.configuration.credentials
        let jar = self.configuration.cookies
        guard store != nil || jar != nil else {
            let carries = Self.carriesAny(of: self.fixedSensitiveHeaderNames, request.headers)
            let response = try await self.executeOnce(
                request,
                target: target,
                deadline: deadline,
                credentialEpoch: carries ? self.pool.credentialEpoch : nil
            )
            return SentHop(response: response, storeCredentials: [], storeEntries: [])
        }
        var retried = false
        while true {
            let epoch = self.pool.credentialEpoch
            var outgoing = request
            let attachment = try await self.attachStoreCredentials(
                to: &outgoing,
                among: carrying,
                host: target.host,
                requestID: requestID
            )
            let attached = attachment.names
            if let jar, let cookies = jar.cookieHeaderValue(for: request.url) {
                if let existing = outgoing.headers.first(name: "cookie") {
                    outgoing.headers.replaceOrAdd(name: "cookie", value: existing + "; " + cookies)
                } else {
                    outgoing.headers.add(name: "Cookie", value: cookies)
                }
            }
            let carries = Self.carriesAny(of: self.sensitiveHeaderNames, outgoing.headers)
            let response = try await self.executeOnce(
                outgoing,
                target: target,
                deadline: deadline,
                credentialEpoch: carries ? epoch : nil
            )
            if let jar, let cookieEpoch {
                let fields = response.headers["set-cookie"]
                if !fields.isEmpty { jar.store(setCookieFields: fields, from: request.url, epoch: cookieEpoch) }
            }
            let hop = SentHop(
                response: response,
                storeCredentials: attached,
                storeEntries: attachment.entries,
                withheldInScope: attachment.withheldInScope
            )
            guard response.status == .unauthorized, !retried, !attached.isEmpty, let store,
                request.body?.isReplayable ?? true
            else {
                return hop
            }
            retried = true
            let refreshed: Bool
            do {
                refreshed = try await store.refreshAfterRejection(for: request.url, among: attachment.entries)
            } catch {
                await Self.discard(response.body)
                throw BulwarkError(.credentialRefreshFailed, host: target.host, detail: String(describing: error))
            }
            guard refreshed else {
                return hop
            }
            await Self.discard(response.body)
        }
    }

    /// Attaches the store's credentials whose scope contains the request's URL, of the entries in `allowed` (all
    /// when nil).
    ///
    /// - Returns: The lower-case names of the headers attached, the entries attached, and whether an in-scope entry
    ///   was withheld because `allowed` did not list it.
    private func attachStoreCredentials(
        to request: inout BulwarkRequest,
        among allowed: Set<CredentialStore.EntryID>?,
        host: String,
        requestID: UInt64
    ) async throws -> (names: [String], entries: Set<CredentialStore.EntryID>, withheldInScope: Bool) {
        guard let store = self.configuration.credentials else { return ([], [], false) }
        var fields = request.headers.map { (name: $0.name, value: $0.value) }
        let record: CredentialStore.AttachmentRecord
        do {
            record = try await store.attach(to: &fields, for: request.url, among: allowed)
        } catch {
            throw BulwarkError(.credentialRefreshFailed, host: host, detail: String(describing: error))
        }
        if let ambiguity = record.ambiguousPath {
            self.configuration.eventMonitor.record(
                .credentialsWithheldForAmbiguousPath(url: request.url, ambiguity: ambiguity, requestID: requestID)
            )
        }
        switch record.attachment {
        case .refused:
            throw self.refuseOutOfScope(request.url, host: host, requestID: requestID)
        case .nothingInScope:
            return ([], [], record.withheldInScope)
        case .attached(let names):
            var headers = HTTPHeaders()
            headers.reserveCapacity(fields.count)
            for field in fields { headers.add(name: field.name, value: field.value) }
            request.headers = headers
            return (names, record.entries, record.withheldInScope)
        }
    }

    /// Reports the refusal of a request outside every credential scope, and returns its error.
    private func refuseOutOfScope(_ url: URL, host: String, requestID: UInt64) -> BulwarkError {
        let event = SecurityEvent.requestRefusedOutOfScope(url: url, host: host, requestID: requestID)
        self.configuration.eventMonitor.record(event)
        return BulwarkError(
            .outOfCredentialScope,
            host: host,
            detail:
                "\(event.details[.target]?.text ?? host) is outside the scope of every credential, and the store refuses "
                + "such requests"
        )
    }

    /// Reports the store credentials a redirect hop did not carry: because its URL is outside their scope, or
    /// because the hop before it did not carry them (the chain left their scope earlier, or never carried them).
    func reportCredentialsWithheld(
        _ names: [String],
        hop: SentHop,
        previousCarriedAny: Bool,
        from: URL,
        to: URL,
        requestID: UInt64
    ) {
        if hop.withheldInScope {
            self.configuration.eventMonitor.record(
                previousCarriedAny
                    ? SecurityEvent.credentialsNotCarriedBefore(from: from, to: to, requestID: requestID)
                    : SecurityEvent.credentialsWithheldAfterScopeExit(from: from, to: to, requestID: requestID)
            )
        } else if !names.isEmpty {
            self.configuration.eventMonitor.record(
                SecurityEvent.credentialsLeftBehind(headers: names, from: from, to: to, requestID: requestID)
            )
        }
    }
}
