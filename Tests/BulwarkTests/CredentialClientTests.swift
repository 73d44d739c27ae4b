import Bulwark
import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import Testing

/// Counts a refresh provider's calls and hands out the tokens it is given, in turn.
final class TokenProvider: @unchecked Sendable {
    private let lock = NSLock()
    private var tokens: [String]
    private(set) var requests: [CredentialRefreshRequest] = []

    init(_ tokens: [String]) { self.tokens = tokens }

    var calls: Int { self.lock.withLock { self.requests.count } }
    var reasons: [String] { self.lock.withLock { self.requests.map(\.reason.description) } }

    func refresh(_ request: CredentialRefreshRequest) throws -> Credential {
        let token: String = try self.lock.withLock {
            self.requests.append(request)
            guard !self.tokens.isEmpty else { throw ProviderFailure(message: "no token left") }
            return self.tokens.removeFirst()
        }
        return try .bearer(SecretBytes(utf8: token))
    }
}

/// A provider's error whose text holds a secret: it must never reach an error description, log line or event.
struct ProviderFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { "provider failed: \(self.message)" }
}

/// Two HTTPS origins, `a.bulwark.test` and `b.bulwark.test`, on one chain, and a client reaching both.
struct TwoOrigins {
    static let a = "a.bulwark.test"
    static let b = "b.bulwark.test"
    let harness: RedirectHarness
    let serverA: TestHTTPSServer
    let serverB: TestHTTPSServer
    let client: BulwarkClient
    let monitor: RecordingEventMonitor

    static func with(
        alpn: [String] = ["h2", "http/1.1"],
        configure: (inout BulwarkClient.Configuration, _ portA: Int, _ portB: Int) throws -> Void,
        _ body: (TwoOrigins) async throws -> Void
    ) async throws {
        let harness = try RedirectHarness()
        let serverA = try await harness.server(alpn: alpn)
        let serverB = try await harness.server(alpn: alpn)
        let monitor = RecordingEventMonitor()
        var failure: (any Error)?
        do {
            var thrown: (any Error)?
            let client = try harness.client(hosts: [a, b], ports: [serverA.port, serverB.port], monitor: monitor) {
                configuration in
                configuration.redirects.allowedHosts = [try! HostPattern(b), try! HostPattern(a)]
                configuration.redirects.allowedPorts = [serverA.port, serverB.port]
                do { try configure(&configuration, serverA.port, serverB.port) } catch { thrown = error }
            }
            if let thrown { throw thrown }
            do {
                try await body(
                    TwoOrigins(
                        harness: harness,
                        serverA: serverA,
                        serverB: serverB,
                        client: client,
                        monitor: monitor
                    )
                )
            } catch {
                failure = error
            }
            await client.shutdown()
        } catch {
            failure = failure ?? error
        }
        try await serverA.shutdown()
        try await serverB.shutdown()
        if let failure { throw failure }
    }

    func url(_ host: String, _ path: String) -> String {
        RedirectHarness.url(host, host == Self.a ? self.serverA : self.serverB, path)
    }

    /// The headers `/headers` saw, for a GET of `path` on `host`.
    func headers(_ host: String, _ path: String = "/headers") async throws -> [String: String] {
        let (response, body) = try await Harness.get(self.client, self.url(host, path))
        #expect(response.status == .ok, "\(path): \(response.status)")
        return try RedirectHarness.headers(body)
    }
}

@Suite("Credentials, cookies and sign-out through the client, against local HTTPS servers")
struct CredentialClientTests {
    static let a = TwoOrigins.a
    static let b = TwoOrigins.b

    /// A store with one bearer token scoped to `a` on its port.
    static func store(
        token: String?,
        portA: Int,
        provider: TokenProvider? = nil,
        refuse: Bool = false
    ) throws
        -> CredentialStore
    {
        let store = CredentialStore(outOfScopeRequests: refuse ? .refuse : .sendWithoutCredentials)
        store.add(
            try token.map { try .bearer(SecretBytes(utf8: $0)) },
            scope: try .hosts([a], ports: [portA]),
            refresh: provider.map { provider in { @Sendable in try provider.refresh($0) } }
        )
        return store
    }

