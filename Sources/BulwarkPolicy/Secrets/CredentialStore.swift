import Foundation

/// The credentials of a session, each with the scope it may be sent to: attached to a request's headers at send time,
/// only when the request's URL is in scope, refreshed by an async provider when missing or expiring, and wiped, all
/// of them, by ``signOut()``.
///
/// ```swift
/// let store = CredentialStore()
/// store.add(
///     try .bearer(SecretBytes(utf8: token)),
///     scope: try .under("https://api.example.com/v1/"),
///     refresh: { request in try await login.refresh(for: request.scope) }
/// )
/// var headers: [(name: String, value: String)] = [("Accept", "application/json")]
/// try await store.attach(to: &headers, for: url)   // adds Authorization only if url is under /v1/
/// store.signOut()                                   // zeroizes every secret, forgets every provider
/// ```
///
/// Rules:
/// - **Scope first.** Only entries whose ``CredentialScope`` contains the URL are looked at: a credential is never
///   attached, and a refresh provider never called, for a URL outside its scope. A URL whose path servers read
///   differently (`/v1/..;/admin`, `/v1//../admin`: see ``CredentialScope/PathAmbiguity``) is in no base-URL
///   scope. With
///   ``OutOfScopeRequests/refuse``, a request outside every scope is refused instead of sent without credentials.
/// - **Send time only.** Secrets stay in ``SecretBox``es; the header value is made from the secret when
///   ``attach(to:for:)`` runs, for that request only.
/// - **The caller's headers win.** A header the request already has is not replaced (a cookie credential is added to
///   an existing `Cookie` header). Between entries for the same header, the one added first wins.
/// - **Refresh.** A provider is called when its in-scope entry has no credential, or one that expires within
///   ``refreshMargin`` seconds, and by ``refreshAfterRejection(for:)`` after a 401. Concurrent requests share one
///   refresh per entry. The new credential replaces (and wipes) the old one.
/// - **Sign-out.** ``signOut()`` wipes every credential, forgets every entry and provider, cancels refreshes in
///   flight and wipes whatever they return, so nothing of the old session reaches the next.
///
/// The store prints and reflects its scopes and credential kinds only, never a secret.
public final class CredentialStore: @unchecked Sendable, CustomStringConvertible, CustomReflectable {
    // @unchecked Sendable: all mutable state is guarded by `lock`.

    /// Makes a new credential for a scope: for a first login, an expiring token, or one the server rejected.
    public typealias RefreshProvider = @Sendable (CredentialRefreshRequest) async throws -> Credential

    /// What to do with a request outside the scope of every credential in the store.
    public enum OutOfScopeRequests: Hashable, Sendable {
        /// Send it, without any credential from the store (the default).
        case sendWithoutCredentials
        /// Refuse it: ``attach(to:for:)`` returns ``CredentialAttachment/refused(host:)``.
        case refuse
    }

    /// Identifies an entry of the store, to remove it.
    public struct EntryID: Hashable, Sendable, CustomStringConvertible {
        fileprivate let value: UInt64
        /// `#` and the entry's number.
        public var description: String { "#\(self.value)" }
    }

    private struct Entry {
        let id: EntryID
        let scope: CredentialScope
        var credential: Credential?
        let provider: RefreshProvider?
        /// The refresh in flight, with a number that tells it apart from later ones.
        var refresh: (number: UInt64, task: Task<Credential, any Error>)?
    }

    /// What the store does with requests outside every scope.
    public let outOfScopeRequests: OutOfScopeRequests
    /// How many seconds before its expiry a credential is refreshed.
    public let refreshMargin: TimeInterval
    private let now: @Sendable () -> Date

    private let lock = NSLock()
    private var entries: [Entry] = []
    private var nextNumber: UInt64 = 0
    /// Incremented by every sign-out: a refresh started before it must not install its result.
    private var generation: UInt64 = 0

    /// An empty store.
    ///
    /// - Parameters:
    ///   - outOfScopeRequests: What to do with a request outside every scope.
    ///   - refreshMargin: How many seconds before its expiry a credential is refreshed.
    ///   - now: The clock (for tests).
    public init(
        outOfScopeRequests: OutOfScopeRequests = .sendWithoutCredentials,
        refreshMargin: TimeInterval = 30,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.outOfScopeRequests = outOfScopeRequests
        self.refreshMargin = refreshMargin
        self.now = now
    }

