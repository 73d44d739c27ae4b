import BulwarkPolicy
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Bulwark

/// Regression tests for the client-side defects of the adversarial review (issue 16): each one is the attack or the
/// race as it was found, against local HTTPS servers.
@Suite("Hardening: credentials across redirects, sign-out races, retries, upgrades and limits")
struct HardeningClientTests {
    static let a = TwoOrigins.a

    func authorization(_ request: RecordedRequest?) -> String? {
        request?.headers.first { $0.name.lowercased() == "authorization" }?.value
    }

    /// Defect 3: credential A is scoped to `/redirect/`, credential B to `/headers`. A POST in A's scope answered
    /// with `307 Location: /headers` must not pick up B's secret: the hop was chosen by the response, and the
    /// request never carried B.
    @Test("a redirect hop gets no store credential that the previous hop did not carry")
    func redirectCarriesNoNewCredential() async throws {
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                let store = CredentialStore()
                store.add(
                    try .bearer(SecretBytes(utf8: "token-for-redirect-scope")),
                    scope: try .under("https://\(Self.a):\(portA)/redirect/")
                )
                store.add(
                    try .bearer(SecretBytes(utf8: "token-for-headers-scope")),
                    scope: try .under("https://\(Self.a):\(portA)/headers")
                )
                configuration.credentials = store
            },
            { origins in
                let request = BulwarkRequest(
                    url: origins.url(Self.a, RedirectHarness.redirect(307, to: "/headers")),
                    method: .POST,
                    body: .bytes(ByteBuffer(string: "purge everything"))
                )
                let response = try await origins.client.execute(request)
                let body = try await response.body.collect(upTo: 1 << 20)
                let seen = try RedirectHarness.headers(String(buffer: body))
                #expect(response.status == .ok)
                #expect(seen["authorization"] == nil, "the hop carried \(seen["authorization"] ?? "")")
                let sent = origins.serverA.requests.map { self.authorization($0) }
                #expect(sent == ["Bearer token-for-redirect-scope", nil])
                #expect(origins.serverA.requests.last?.method == "POST", "307 keeps the method and body")
                let stripped = origins.monitor.events.filter { $0.kind == .credentialStripped }
                #expect(stripped.map(\.reason) == ["not_carried_before"])
                #expect(origins.monitor.events.allSatisfy { !$0.description.contains("token-for") })
            }
        )
    }

    /// Defect 3, the rule's other side: a hop into the scope of a credential the previous hop carried keeps it.
    @Test("a redirect hop keeps a store credential that the previous hop carried, while in its scope")
    func redirectKeepsCarriedCredential() async throws {
        try await TwoOrigins.with(
            configure: { configuration, portA, _ in
                let store = CredentialStore()
                store.add(try .bearer(SecretBytes(utf8: "origin-token")), scope: try .hosts([Self.a], ports: [portA]))
                configuration.credentials = store
            },
            { origins in
                let seen = try await origins.headers(Self.a, RedirectHarness.redirect(307, to: "/headers"))
                #expect(seen["authorization"] == "Bearer origin-token")
            }
        )
    }

    /// Defect 8: a lease taken before `signOut()` and marked as carrying credentials afterwards must not keep an
    /// HTTP/2 connection in the pool for the next session.
    @Test("an HTTP/2 connection marked with an old session's credentials after sign-out is not reused")
    func http2LeaseMarkedAfterSignOut() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(alpn: ["h2"]) { server, client, _ in
            let url = RedirectHarness.url(RedirectHarness.originHost, server, "/hello")
            _ = try await Harness.get(client, url)
            let key = ConnectionPool.Key(scheme: "https", host: RedirectHarness.originHost, port: server.port)
            // A request of the old session takes its lease and captures the epoch...
            let epoch = client.pool.credentialEpoch
            guard case .leased(let lease) = try await client.pool.acquire(key) else {
                Issue.record("expected the pooled HTTP/2 connection")
                return
            }
            // ...sign-out runs (the connection carried nothing yet, so it stays)...
            await client.signOut()
            // ...and only then is the connection marked with the old session's credentials.
            lease.connection.markCarriedCredentials(epoch: epoch)
            _ = try await Harness.get(client, url)
            let connections = server.requests.map(\.connectionID)
            #expect(connections.count == 2)
            #expect(connections.first != connections.last, "the next session reused \(connections)")
        }
    }

    /// Defect 11: a POST on a reused connection that the server closes after reading it must not be sent again.
    @Test("a non-idempotent request is not resent after the connection closed under it; an idempotent one is")
    func nonIdempotentRequestNotResent() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(alpn: ["http/1.1"]) { server, client, _ in
            let hello = RedirectHarness.url(RedirectHarness.originHost, server, "/hello")
            let drop = RedirectHarness.url(RedirectHarness.originHost, server, "/drop")
            _ = try await Harness.get(client, hello)
            await Harness.expectError(.remoteConnectionClosed) {
                _ = try await client.execute(
                    BulwarkRequest(url: drop, method: .POST, body: .bytes(ByteBuffer(string: "pay 100")))
                )
            }
            #expect(server.requests.filter { $0.method == "POST" }.count == 1, "the POST was sent again")

            _ = try await Harness.get(client, hello)
            await Harness.expectError(.remoteConnectionClosed) {
                _ = try await client.execute(BulwarkRequest(url: drop, method: .GET))
            }
            #expect(server.requests.filter { $0.method == "GET" && $0.uri == "/drop" }.count == 2)
        }
    }

    /// The retry is an option: off, nothing is resent.
    @Test("with retries off, not even an idempotent request is resent")
    func retriesOff() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(
            alpn: ["http/1.1"],
            configure: { $0.retriesRequestsOnStaleConnections = false },
            { server, client, _ in
                _ = try await Harness.get(client, RedirectHarness.url(RedirectHarness.originHost, server, "/hello"))
                await Harness.expectError(.remoteConnectionClosed) {
                    _ = try await Harness.get(client, RedirectHarness.url(RedirectHarness.originHost, server, "/drop"))
                }
                #expect(server.requests.filter { $0.uri == "/drop" }.count == 1)
            }
        )
    }

    /// A `101 Switching Protocols` answer hands the connection to another protocol: it must never serve another
    /// request of the pool.
    @Test("a 101 Switching Protocols response does not return its connection to the pool")
    func switchingProtocolsNotPooled() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(
            alpn: ["http/1.1"],
            configure: { $0.timeouts.idleRead = .seconds(2) },
            { server, client, _ in
                let response = try await client.execute(
                    BulwarkRequest(url: RedirectHarness.url(RedirectHarness.originHost, server, "/upgrade"))
                )
                #expect(response.status == .switchingProtocols)
                _ = try? await response.body.collect(upTo: 1024)
                _ = try await Harness.get(client, RedirectHarness.url(RedirectHarness.originHost, server, "/hello"))
                let connections = server.requests.map(\.connectionID)
                #expect(connections.count == 2)
                #expect(connections.first != connections.last, "the upgraded connection served \(connections)")
            }
        )
    }

    /// Decompression needs an absolute cap per response, not only a ratio: with the ratio limit raised (a user who
    /// receives highly compressible data), an 80 MiB inflation must still stop at the default size cap.
    @Test("decompression stops at an absolute size, whatever the ratio limit allows")
    func decompressionAbsoluteCap() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(
            configure: { $0.decompression?.maximumRatio = 5000 },
            { server, client, _ in
                let url = RedirectHarness.url(RedirectHarness.originHost, server, "/bomb/\(80 << 20)")
                let error = await Harness.expectError(.decompressionLimitExceeded) {
                    let response = try await client.execute(BulwarkRequest(url: url))
                    var total = 0
                    for try await chunk in response.body { total += chunk.readableBytes }
                    Issue.record("read \(total) decompressed bytes")
                }
                #expect(error?.description.contains("64 MiB") == true, "\(String(describing: error))")
            }
        )
    }

    /// Found by the fault-injection soak: an HTTP/2 stream reset (RST_STREAM) or ended by GOAWAY mid-body was
    /// reported as an invalid response; the server went away, the response was not malformed.
    @Test("an HTTP/2 stream reset or GOAWAY mid-body is remote_connection_closed", arguments: ["rst-stream", "goaway"])
    func http2StreamEndIsConnectionClosed(fault: String) async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(alpn: ["h2"]) { server, client, _ in
            let url = RedirectHarness.url(RedirectHarness.originHost, server, "/fault/\(fault)-mid-body")
            await Harness.expectError(.remoteConnectionClosed) {
                let response = try await client.execute(BulwarkRequest(url: url))
                _ = try await response.body.collect(upTo: 16 << 20)
            }
        }
    }

    /// A server draining an HTTP/2 connection sends GOAWAY and may keep the connection open while its streams finish
    /// (RFC 9113 section 6.8; nginx does so after `keepalive_requests`): the client must open no new stream on it.
    /// Before, the pool handed the connection to the next request, NIOHTTP2 refused its stream's HEADERS and failed
    /// only their write, and the request waited for its read timeout (30 s: read_timeout), a POST as well as a GET.
    @Test("requests after the server's GOAWAY go to a new HTTP/2 connection", arguments: ["GET", "POST"])
    func http2GoAwayMovesRequestsToANewConnection(method: String) async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(alpn: ["h2"]) { server, client, _ in
            let (first, firstBody) = try await Harness.get(
                client,
                RedirectHarness.url(RedirectHarness.originHost, server, "/goaway")
            )
            #expect(first.status == .ok && firstBody == "going away")
            let response = try await client.execute(
                BulwarkRequest(
                    url: RedirectHarness.url(RedirectHarness.originHost, server, "/echo"),
                    method: HTTPMethod(rawValue: method),
                    body: method == "POST" ? .string("after goaway") : nil
                )
            )
            let body = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .ok)
            #expect(String(buffer: body) == (method == "POST" ? "after goaway" : ""))
            #expect(server.acceptedConnections == 2, "the request after GOAWAY opens a new connection")
        }
    }

    /// A stream the server refused with GOAWAY was not processed (RFC 9113 sections 6.8 and 8.7): it may be sent
    /// again whatever its method. Before, a POST whose stream the server's GOAWAY refused failed
    /// (remote_connection_closed, REFUSED_STREAM), as a request the server may have acted on.
    @Test("a POST refused by the server's GOAWAY is sent again on a new HTTP/2 connection")
    func http2RefusedStreamIsSentAgain() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(alpn: ["h2"]) { server, client, _ in
            _ = try await Harness.get(client, RedirectHarness.url(RedirectHarness.originHost, server, "/hello"))
            let response = try await client.execute(
                BulwarkRequest(
                    url: RedirectHarness.url(RedirectHarness.originHost, server, "/goaway-refused"),
                    method: .POST,
                    body: .string("once")
                )
            )
            let body = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .ok && String(buffer: body) == "served")
            #expect(server.acceptedConnections == 2)
            #expect(server.requests.map(\.path) == ["/hello", "/goaway-refused", "/goaway-refused"])
        }
    }

    /// A server that refuses every stream: the request is sent again at most four times (helper-28), and each
    /// connection takes two refusals before it drains (as in OkHttp), so five attempts go over three connections.
    @Test("a request every stream of which the server refuses fails after four resends over three connections")
    func http2RefusedStreamsAreBounded() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(alpn: ["h2"]) { server, client, _ in
            let error = await Harness.expectError(.remoteConnectionClosed) {
                _ = try await client.execute(
                    BulwarkRequest(
                        url: RedirectHarness.url(RedirectHarness.originHost, server, "/refused-stream"),
                        method: .POST,
                        body: .string("refused")
                    )
                )
            }
            #expect(error?.description.contains("REFUSED_STREAM") == true, "\(String(describing: error))")
            #expect(server.requests.count == 5)
            #expect(server.acceptedConnections == 3)
        }
    }

    /// HTTP/2 server push is never wanted: the client says so in its first SETTINGS (RFC 9113 section 6.5.2).
    @Test("the HTTP/2 client sends SETTINGS_ENABLE_PUSH = 0")
    func http2DisablesPush() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(alpn: ["h2"]) { server, client, _ in
            _ = try await Harness.get(client, RedirectHarness.url(RedirectHarness.originHost, server, "/hello"))
            let settings = server.http2ClientSettings
            #expect(settings.count == 1)
            #expect(settings.first?[0x2] == 0, "SETTINGS_ENABLE_PUSH: \(String(describing: settings.first?[0x2]))")
        }
    }
}