    @Test("credentials reach the in-scope server only; the provider is never called out of scope")
    func inScopeOnly() async throws {
        let provider = TokenProvider(["token-from-provider"])
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                configuration.credentials = try Self.store(token: nil, portA: portA, provider: provider)
            },
            { origins in
                let atB = try await origins.headers(Self.b)
                #expect(atB["authorization"] == nil)
                #expect(provider.calls == 0, "no refresh for an out-of-scope URL")
                let atA = try await origins.headers(Self.a)
                #expect(atA["authorization"] == "Bearer token-from-provider")
                #expect(provider.reasons == ["missing"])
                let againAtB = try await origins.headers(Self.b)
                #expect(againAtB["authorization"] == nil)
                #expect(provider.calls == 1)
                #expect(
                    origins.serverB.requests.allSatisfy {
                        $0.headers.allSatisfy { $0.name.lowercased() != "authorization" }
                    }
                )
            }
        )
    }

    @Test("via redirects: in scope the credential follows; out of scope it stays behind and is not re-attached")
    func redirects() async throws {
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                configuration.credentials = try Self.store(token: "scoped-token", portA: portA)
            },
            { origins in
                func authorization(_ request: RecordedRequest?) -> String? {
                    request?.headers.first { $0.name.lowercased() == "authorization" }?.value
                }
                // Same origin, in scope: every hop carries it.
                let sameOrigin = try await origins.headers(Self.a, RedirectHarness.redirect(302, to: "/headers"))
                #expect(sameOrigin["authorization"] == "Bearer scoped-token")
                #expect(origins.serverA.requests.map(authorization) == ["Bearer scoped-token", "Bearer scoped-token"])

                // In scope, then out: the out-of-scope hop goes without it, and an event says so.
                let toB = RedirectHarness.redirect(302, to: origins.url(Self.b, "/headers"))
                let atB = try await origins.headers(Self.a, toB)
                #expect(atB["authorization"] == nil)
                #expect(
                    authorization(origins.serverA.requests.last) == "Bearer scoped-token",
                    "the first hop carried it"
                )
                let stripped = origins.monitor.events.filter { $0.kind == .credentialStripped }
                #expect(stripped.map(\.reason) == ["out_of_scope"])
                #expect(stripped.first?.details[.headers]?.list == ["authorization"])
                #expect(stripped.first?.host == Self.b)

                // Out, then into scope: the server outside chose the path, so the credential is withheld.
                let toA = RedirectHarness.redirect(307, to: origins.url(Self.a, "/headers"))
                let backAtA = try await origins.headers(Self.b, toA)
                #expect(backAtA["authorization"] == nil)

                // In, out, and back in (Go's CVE-2024-45336 pattern): not re-attached.
                let roundTrip = RedirectHarness.redirect(
                    302,
                    to: origins.url(Self.b, RedirectHarness.redirect(302, to: origins.url(Self.a, "/headers")))
                )
                let again = try await origins.headers(Self.a, roundTrip)
                #expect(again["authorization"] == nil)
                #expect(authorization(origins.serverA.requests.last) == nil)
                let reasons = origins.monitor.events.filter { $0.kind == .credentialStripped }.map(\.reason)
                #expect(reasons == ["out_of_scope", "left_scope_earlier", "out_of_scope", "left_scope_earlier"])
                #expect(origins.serverB.requests.allSatisfy { authorization($0) == nil })
                let texts = origins.monitor.events.map(\.description)
                #expect(texts.allSatisfy { !$0.contains("scoped-token") })
            }
        )
    }

    @Test("a 401 to a request with store credentials refreshes them and retries once")
    func unauthorizedRefreshesOnce() async throws {
        let provider = TokenProvider(["fresh-token", "still-wrong"])
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                configuration.credentials = try Self.store(token: "stale-token", portA: portA, provider: provider)
            },
            { origins in
                let (response, body) = try await Harness.get(
                    origins.client,
                    origins.url(Self.a, "/auth/bearer/fresh-token")
                )
                #expect(response.status == .ok)
                #expect(body == "authorized")
                #expect(provider.reasons == ["rejected"])
                let sent = origins.serverA.requests.map {
                    $0.headers.first { $0.name.lowercased() == "authorization" }?.value
                }
                #expect(sent == ["Bearer stale-token", "Bearer fresh-token"])

                // Rejected again with the next token: one retry only, then the 401 is the answer.
                let (second, _) = try await Harness.get(origins.client, origins.url(Self.a, "/auth/bearer/never"))
                #expect(second.status == .unauthorized)
                #expect(origins.serverA.requests.count == 4)
                #expect(provider.reasons == ["rejected", "rejected"])

                // A 401 from a server the credential is not scoped to refreshes nothing.
                let (atB, _) = try await Harness.get(origins.client, origins.url(Self.b, "/auth/bearer/x"))
                #expect(atB.status == .unauthorized)
                #expect(provider.calls == 2)
                #expect(origins.serverB.requests.count == 1)
            }
        )
    }

    @Test("a provider failure fails the request before it is sent, with no secret in the error")
    func providerFailure() async throws {
        let provider = TokenProvider([])
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                configuration.credentials = try Self.store(token: nil, portA: portA, provider: provider)
            },
            { origins in
                let error = await Harness.expectError(.credentialRefreshFailed) {
                    _ = try await Harness.get(origins.client, origins.url(Self.a, "/hello"))
                }
                #expect(error?.host == Self.a)
                #expect(error.map { !String(describing: $0).contains("no token left") } == true)
                #expect(origins.serverA.acceptedConnections == 0)
            }
        )
    }

    @Test("the refuse policy refuses out-of-scope requests and hops before any connection")
    func refuseOutOfScope() async throws {
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                configuration.credentials = try Self.store(token: "t0ken", portA: portA, refuse: true)
            },
            { origins in
                let error = await Harness.expectError(.outOfCredentialScope) {
                    _ = try await Harness.get(origins.client, origins.url(Self.b, "/hello"))
                }
                #expect(error?.host == Self.b)
                let viaRedirect = await Harness.expectError(.outOfCredentialScope) {
                    _ = try await Harness.get(
                        origins.client,
                        origins.url(Self.a, RedirectHarness.redirect(302, to: origins.url(Self.b, "/hello")))
                    )
                }
                #expect(viaRedirect?.host == Self.b)
                #expect(origins.serverB.acceptedConnections == 0, "nothing reached the out-of-scope server")
                #expect(origins.serverA.requests.count == 1)
                let refused = origins.monitor.events.filter { $0.kind == .requestRefusedOutOfScope }
                #expect(refused.count == 2)
                #expect(refused.allSatisfy { $0.host == Self.b && $0.reason == "out_of_credential_scope" })
            }
        )
    }

    @Test("cookies: stored from responses, sent where RFC 6265 allows, across hosts of the domain only when asked")
    func cookieJar() async throws {
        try await TwoOrigins.with(
            configure: { configuration, _, _ in
                configuration.cookies = CookieJar()
            },
            { origins in
                let set =
                    "/set-cookie?" + RedirectHarness.encoded("host=only-a; Path=/") + "&"
                    + RedirectHarness.encoded("shared=for-domain; Domain=bulwark.test; Path=/") + "&"
                    + RedirectHarness.encoded("evil=x; Domain=attacker.test")
                _ = try await Harness.get(origins.client, origins.url(Self.a, set))
                #expect(origins.client.configuration.cookies?.count == 2)
                #expect(try await origins.headers(Self.a)["cookie"] == "host=only-a; shared=for-domain")
                #expect(try await origins.headers(Self.b)["cookie"] == "shared=for-domain")
                // A request's own Cookie header is kept, the jar's cookies follow it.
                let request = BulwarkRequest(url: origins.url(Self.b, "/headers"), headers: ["Cookie": "mine=1"])
                let response = try await origins.client.execute(request)
                let echoed = try RedirectHarness.headers(String(buffer: try await response.body.collect(upTo: 1 << 16)))
                #expect(echoed["cookie"] == "mine=1; shared=for-domain")
            }
        )
    }

    @Test(
        "sign-out wipes credentials and cookies and closes the connections that carried them",
        arguments: [["http/1.1"], ["h2"]]
    )
    func signOut(alpn: [String]) async throws {
        let provider = TokenProvider([])
        let credential = try Credential.bearer(SecretBytes(utf8: "session-one-token"))
        try await TwoOrigins.with(
            alpn: alpn,
            configure: { configuration, portA, _ in
                let store = CredentialStore()
                store.add(
                    credential,
                    scope: try .hosts([Self.a], ports: [portA]),
                    refresh: { try provider.refresh($0) }
                )
                configuration.credentials = store
                configuration.cookies = CookieJar()
            },
            { origins in
                _ = try await Harness.get(
                    origins.client,
                    origins.url(Self.a, "/set-cookie?" + RedirectHarness.encoded("sid=session-one-cookie; Path=/"))
                )
                let before = try await origins.headers(Self.a)
                #expect(before["authorization"] == "Bearer session-one-token")
                #expect(before["cookie"] == "sid=session-one-cookie")
                _ = try await origins.headers(Self.b)  // a connection that never carried a credential
                #expect(origins.serverA.acceptedConnections == 1)
                #expect(origins.serverB.acceptedConnections == 1)

                let summary = await origins.client.signOut()
                #expect(summary.credentials == 1)
                #expect(summary.cookies == 1)
                #expect(summary.connectionsClosed == 1)
                #expect(credential.isWiped, "the token's bytes were zeroized")
                let events = origins.monitor.events.filter { $0.kind == .signOut }
                #expect(events.count == 1)
                #expect(events.first?.details == [.credentials: 1, .cookies: 1, .connectionsClosed: 1])

                let after = try await origins.headers(Self.a)
                #expect(after["authorization"] == nil)
                #expect(after["cookie"] == nil)
                #expect(provider.calls == 0, "the old session's provider is forgotten")
                #expect(origins.serverA.acceptedConnections == 2, "a new connection after sign-out")
                _ = try await origins.headers(Self.b)
                #expect(origins.serverB.acceptedConnections == 1, "the connection without credentials stays")
            }
        )
    }

    @Test("a busy connection that carried credentials closes when its response ends after sign-out")
    func busyConnectionClosedAfterSignOut() async throws {
        try await TwoOrigins.with(
            alpn: ["http/1.1"],
            configure: { configuration, portA, _ in
                configuration.credentials = try Self.store(token: "busy-token", portA: portA)
            },
            { origins in
                let response = try await origins.client.execute(
                    BulwarkRequest(url: origins.url(Self.a, "/bytes/33554432"))
                )
                let summary = await origins.client.signOut()
                #expect(summary.connectionsClosed == 0, "the connection is busy")
                _ = try await response.body.collect(upTo: 64 << 20)
                let after = try await origins.headers(Self.a)
                #expect(after["authorization"] == nil)
                #expect(origins.serverA.acceptedConnections == 2)
            }
        )
    }

    /// Found by the attack review of the GOAWAY change (helper-28; older than it): sign-out closes an HTTP/2
    /// connection that carried credentials, and a GET in flight on it was then sent once more, old `Authorization`
    /// and all, on a new connection (the retry on a stale connection). A request whose credentials a sign-out ended is
    /// never sent again.
    @Test("over HTTP/2, a request in flight at sign-out is not sent again with its credentials")
    func inFlightRequestNotResentAfterSignOut() async throws {
        try await TwoOrigins.with(
            alpn: ["h2"],
            configure: { configuration, portA, _ in
                configuration.credentials = try Self.store(token: "in-flight-token", portA: portA)
            },
            { origins in
                _ = try await origins.headers(Self.a)
                let slow = Task {
                    try await origins.client.execute(BulwarkRequest(url: origins.url(Self.a, "/slow/1500")))
                }
                while !origins.serverA.requests.contains(where: { $0.path == "/slow/1500" }) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let summary = await origins.client.signOut()
                #expect(summary.connectionsClosed == 1)
                let result = await slow.result
                #expect(throws: BulwarkError.self) { try result.get() }
                #expect(origins.serverA.requests.filter { $0.path == "/slow/1500" }.count == 1)
                #expect(origins.serverA.acceptedConnections == 1)
            }
        )
    }

    @Test("over HTTP/2, credential headers are sent never indexed, so HPACK keeps no copy of them")
    func http2NeverIndexed() async throws {
        try await TwoOrigins.with(
            alpn: ["h2"],
            configure: { configuration, portA, _ in
                let store = CredentialStore()
                let scope = try CredentialScope.hosts([Self.a], ports: [portA])
                store.add(try .bearer(SecretBytes(utf8: "h2-token")), scope: scope)
                store.add(try .header("X-Auth-Token", value: SecretBytes(utf8: "h2-api-key")), scope: scope)
                configuration.credentials = store
                configuration.cookies = CookieJar()
            },
            { origins in
                _ = try await Harness.get(
                    origins.client,
                    origins.url(Self.a, "/set-cookie?" + RedirectHarness.encoded("sid=h2-cookie; Path=/"))
                )
                let request = BulwarkRequest(
                    url: origins.url(Self.a, "/headers"),
                    headers: ["Accept": "application/json", "Proxy-Authorization": "Basic eDp5"]
                )
                _ = try await origins.client.execute(request).body.collect(upTo: 1 << 16)
                let fields = try #require(origins.serverA.http2HeaderIndexing.last)
                let neverIndexed = Set(fields.filter(\.neverIndexed).map(\.name))
                #expect(neverIndexed == ["authorization", "x-auth-token", "cookie", "proxy-authorization"])
                #expect(fields.contains { $0.name == "accept" && !$0.neverIndexed })
                #expect(fields.contains { $0.name == ":path" && !$0.neverIndexed })
            }
        )
    }

    @Test("no secret in any log line, event, error description or dump")
    func noSecretAnywhere() async throws {
        let secrets = ["S3CRET-TOKEN-1", "S3CRET-TOKEN-2", "S3CRET-COOKIE", "S3CRET-PROVIDER-TEXT", "S3CRET-BASIC"]
        let handler = InMemoryLogHandler()
        let logger = Logger(label: "bulwark.test") { _ in handler }
        let recording = RecordingEventMonitor()
        var texts: [String] = []
        try await TwoOrigins.with(
            configure: { configuration, portA, portB in
                configuration.eventMonitor = CompositeEventMonitor([recording, LoggingEventMonitor(logger: logger)])
                let store = CredentialStore()
                store.add(
                    try .bearer(SecretBytes(utf8: secrets[0])),
                    scope: try .hosts([Self.a], ports: [portA]),
                    refresh: { _ in try .bearer(SecretBytes(utf8: secrets[1])) }
                )
                store.add(
                    try .basic(username: "user", password: SecretBytes(utf8: secrets[4])),
                    scope: try .under("https://\(Self.b):\(portB)/auth/")
                )
                store.add(
                    nil,
                    scope: try .under("https://\(Self.b):\(portB)/fail/"),
                    refresh: { _ in
                        throw ProviderFailure(message: secrets[3])
                    }
                )
                configuration.credentials = store
                configuration.cookies = CookieJar()
            },
            { origins in
                let client = origins.client
                _ = try await Harness.get(
                    client,
                    origins.url(
                        Self.a,
                        "/set-cookie?" + RedirectHarness.encoded("sid=\(secrets[2]); Domain=bulwark.test")
                    )
                )
                _ = try await Harness.get(client, origins.url(Self.a, "/auth/bearer/\(secrets[1].lowercased())"))
                _ = try await Harness.get(
                    client,
                    origins.url(Self.a, RedirectHarness.redirect(302, to: origins.url(Self.b, "/auth/x")))
                )
                if let error = await Harness.expectError(
                    .credentialRefreshFailed,
                    {
                        _ = try await Harness.get(client, origins.url(Self.b, "/fail/now"))
                    }
                ) {
                    texts += [String(describing: error), String(reflecting: error), dumped(error)]
                }
                texts += [
                    dumped(client.configuration), dumped(client.configuration.credentials!),
                    dumped(client.configuration.cookies!), String(describing: client.configuration.credentials!),
                    String(describing: client.configuration.cookies!),
                ]
                let summary = await client.signOut()
                texts.append(String(describing: summary))
                texts += recording.events.flatMap {
                    [$0.description, $0.message] + $0.details.map { "\($0.key)=\($0.value)" }
                }
                texts += handler.entries.map { "\($0.message) \($0.metadata)" }
                // The secrets did go where they are scoped: the check is not vacuous.
                let sentToA = origins.serverA.requests.flatMap(\.headers).map(\.value)
                #expect(sentToA.contains("Bearer \(secrets[0])"))
                #expect(sentToA.contains { $0.contains(secrets[2]) })
            }
        )
        #expect(handler.entries.count >= 4)
        for text in texts {
            for secret in secrets {
                #expect(!text.contains(secret), "\(secret) in: \(text)")
            }
        }
    }
}

/// `dump` output as a string.
func dumped(_ value: Any) -> String {
    var output = ""
    dump(value, to: &output)
    return output
}