    private func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body()
    }

    private func makeNumber() -> UInt64 {
        self.nextNumber += 1
        return self.nextNumber
    }

    // MARK: - Entries

    /// Adds a credential for `scope`. The store owns the credential from now on: it wipes it on replacement,
    /// ``remove(_:)`` and ``signOut()``.
    ///
    /// - Parameters:
    ///   - credential: The credential, or nil to have `provider` make one for the first request in scope.
    ///   - scope: Where the credential may be sent.
    ///   - provider: Makes a new credential when needed; never called for URLs outside `scope`.
    @discardableResult
    public func add(
        _ credential: Credential?,
        scope: CredentialScope,
        refresh provider: RefreshProvider? = nil
    )
        -> EntryID
    {
        self.locked {
            let id = EntryID(value: self.makeNumber())
            self.entries.append(Entry(id: id, scope: scope, credential: credential, provider: provider))
            return id
        }
    }

    /// Removes an entry, wiping its credential and cancelling its refresh.
    public func remove(_ id: EntryID) {
        let removed: Entry? = self.locked {
            guard let index = self.entries.firstIndex(where: { $0.id == id }) else { return nil }
            return self.entries.remove(at: index)
        }
        removed?.credential?.wipe()
        removed?.refresh?.task.cancel()
    }

    /// The number of entries.
    public var count: Int {
        self.locked { self.entries.count }
    }

    /// Whether some entry's scope contains `url`.
    public func isInScope(_ url: URL) -> Bool {
        let scopes = self.locked { self.entries.map(\.scope) }
        return scopes.contains { $0.contains(url) }
    }

    /// The lower-case names of the headers the store attaches credentials in, for a client that removes them from a
    /// request before it is redirected elsewhere.
    public var credentialHeaderNames: Set<String> {
        let names = self.locked { self.entries.compactMap { $0.credential?.headerName.lowercased() } }
        return Set(names)
    }

    // MARK: - Attaching

    /// Adds the credentials whose scope contains `url` to `headers`, refreshing them first if needed.
    ///
    /// Call it once per request, just before sending it, and for each redirect hop with the hop's URL and headers
    /// that no longer hold the previous hop's credentials.
    ///
    /// - Returns: What was attached, or ``CredentialAttachment/refused(host:)`` if the request must not be sent.
    /// - Throws: ``CredentialError`` with ``CredentialError/Code/refreshFailed`` if an in-scope provider threw.
    @discardableResult
    public func attach(
        to headers: inout [(name: String, value: String)],
        for url: URL
    ) async throws(CredentialError)
        -> CredentialAttachment
    {
        try await self.attach(to: &headers, for: url, among: nil).attachment
    }

    /// What ``attach(to:for:among:)`` did.
    package struct AttachmentRecord: Sendable {
        package var attachment: CredentialAttachment
        /// The entries whose credentials were attached.
        package var entries: Set<EntryID>
        /// Whether an entry whose scope contains the URL was left out because `among` did not list it.
        package var withheldInScope: Bool
        /// Why an entry with a base-URL scope on the URL's origin left the URL out for its path alone (the path is
        /// one servers read differently), when one did: the client reports it as a `credential_stripped` event.
        package var ambiguousPath: CredentialScope.PathAmbiguity? = nil
    }

    /// ``attach(to:for:)``, restricted to the entries in `among` (all when nil): the others are neither attached nor
    /// refreshed. A redirect hop passes the entries its previous hop carried, so that a response can never lead the
    /// client to attach a credential the request did not already carry.
    package func attach(
        to headers: inout [(name: String, value: String)],
        for url: URL,
        among allowed: Set<EntryID>?
    ) async throws(CredentialError) -> AttachmentRecord {
        let url = url.absoluteURL
        let now = self.now()
        let (inScope, pending, isEmpty, withheld, scopes) = self.locked {
            () -> ([EntryID], [PendingRefresh], Bool, Bool, [CredentialScope]) in
            var inScope: [EntryID] = []
            var pending: [PendingRefresh] = []
            var withheld = false
            for index in self.entries.indices where self.entries[index].scope.contains(url) {
                guard allowed?.contains(self.entries[index].id) ?? true else {
                    withheld = true
                    continue
                }
                inScope.append(self.entries[index].id)
                let current = self.entries[index].credential
                let reason: CredentialRefreshRequest.Reason?
                if current == nil || current?.isWiped == true {
                    reason = .missing
                } else if current?.isExpired(at: now, margin: self.refreshMargin) == true {
                    reason = .expiring
                } else {
                    reason = nil
                }
                if let reason, let refresh = self.startRefresh(at: index, reason: reason, url: url) {
                    pending.append(refresh)
                }
            }
            return (inScope, pending, self.entries.isEmpty, withheld, self.entries.map(\.scope))
        }
        // A path servers read differently gets no credential from a base-URL scope; say why, for the events.
        let ambiguousPath =
            CredentialScope.pathAmbiguity(of: url) == nil
            ? nil : scopes.lazy.compactMap { $0.pathAmbiguity(for: url) }.first
        guard !inScope.isEmpty else {
            if self.outOfScopeRequests == .refuse && !isEmpty && !withheld {
                let host = Origin.rawHost(of: url)
                let refused = CredentialAttachment.refused(
                    host: host.flatMap { try? HostName.canonicalize($0) } ?? host ?? ""
                )
                return AttachmentRecord(
                    attachment: refused,
                    entries: [],
                    withheldInScope: false,
                    ambiguousPath: ambiguousPath
                )
            }
            return AttachmentRecord(
                attachment: .nothingInScope,
                entries: [],
                withheldInScope: withheld,
                ambiguousPath: ambiguousPath
            )
        }
        _ = try await self.finish(pending)

        let credentials: [(EntryID, Credential)] = self.locked {
            self.entries.filter { inScope.contains($0.id) }.compactMap { entry in
                entry.credential.map { (entry.id, $0) }
            }
        }
        var attached: [String] = []
        var entries: Set<EntryID> = []
        for (id, credential) in credentials where !credential.isExpired(at: now) {
            guard let value = credential.makeHeaderValue() else { continue }
            let name = credential.headerName.lowercased()
            if credential.kind == .cookie {
                if let index = headers.firstIndex(where: { $0.name.lowercased() == "cookie" }) {
                    headers[index].value += "; " + value
                } else {
                    headers.append((name: "Cookie", value: value))
                }
            } else if headers.contains(where: { $0.name.lowercased() == name }) {
                continue
            } else {
                headers.append((name: credential.headerName, value: value))
            }
            entries.insert(id)
            if !attached.contains(name) {
                attached.append(name)
            }
        }
        return AttachmentRecord(
            attachment: attached.isEmpty ? .nothingInScope : .attached(headerNames: attached),
            entries: entries,
            withheldInScope: withheld,
            ambiguousPath: ambiguousPath
        )
    }

    /// Asks the providers of the entries whose scope contains `url` for new credentials, after the server rejected
    /// the current ones (a 401). Entries out of scope are not touched; their providers are not called.
    ///
    /// - Returns: Whether at least one new credential was installed (so retrying the request may succeed).
    /// - Throws: ``CredentialError`` with ``CredentialError/Code/refreshFailed`` if a provider threw.
    @discardableResult
    public func refreshAfterRejection(for url: URL) async throws(CredentialError) -> Bool {
        try await self.refreshAfterRejection(for: url, among: nil)
    }

    /// ``refreshAfterRejection(for:)`` for the entries in `among` only (all when nil).
    package func refreshAfterRejection(for url: URL, among allowed: Set<EntryID>?) async throws(CredentialError) -> Bool
    {
        let url = url.absoluteURL
        let pending = self.locked {
            self.entries.indices.filter {
                self.entries[$0].scope.contains(url) && (allowed?.contains(self.entries[$0].id) ?? true)
            }.compactMap {
                self.startRefresh(at: $0, reason: .rejected, url: url)
            }
        }
        return try await self.finish(pending) > 0
    }

    // MARK: - Sign-out

    /// Wipes every credential (zeroizing its secret), forgets every entry and refresh provider, and cancels the
    /// refreshes in flight, whose results are wiped when they arrive. Afterwards the store is empty and attaches
    /// nothing.
    ///
    /// A request whose headers were already made before the call keeps them; make headers at send time.
    ///
    /// - Returns: The number of entries removed.
    @discardableResult
    public func signOut() -> Int {
        let removed: [Entry] = self.locked {
            self.generation += 1
            defer { self.entries.removeAll() }
            return self.entries
        }
        for entry in removed {
            entry.credential?.wipe()
            entry.refresh?.task.cancel()
        }
        return removed.count
    }

    // MARK: - Refreshing

    private struct PendingRefresh {
        let scope: CredentialScope
        let task: Task<Credential, any Error>
    }

    /// Starts (or joins) the refresh of the entry at `index`; nil if it has no provider. Call with the lock held.
    private func startRefresh(at index: Int, reason: CredentialRefreshRequest.Reason, url: URL) -> PendingRefresh? {
        let entry = self.entries[index]
        guard let provider = entry.provider else { return nil }
        if let refresh = entry.refresh {
            return PendingRefresh(scope: entry.scope, task: refresh.task)
        }
        let request = CredentialRefreshRequest(reason: reason, scope: entry.scope, url: url, current: entry.credential)
        let number = self.makeNumber()
        let generation = self.generation
        let id = entry.id
        let task = Task { () async throws -> Credential in
            let credential = try await provider(request)
            guard self.install(credential, in: id, refresh: number, generation: generation) else {
                credential.wipe()
                throw CancellationError()
            }
            return credential
        }
        self.entries[index].refresh = (number, task)
        return PendingRefresh(scope: entry.scope, task: task)
    }

    /// Installs a refreshed credential if its entry still exists, is still waiting for this refresh, and no sign-out
    /// happened since it started; wipes the credential it replaces.
    private func install(_ credential: Credential, in id: EntryID, refresh number: UInt64, generation: UInt64) -> Bool {
        let replaced: Credential?? = self.locked {
            guard self.generation == generation,
                let index = self.entries.firstIndex(where: { $0.id == id }),
                self.entries[index].refresh?.number == number
            else {
                return .none
            }
            let old = self.entries[index].credential
            self.entries[index].credential = credential
            self.entries[index].refresh = nil
            return .some(old)
        }
        guard let replaced else { return false }
        if let replaced, replaced.secret !== credential.secret {
            replaced.wipe()
        }
        return true
    }

    /// Waits for refreshes; a refresh cancelled by a sign-out counts as no credential, a provider's error is thrown.
    ///
    /// - Returns: The number of refreshes that installed a credential.
    private func finish(_ pending: [PendingRefresh]) async throws(CredentialError) -> Int {
        var installed = 0
        for refresh in pending {
            switch await refresh.task.result {
            case .success:
                installed += 1
            case .failure(let error) where error is CancellationError:
                continue
            case .failure(let error):
                self.locked {
                    for index in self.entries.indices where self.entries[index].refresh?.task == refresh.task {
                        self.entries[index].refresh = nil
                    }
                }
                throw CredentialError(.refreshFailed, scope: refresh.scope, underlyingError: error)
            }
        }
        return installed
    }

    // MARK: - Printing

    /// `CredentialStore(2 entries: bearer in https://api.example.com/v1/**; …)`: kinds and scopes, never secrets.
    public var description: String {
        let lines = self.entrySummaries
        guard !lines.isEmpty else { return "CredentialStore(empty)" }
        return "CredentialStore(\(lines.count) entries: \(lines.joined(separator: "; ")))"
    }

    /// The entries as kinds and scopes; no secret.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "entries": self.entrySummaries,
                "outOfScopeRequests": String(describing: self.outOfScopeRequests),
            ],
            displayStyle: .class
        )
    }

    private var entrySummaries: [String] {
        self.locked {
            self.entries.map { entry in
                let what: String
                if let credential = entry.credential, let cookieName = credential.cookieName {
                    what = "cookie \(cookieName)"
                } else if let credential = entry.credential, credential.kind == .header {
                    what = "header \(credential.headerName)"
                } else if let credential = entry.credential {
                    what = credential.kind.description
                } else {
                    what = "(no credential yet)"
                }
                return "\(what) in \(entry.scope)" + (entry.provider == nil ? "" : " (refreshable)")
            }
        }
    }
}
