import BulwarkPolicy
import Foundation
import NIOHTTP1
import Testing

@testable import Bulwark

/// Which credentials a hop gets, without sockets: the attacher over a real store and jar.
@Suite("Credential attacher, without sockets")
struct CredentialAttacherTests {
    static let api = URL(string: "https://api.example.com/v1/items")!
    static let elsewhere = URL(string: "https://cdn.example.com/file")!

    func attacher(
        store: CredentialStore? = nil,
        jar: CookieJar? = nil,
        monitor: RecordingEventMonitor = RecordingEventMonitor()
    ) -> CredentialAttacher {
        var configuration = BulwarkClient.Configuration(trust: ServerTrustManager(patterns: []))
        configuration.credentials = store
        configuration.cookies = jar
        configuration.eventMonitor = monitor
        return CredentialAttacher(configuration: configuration)
    }

    @Test func nothingToAttachLeavesTheHeadersAlone() async throws {
        var headers: HTTPHeaders = ["Accept": "*/*"]
        let attacher = self.attacher()
        let attached = try await attacher.attach(
            to: &headers,
            for: Self.api,
            among: nil,
            host: "api.example.com",
            requestID: 1
        )
        #expect(attached == HopCredentials(sensitiveHeaderNames: attacher.sensitiveHeaderNames))
        #expect(headers == ["Accept": "*/*"])
    }

    @Test func theCallersOwnCredentialHeaderMarksTheConnection() async throws {
        var headers: HTTPHeaders = ["Authorization": "Bearer mine"]
        let attached = try await self.attacher().attach(
            to: &headers,
            for: Self.api,
            among: nil,
            host: "api.example.com",
            requestID: 1
        )
        #expect(attached.carriesCredentials)
        #expect(!attached.attachedFromStore)
        #expect(attached.entries.isEmpty)
    }

    /// The attack review of the HTTP/2 codec (helper-21, finding 4): the names sent never indexed on HTTP/2 were
    /// read from the store when the exchange began, after the wait for a connection; a sign-out in that wait dropped
    /// the store's names, not the request's headers, and the credential went out indexable. They are now taken when
    /// the hop is attached and carried with it.
    @Test func aHopsCredentialNamesStaySensitiveAfterASignOut() async throws {
        let store = CredentialStore()
        let id = store.add(
            try .header("X-Api-Key", value: SecretBytes(utf8: "key")),
            scope: try .hosts(["api.example.com"])
        )
        let attacher = self.attacher(store: store)
        var headers: HTTPHeaders = ["host": "api.example.com"]
        let attached = try await attacher.attach(
            to: &headers,
            for: Self.api,
            among: nil,
            host: "api.example.com",
            requestID: 1
        )
        store.remove(id)
        #expect(!attacher.sensitiveHeaderNames.contains("x-api-key"))
        #expect(attached.sensitiveHeaderNames.isSuperset(of: ["x-api-key", "authorization", "cookie"]))
        let codec = HTTP2StreamCodec(sensitiveNames: attached.sensitiveHeaderNames, host: "api.example.com")
        let fields = try codec.requestHeaders(
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: headers)
        )
        #expect(fields.first { $0.name == "x-api-key" }?.indexable == .neverIndexed)
    }

    @Test func anInScopeEntryIsAttachedAndRecorded() async throws {
        let store = CredentialStore()
        let id = store.add(try .bearer(SecretBytes(utf8: "token")), scope: try .hosts(["api.example.com"]))
        let key = store.add(
            try .header("X-Api-Key", value: SecretBytes(utf8: "key")),
            scope: try .hosts(["api.example.com"])
        )
        var headers: HTTPHeaders = ["Accept": "*/*"]
        let attached = try await self.attacher(store: store).attach(
            to: &headers,
            for: Self.api,
            among: nil,
            host: "api.example.com",
            requestID: 1
        )
        #expect(attached.entries == [id, key])
        #expect(Set(attached.headerNames) == ["authorization", "x-api-key"])
        #expect(attached.carriesCredentials)
        #expect(headers["authorization"] == ["Bearer token"])
        #expect(headers["x-api-key"] == ["key"])
        #expect(headers["accept"] == ["*/*"])
    }

    @Test func anEntryTheHopMayNotCarryIsWithheld() async throws {
        let store = CredentialStore()
        store.add(try .bearer(SecretBytes(utf8: "token")), scope: try .hosts(["api.example.com"]))
        var headers = HTTPHeaders()
        let attached = try await self.attacher(store: store).attach(
            to: &headers,
            for: Self.api,
            among: [],
            host: "api.example.com",
            requestID: 1
        )
        #expect(attached.withheldInScope)
        #expect(attached.entries.isEmpty)
        #expect(!attached.carriesCredentials)
        #expect(headers.isEmpty)
    }

    @Test func aStoreThatRefusesOutOfScopeRequestsFailsThemWithAnEvent() async throws {
        let store = CredentialStore(outOfScopeRequests: .refuse)
        store.add(try .bearer(SecretBytes(utf8: "token")), scope: try .hosts(["api.example.com"]))
        let monitor = RecordingEventMonitor()
        var headers = HTTPHeaders()
        do {
            _ = try await self.attacher(store: store, monitor: monitor).attach(
                to: &headers,
                for: Self.elsewhere,
                among: nil,
                host: "cdn.example.com",
                requestID: 9
            )
            Issue.record("a request outside every scope was allowed")
        } catch let error as BulwarkError {
            #expect(error.code == .outOfCredentialScope)
            #expect(!String(describing: error).contains("token"))
        }
        #expect(monitor.events.map(\.requestID) == [9])
        #expect(headers.isEmpty)
    }

    @Test func theJarsCookiesJoinTheCallersCookieField() async throws {
        let jar = CookieJar()
        jar.store(setCookieFields: ["session=abc; Secure; Path=/"], from: Self.api)
        var headers: HTTPHeaders = ["Cookie": "mine=1"]
        let attached = try await self.attacher(jar: jar).attach(
            to: &headers,
            for: Self.api,
            among: nil,
            host: "api.example.com",
            requestID: 1
        )
        #expect(headers["cookie"] == ["mine=1; session=abc"])
        #expect(attached.carriesCredentials)
        #expect(!attached.attachedFromStore)
    }
}