/// The regression tests whose races are set up with time: their own `swift test` process (see scripts/test), so
/// that CPU-heavy suites cannot stretch their clocks.
@Suite("Hardening: deadlines, cancellation, keep-alive timers and the sign-out cookie race", .tags(.timing))
struct HardeningTimingTests {
    /// Defect 4: a response whose head arrives after `signOut()` must not store its `Set-Cookie` in the jar.
    @Test("a response started before sign-out stores no cookie in the next session's jar")
    func cookieAfterSignOut() async throws {
        let jar = CookieJar()
        let harness = try RedirectHarness()
        try await harness.withOrigin(
            configure: { $0.cookies = jar },
            { server, client, monitor in
                let url = RedirectHarness.url(
                    RedirectHarness.originHost,
                    server,
                    "/set-cookie/1500?session=old-session"
                )
                let inFlight = Task { try await Harness.get(client, url) }
                while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
                await client.signOut()
                let (response, _) = try await inFlight.value
                #expect(response.status == .ok)
                #expect(jar.count == 0, "the old session's cookie was stored after sign-out")
                let seen = try RedirectHarness.headers(
                    try await Harness.get(client, RedirectHarness.url(RedirectHarness.originHost, server, "/headers")).1
                )
                #expect(seen["cookie"] == nil)
                #expect(!monitor.events.contains { $0.description.contains("old-session") })
            }
        )
    }

