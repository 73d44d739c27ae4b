import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Bulwark

/// The redirect state on its own: what follows each response, the history and the credential-scope exits, with no
/// socket, server or client.
@Suite("Redirect state, without sockets")
struct RedirectStateTests {
    static let start = URL(string: "https://api.example.com/start")!

    func state(
        _ request: BulwarkRequest = BulwarkRequest(url: RedirectStateTests.start),
        policy: RedirectPolicy = RedirectPolicy()
    ) -> RedirectState {
        RedirectState(request: request, policy: policy, requestID: 7)
    }

    @Test func aResponseThatIsNotARedirectFinishes() {
        var state = self.state()
        let (next, events) = state.next(status: 200, locations: [])
        guard case .finish = next else {
            Issue.record("expected finish, got \(next)")
            return
        }
        #expect(events.isEmpty)
        #expect(state.history.isEmpty)
        #expect(state.request.url == Self.start)
    }

    @Test func aPolicyThatDoesNotFollowFinishesOnARedirect() {
        var state = self.state(policy: .doNotFollow)
        let (next, events) = state.next(status: 302, locations: ["/elsewhere"])
        guard case .finish = next else {
            Issue.record("expected finish, got \(next)")
            return
        }
        #expect(events.isEmpty)
        #expect(state.history.isEmpty)
    }

    @Test func aSameOriginRedirectIsFollowedAndRecorded() {
        var request = BulwarkRequest(url: Self.start, method: .POST, body: .string("form"))
        request.headers.add(name: "Accept", value: "application/json")
        var state = self.state(request)
        let (next, events) = state.next(status: 303, locations: ["/next?x=1"])
        guard case .follow(let hop) = next else {
            Issue.record("expected follow, got \(next)")
            return
        }
        #expect(hop.url.absoluteString == "https://api.example.com/next?x=1")
        #expect(hop.method == .GET)
        #expect(hop.body == nil)
        #expect(hop.headers["accept"] == ["application/json"])
        #expect(state.request.url == hop.url)
        #expect(state.history.count == 1)
        #expect(state.history.first?.status == 303)
        #expect(state.history.first?.url == Self.start)
        #expect(state.chain.followedCount == 1)
        #expect(events.map(\.kind) == [.redirectFollowed])
        #expect(events.allSatisfy { $0.requestID == 7 })
    }

    @Test func aRefusedRedirectFailsWithTheHistory() {
        var state = self.state()
        let (next, events) = state.next(status: 302, locations: ["https://evil.example.net/"])
        guard case .fail(let error) = next else {
            Issue.record("expected fail, got \(next)")
            return
        }
        #expect(error.code == .redirectRefused)
        #expect(error.host == "api.example.com")
        #expect(error.redirects.count == 1)
        #expect(error.redirectRefusal != nil)
        #expect(events.map(\.kind).contains(.redirectRefused))
        #expect(state.request.url == Self.start)
    }

    @Test func aRefusedRedirectIsReturnedWhenThePolicySaysSo() {
        var policy = RedirectPolicy()
        policy.onRefusal = .returnRedirectResponse
        var state = self.state(policy: policy)
        let (next, _) = state.next(status: 302, locations: ["https://evil.example.net/"])
        guard case .returnRedirect = next else {
            Issue.record("expected returnRedirect, got \(next)")
            return
        }
        #expect(state.history.count == 1)
    }

    @Test func aStreamedBodyIsNeverReplayedTheRedirectIsReturned() {
        let request = BulwarkRequest(
            url: Self.start,
            method: .POST,
            body: .stream { writer in try await writer.write(ByteBuffer(string: "once")) }
        )
        var state = self.state(request)
        let (next, _) = state.next(status: 307, locations: ["/again"])
        guard case .returnRedirect = next else {
            Issue.record("expected returnRedirect, got \(next)")
            return
        }
        #expect(state.history.count == 1)
    }

    @Test func theHopLimitEndsTheChain() {
        var state = self.state(policy: RedirectPolicy(maximumHops: 2))
        for number in 1...2 {
            let (next, _) = state.next(status: 302, locations: ["/hop/\(number)"])
            guard case .follow = next else {
                Issue.record("hop \(number): expected follow, got \(next)")
                return
            }
        }
        let (next, _) = state.next(status: 302, locations: ["/hop/3"])
        guard case .fail(let error) = next else {
            Issue.record("expected fail, got \(next)")
            return
        }
        #expect(error.redirects.count == 3)
    }

    @Test func theFirstHopMayCarryEveryEntryAndLaterHopsOnlyWhatTheHopBeforeCarried() throws {
        let store = CredentialStore()
        let id = store.add(try .bearer(SecretBytes(utf8: "token")), scope: try .hosts(["api.example.com"]))
        var state = self.state()
        #expect(state.allowedEntries == nil)
        let first = HopCredentials(entries: [id], headerNames: ["authorization"], carriesCredentials: true)
        #expect(state.hopSent(first).isEmpty)
        #expect(state.allowedEntries == [id])
        _ = state.next(status: 302, locations: ["/next"])
        // The next hop carried the same credential: nothing to report.
        #expect(state.hopSent(first).isEmpty)
        #expect(state.allowedEntries == [id])
    }

    @Test func aHopThatLeavesTheScopeReportsTheCredentialsLeftBehind() throws {
        let store = CredentialStore()
        let id = store.add(try .bearer(SecretBytes(utf8: "token")), scope: try .hosts(["api.example.com"]))
        var state = self.state(policy: try RedirectPolicy(allowing: ["api.example.com", "cdn.example.com"]))
        _ = state.hopSent(HopCredentials(entries: [id], headerNames: ["authorization"], carriesCredentials: true))
        _ = state.next(status: 302, locations: ["https://cdn.example.com/file"])
        let events = state.hopSent(HopCredentials())
        #expect(events.map(\.kind) == [.credentialStripped])
        #expect(events.first?.reason == "out_of_scope")
        #expect(state.allowedEntries == [])
        // Back in scope: the entry is withheld, since the hop before did not carry it.
        _ = state.next(status: 302, locations: ["https://api.example.com/back"])
        let back = state.hopSent(HopCredentials(withheldInScope: true))
        #expect(back.map(\.reason) == ["left_scope_earlier"])
    }

    @Test func anEntryTheRequestNeverCarriedIsReportedAsNotCarriedBefore() throws {
        let store = CredentialStore()
        let a = store.add(try .bearer(SecretBytes(utf8: "a")), scope: try .under("https://api.example.com/start"))
        var state = self.state()
        _ = state.hopSent(HopCredentials(entries: [a], headerNames: ["authorization"], carriesCredentials: true))
        _ = state.next(status: 302, locations: ["/admin"])
        let events = state.hopSent(HopCredentials(withheldInScope: true))
        #expect(events.map(\.reason) == ["not_carried_before"])
    }
}
