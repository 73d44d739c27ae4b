import BulwarkPolicy
import Foundation
import NIOHTTP1

/// Where a request is on its way through redirects: the hop to send next, the chain so far, the record of every hop
/// decided, and what credentials the last hop carried.
///
/// A value with no I/O: the ``RequestExecutor`` sends what it says and reports back what each hop's response and
/// credentials were; the state decides, with the client's ``RedirectPolicy``, what comes next and which security
/// events say so. It is tested without sockets.
///
/// The hop it holds is the request as the caller made it, rewritten hop by hop by the policy: it never holds the
/// credentials and cookies the ``CredentialAttacher`` adds from the store and the jar, which are attached anew for
/// each hop's URL.
struct RedirectState: Sendable {
    /// What to do after a hop's response head.
    enum Next: Sendable {
        /// The response is the answer: not a redirect, or the policy does not follow redirects.
        case finish
        /// The policy refused the hop and the redirect response itself is the answer.
        case returnRedirect
        /// The policy refused the hop: the request fails with this error, once the response body is discarded.
        case fail(BulwarkError)
        /// Send this hop next (``request`` is now this one).
        case follow(BulwarkRequest)
    }

    let policy: RedirectPolicy
    /// The request's number in the events.
    let requestID: UInt64
    /// The hop to send, or sent last, without the credentials and cookies attached from the store and the jar.
    private(set) var request: BulwarkRequest
    /// The chain so far: its first host, the URLs requested, the hops followed, whether the origin changed.
    var chain: RedirectChain {
        // Before the first redirect, ``request`` is the request itself.
        self.startedChain ?? RedirectChain(startingAt: self.request.url)
    }
    /// The chain, once a response was a redirect: made then, so that a request answered without a redirect (nearly
    /// every one) does not read its URL once more for it (``RequestTarget`` has read it to send the request).
    private var startedChain: RedirectChain?
    /// Every redirect decided, oldest first, the refused one last.
    private(set) var history: [RedirectRecord] = []
    /// What the store attached to the hop sent last; nil before the first hop is sent.
    private(set) var carried: HopCredentials?
    /// The URL of the hop before ``request``, once a redirect was followed.
    private var previousURL: URL?

    init(request: BulwarkRequest, policy: RedirectPolicy, requestID: UInt64) {
        self.policy = policy
        self.requestID = requestID
        self.request = request
    }

    /// The store entries the next hop may carry: for a redirect hop, those the hop before it carried (a response
    /// chooses the hop's method, path and body, so it must never gain a credential the request did not already
    /// have, and once the chain left an entry's scope the entry is not attached again: the store analogue of Go's
    /// CVE-2024-45336). Nil, all entries, for the request itself.
    var allowedEntries: Set<CredentialStore.EntryID>? { self.carried?.entries }

    /// Records what the store attached to the hop just sent, and returns the events for the store credentials the
    /// previous hop carried and this one did not: because its URL is outside their scope, or because the hop before
    /// it did not carry them (the chain left their scope earlier, or never carried them).
    mutating func hopSent(_ credentials: HopCredentials) -> [SecurityEvent] {
        defer { self.carried = credentials }
        guard let previous = self.carried, let from = self.previousURL else { return [] }
        let to = self.request.url
        if credentials.withheldInScope {
            return [
                previous.entries.isEmpty
                    ? .credentialsWithheldAfterScopeExit(from: from, to: to, requestID: self.requestID)
                    : .credentialsNotCarriedBefore(from: from, to: to, requestID: self.requestID)
            ]
        }
        let leftBehind = previous.headerNames.filter { !credentials.headerNames.contains($0) }
        guard !leftBehind.isEmpty else { return [] }
        return [.credentialsLeftBehind(headers: leftBehind, from: from, to: to, requestID: self.requestID)]
    }

    /// Decides what follows a response with `status` and `locations` (its `Location` fields) to ``request``:
    /// the policy's decision is recorded in ``history`` and reported by the returned events.
    mutating func next(status: Int, locations: [String]) -> (next: Next, events: [SecurityEvent]) {
        guard self.policy.followsRedirects, RedirectPolicy.redirectStatuses.contains(status) else {
            return (.finish, [])
        }
        let current = self.request
        let chain = self.chain
        self.startedChain = chain
        let hop = RedirectHop(
            request: RedirectRequest(
                method: current.method.rawValue,
                url: current.url,
                headers: current.headers.map { HeaderField(name: $0.name, value: $0.value) },
                body: current.body.map { $0.isReplayable ? .replayable : .streamed } ?? .none
            ),
            status: status,
            locations: locations,
            chain: chain
        )
        let record = RedirectRecord(url: current.url, status: status, decision: self.policy.decide(hop))
        self.history.append(record)
        let events = record.securityEvents(requestID: self.requestID)
        switch record.decision {
        case .refuse(let refusal):
            // A streamed body cannot be sent again: the redirect response is the answer whatever the policy says.
            if refusal.reason.code == "body_not_replayable" {
                return (.returnRedirect, events)
            }
            if self.policy.onRefusal == .returnRedirectResponse {
                return (.returnRedirect, events)
            }
            let error = BulwarkError.redirectRefused(refusal, host: self.chain.initialHost, redirects: self.history)
            return (.fail(error), events)
        case .follow(let follow):
            self.startedChain?.record(follow)
            var headers = HTTPHeaders()
            headers.reserveCapacity(follow.headers.count)
            for field in follow.headers {
                headers.add(name: field.name, value: field.value)
            }
            self.previousURL = current.url
            self.request = BulwarkRequest(
                url: follow.url,
                method: HTTPMethod(rawValue: follow.method),
                headers: headers,
                body: follow.keepsBody ? current.body : nil
            )
            return (.follow(self.request), events)
        }
    }
}
