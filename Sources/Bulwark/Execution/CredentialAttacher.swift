import BulwarkPolicy
import Foundation
import NIOHTTP1

/// What the ``CredentialAttacher`` attached to one hop.
struct HopCredentials: Sendable, Hashable {
    /// The store entries whose credentials the hop carries: all the next redirect hop may carry.
    var entries: Set<CredentialStore.EntryID> = []
    /// The lower-case names of the headers the store's credentials went in, each once.
    var headerNames: [String] = []
    /// Whether an entry whose scope contains the hop's URL was withheld, because the hop before did not carry it.
    var withheldInScope = false
    /// Whether the hop's headers hold a credential of any origin (the store's, the jar's cookies or the caller's own
    /// `Authorization`, `Cookie` or `Proxy-Authorization`): its connection is then closed by a sign-out.
    var carriesCredentials = false
    /// The lower-case names of the headers sent never indexed on HTTP/2 for this hop: the client's credential headers
    /// when it was attached, and those the store's credentials went in. Taken then and carried with the hop, so that
    /// a sign-out while the request waits for its connection (which drops the store's names, not the request's
    /// headers) cannot send a credential indexable.
    var sensitiveHeaderNames: Set<String> = []

    /// Whether the store attached anything.
    var attachedFromStore: Bool { !self.headerNames.isEmpty }
}

/// Decides which credentials a hop gets, and adds them to its headers: the store's credentials whose scope contains
/// the hop's URL (of the entries the redirect state allows), and the jar's cookies for the URL.
///
/// It reports what it withheld for an ambiguous path, and refuses a request outside every scope when the store says
/// so; what it attached comes back as a ``HopCredentials`` for the redirect state.
struct CredentialAttacher: Sendable {
    let store: CredentialStore?
    let jar: CookieJar?
    let monitor: any EventMonitor
    /// The lower-case names of headers that carry credentials whatever the store holds: `Authorization`, `Cookie`,
    /// `Proxy-Authorization` and the redirect policy's credential headers.
    let fixedSensitiveHeaderNames: Set<String>

    init(configuration: BulwarkClient.Configuration) {
        self.store = configuration.credentials
        self.jar = configuration.cookies
        self.monitor = configuration.eventMonitor
        self.fixedSensitiveHeaderNames = RedirectPolicy.defaultCredentialHeaders.union(
            configuration.redirects.credentialHeaders.map { $0.lowercased() }
        )
    }

    /// The lower-case names of the headers that carry credentials: ``fixedSensitiveHeaderNames`` and the headers the
    /// store attaches credentials in. A request with one of them marks its connection for a sign-out, and on HTTP/2
    /// they are never indexed by HPACK.
    var sensitiveHeaderNames: Set<String> {
        guard let store = self.store else { return self.fixedSensitiveHeaderNames }
        return self.fixedSensitiveHeaderNames.union(store.credentialHeaderNames)
    }

    /// Adds the credentials and cookies for `url` to `headers`.
    ///
    /// - Parameters:
    ///   - allowed: The store entries the hop may carry (all when nil): the others are withheld, and not refreshed.
    ///   - host: The hop's canonical host, for errors and events.
    /// - Throws: ``BulwarkError/Code/outOfCredentialScope`` when the store refuses the URL,
    ///   ``BulwarkError/Code/credentialRefreshFailed`` when a provider failed.
    func attach(
        to headers: inout HTTPHeaders,
        for url: URL,
        among allowed: Set<CredentialStore.EntryID>?,
        host: String,
        requestID: UInt64
    ) async throws -> HopCredentials {
        var attached = HopCredentials()
        if let store = self.store {
            // The store's interface takes a list of name–value pairs: the headers are converted for it only, and
            // converted back only when it attached something.
            var fields = headers.map { (name: $0.name, value: $0.value) }
            let record: CredentialStore.AttachmentRecord
            do {
                record = try await store.attach(to: &fields, for: url, among: allowed)
            } catch {
                throw BulwarkError(.credentialRefreshFailed, host: host, detail: String(describing: error))
            }
            if let ambiguity = record.ambiguousPath {
                self.monitor.record(
                    .credentialsWithheldForAmbiguousPath(url: url, ambiguity: ambiguity, requestID: requestID)
                )
            }
            attached.withheldInScope = record.withheldInScope
            switch record.attachment {
            case .refused:
                throw self.refuseOutOfScope(url, host: host, requestID: requestID)
            case .nothingInScope:
                break
            case .attached(let names):
                headers = HTTPHeaders()
                headers.reserveCapacity(fields.count)
                for field in fields { headers.add(name: field.name, value: field.value) }
                attached.headerNames = names
                attached.entries = record.entries
            }
        }
        if let jar = self.jar, let cookies = jar.cookieHeaderValue(for: url) {
            if let existing = headers.first(name: "cookie") {
                headers.replaceOrAdd(name: "cookie", value: existing + "; " + cookies)
            } else {
                headers.add(name: "Cookie", value: cookies)
            }
        }
        var sensitive = self.sensitiveHeaderNames
        sensitive.formUnion(attached.headerNames)
        attached.carriesCredentials = sensitive.contains { headers.contains(name: $0) }
        attached.sensitiveHeaderNames = sensitive
        return attached
    }

    /// Reports the refusal of a request outside every credential scope, and returns its error.
    private func refuseOutOfScope(_ url: URL, host: String, requestID: UInt64) -> BulwarkError {
        let event = SecurityEvent.requestRefusedOutOfScope(url: url, host: host, requestID: requestID)
        self.monitor.record(event)
        return BulwarkError(
            .outOfCredentialScope,
            host: host,
            detail:
                "\(event.details[.target]?.text ?? host) is outside the scope of every credential, and the store refuses "
                + "such requests"
        )
    }
}