    // Defect 9 (the read timer counts from the request, not from the connection's last read) is checked on the
    // event loop's clock, without waiting: HTTPExchangeHandlerTimerTests.

    /// Defect 10: the request's deadline covers the TLS handshake.
    @Test("the whole-request deadline covers the TLS handshake")
    func deadlineCoversHandshake() async throws {
        let harness = try RedirectHarness()
        let server = try await TestHTTPSServer.start(
            configuration: .init(
                chain: [harness.leaf.certificate, harness.intermediate.certificate],
                privateKey: harness.leaf.privateKey,
                behavior: .stallHandshake
            )
        )
        let client = try harness.client(hosts: [RedirectHarness.originHost], ports: [server.port])
        let started = ContinuousClock.now
        await Harness.expectError(.deadlineExceeded) {
            _ = try await client.execute(
                BulwarkRequest(url: RedirectHarness.url(RedirectHarness.originHost, server, "/hello")),
                timeout: .seconds(1)
            )
        }
        #expect(ContinuousClock.now - started < .seconds(5), "the 10 s handshake timeout ran instead")
        await client.shutdown()
        try await server.shutdown()
    }

    /// Defect 10: the deadline and cancellation cover waiting for a pooled connection.
    @Test("the deadline and task cancellation cover waiting for a pooled connection")
    func deadlineAndCancellationCoverPoolWait() async throws {
        let harness = try RedirectHarness()
        try await harness.withOrigin(
            alpn: ["http/1.1"],
            configure: { $0.pool.maximumConnectionsPerHost = 1 },
            { server, client, _ in
                let slow = RedirectHarness.url(RedirectHarness.originHost, server, "/slow/4000")
                let hello = RedirectHarness.url(RedirectHarness.originHost, server, "/hello")
                let holder = Task { try await Harness.get(client, slow) }
                while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(20)) }

                await Harness.expectError(.deadlineExceeded) {
                    _ = try await client.execute(BulwarkRequest(url: hello), timeout: .milliseconds(300))
                }
                let waiter = Task { try await client.execute(BulwarkRequest(url: hello)) }
                try await Task.sleep(for: .milliseconds(200))
                waiter.cancel()
                await Harness.expectError(.cancelled) { _ = try await waiter.value }
                // Both ended while the connection was still busy with the slow request.
                #expect(server.requests.count == 1, "a waiting request was sent: \(server.requests.map(\.uri))")
                _ = try await holder.value
                // The pool is intact: the connection serves the next request.
                _ = try await Harness.get(client, hello)
            }
        )
    }
}
