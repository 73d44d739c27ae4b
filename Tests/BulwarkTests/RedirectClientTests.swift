import Bulwark
@_spi(Insecure) import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite("Redirects through the client, against local HTTPS servers")
struct RedirectClientTests {
    let harness: RedirectHarness
    static let a = RedirectHarness.originHost
    static let b = "b.bulwark.test"
    static let evil = "www.attacker.test"

    init() throws {
        self.harness = try RedirectHarness()
    }

    @Test("the client follows redirects through the default policy")
    func defaultConfiguration() throws {
        let configuration = BulwarkClient.Configuration(trust: ServerTrustManager(patterns: []))
        #expect(configuration.redirects.followsRedirects)
        #expect(configuration.redirects.maximumHops == 5)
        #expect(configuration.redirects.onRefusal == .throw)
        #expect(configuration.redirects.allowedHosts.isEmpty)
    }

    @Test("a same-origin chain is followed on one connection", arguments: [["http/1.1"], ["h2"]])
    func sameOriginChain(alpn: [String]) async throws {
        try await self.harness.withOrigin(alpn: alpn) { server, client, monitor in
            let path = RedirectHarness.redirect(
                302,
                to: RedirectHarness.redirect(301, to: RedirectHarness.redirect(308, to: "../hello#top"))
            )
            let (response, body) = try await Harness.get(client, RedirectHarness.url(Self.a, server, path))
            #expect(response.status == .ok)
            #expect(body == "hello")
            #expect(response.url.absoluteString == "https://\(Self.a):\(server.port)/hello#top")
            #expect(response.redirects.map(\.status) == [302, 301, 308])
            #expect(response.redirects.map(\.decision.shortDescription) == ["follow", "follow", "follow"])
            #expect(server.requests.map(\.path) == ["/redirect/302", "/redirect/301", "/redirect/308", "/hello"])
            #expect(server.acceptedConnections == 1, "redirect bodies are drained, the connection is reused")
            let events = monitor.events.filter { $0.kind == .redirectFollowed }
            #expect(events.count == 3)
            #expect(Set(events.compactMap(\.requestID)).count == 1, "one request id for the whole chain")
        }
    }

    struct MethodCase: Sendable, CustomTestStringConvertible {
        let status: Int
        let method: HTTPMethod
        let expectedMethod: String
        let expectedBody: String
        var testDescription: String { "\(self.status) \(self.method.rawValue)" }
    }

    @Test(
        "methods and bodies per status",
        arguments: [
            MethodCase(status: 301, method: .POST, expectedMethod: "GET", expectedBody: ""),
            MethodCase(status: 302, method: .POST, expectedMethod: "GET", expectedBody: ""),
            MethodCase(status: 303, method: .POST, expectedMethod: "GET", expectedBody: ""),
            MethodCase(status: 303, method: .PUT, expectedMethod: "GET", expectedBody: ""),
            MethodCase(status: 307, method: .POST, expectedMethod: "POST", expectedBody: "payload"),
            MethodCase(status: 308, method: .PUT, expectedMethod: "PUT", expectedBody: "payload"),
            MethodCase(status: 301, method: .PUT, expectedMethod: "PUT", expectedBody: "payload"),
        ]
    )
    func methodsAndBodies(_ testCase: MethodCase) async throws {
        try await self.harness.withOrigin { server, client, monitor in
            let request = BulwarkRequest(
                url: RedirectHarness.url(Self.a, server, RedirectHarness.redirect(testCase.status, to: "/echo")),
                method: testCase.method,
                headers: ["Content-Type": "text/plain"],
                body: .string("payload")
            )
            let response = try await client.execute(request)
            let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
            #expect(response.headers.first(name: "x-request-method") == testCase.expectedMethod)
            #expect(body == testCase.expectedBody)
            let echoed = try #require(server.requests.last)
            #expect(echoed.bodyByteCount == testCase.expectedBody.utf8.count)
            #expect((echoed.value(forHeader: "content-type") != nil) == !testCase.expectedBody.isEmpty)
        }
    }

    @Test("HEAD stays HEAD after a 303")
    func headAfter303() async throws {
        try await self.harness.withOrigin { server, client, monitor in
            let url = RedirectHarness.url(Self.a, server, RedirectHarness.redirect(303, to: "/hello"))
            let response = try await client.execute(BulwarkRequest(url: url, method: .HEAD))
            _ = try await response.body.collect(upTo: 1024)
            #expect(response.status == .ok)
            #expect(server.requests.map(\.method) == ["HEAD", "HEAD"])
        }
    }

    @Test("a 307 of a streamed body is returned, not followed, with the reason")
    func streamedBodyIsNotReplayed() async throws {
        try await self.harness.withOrigin { server, client, monitor in
            let request = BulwarkRequest(
                url: RedirectHarness.url(Self.a, server, RedirectHarness.redirect(307, to: "/echo")),
                method: .POST,
                body: .stream { writer in try await writer.write(ByteBuffer(string: "streamed")) }
            )
            let response = try await client.execute(request)
            #expect(response.status == .temporaryRedirect)
            #expect(response.redirects.last?.decision.refusal?.reason == .bodyNotReplayable(method: "POST"))
            #expect(monitor.events.map(\.shortDescription).contains("redirect_refused:body_not_replayable"))
            #expect(server.requests.map(\.path) == ["/redirect/307"])
        }
    }

    @Test("credentials never cross an origin, and stay stripped when the chain comes back (A → B → A)")
    func credentialsAreStrippedStickily() async throws {
        let serverA = try await self.harness.server(alpn: ["http/1.1"])
        let serverB = try await self.harness.server()
        let monitor = RecordingEventMonitor()
        let client = try self.harness.client(
            hosts: [Self.a, Self.b],
            ports: [serverA.port, serverB.port],
            monitor: monitor
        ) { configuration in
            configuration.redirects.allowedHosts = [try! HostPattern(Self.b)]
            configuration.redirects.allowedPorts = [serverA.port, serverB.port]
        }
        let backToA = RedirectHarness.url(Self.a, serverA, "/headers")
        let viaB = RedirectHarness.url(Self.b, serverB, RedirectHarness.redirect(302, to: backToA))
        let start = RedirectHarness.url(Self.a, serverA, RedirectHarness.redirect(307, to: viaB))
        let response = try await client.execute(credentialedRequest(start))
        let headers = try RedirectHarness.headers(String(buffer: try await response.body.collect(upTo: 1 << 16)))
        #expect(headers["authorization"] == nil)
        #expect(headers["cookie"] == nil)
        #expect(headers["accept"] == "*/*")
        #expect(response.redirects.count == 2)
        #expect(serverA.requests.map { $0.value(forHeader: "authorization") } == ["Bearer secret-token", nil])
        #expect(serverB.requests.map { $0.value(forHeader: "authorization") } == [nil])
        #expect(serverB.requests.map { $0.value(forHeader: "cookie") } == [nil])
        let stripped = monitor.events.filter { $0.kind == .credentialStripped }
        // Stripped once, on the first hop; nothing is left to strip (or to put back) on the way back to A.
        #expect(stripped.map(\.shortDescription) == ["credential_stripped:origin_change"])
        #expect(stripped.first?.details[.headers]?.list == ["authorization", "cookie"])
        await client.shutdown()
        try await serverA.shutdown()
        try await serverB.shutdown()
    }

    @Test("a refused host is never contacted; the error carries the refusal and one event names from, to and why")
    func refusedHostIsNeverContacted() async throws {
        let server = try await self.harness.server()
        let evil = try await self.harness.server()
        let monitor = RecordingEventMonitor()
        let client = try self.harness.client(
            hosts: [Self.a, Self.evil],
            ports: [server.port, evil.port],
            monitor: monitor
        ) {
            $0.redirects.allowedPorts = [evil.port]
        }
        let target = RedirectHarness.url(Self.evil, evil, "/hello?token=secret")
        let start = RedirectHarness.url(Self.a, server, RedirectHarness.redirect(302, to: target))
        let error = await Harness.expectError(.redirectRefused) {
            _ = try await client.execute(credentialedRequest(start))
        }
        #expect(error?.redirectRefusal?.reason == .hostNotAllowed(host: Self.evil))
        #expect(error?.redirectRefusal?.to == "https://\(Self.evil):\(evil.port)/hello")
        #expect(error?.redirects.count == 1)
        #expect(error?.host == Self.a)
        #expect(!String(describing: error!).contains("secret"))
        #expect(evil.acceptedConnections == 0)
        #expect(evil.requests.isEmpty)
        let refused = monitor.events.filter { $0.kind == .redirectRefused }
        #expect(refused.count == 1)
        #expect(refused.first?.reason == "host_not_allowed")
        #expect(refused.first?.details[.from]?.text == "https://\(Self.a):\(server.port)/redirect/302")
        #expect(refused.first?.details[.to]?.text == "https://\(Self.evil):\(evil.port)/hello")
        #expect(
            !monitor.events.contains {
                String(describing: $0).contains("secret")
                    || $0.details.values.contains { $0.description.contains("secret") }
            }
        )
        await client.shutdown()
        try await server.shutdown()
        try await evil.shutdown()
    }

    @Test(".returnRedirectResponse returns the refused redirect with its history")
    func returnRedirectResponse() async throws {
        try await self.harness.withOrigin(
            configure: {
                $0.redirects.onRefusal = .returnRedirectResponse
            },
            { server, client, monitor in
                let start = RedirectHarness.url(
                    Self.a,
                    server,
                    RedirectHarness.redirect(302, to: "https://elsewhere.example/")
                )
                let response = try await client.execute(BulwarkRequest(url: start))
                #expect(response.status == .found)
                #expect(response.headers.first(name: "location") == "https://elsewhere.example/")
                #expect(response.redirects.map(\.decision.shortDescription) == ["refuse:host_not_allowed"])
            }
        )
    }

    @Test("a port change is refused unless listed; the other port is never contacted")
    func portChange() async throws {
        let server = try await self.harness.server()
        let other = try await self.harness.server()
        let client = try self.harness.client(hosts: [Self.a], ports: [server.port, other.port])
        let start = RedirectHarness.url(
            Self.a,
            server,
            RedirectHarness.redirect(302, to: RedirectHarness.url(Self.a, other, "/hello"))
        )
        let error = await Harness.expectError(.redirectRefused) {
            _ = try await client.execute(BulwarkRequest(url: start))
        }
        #expect(error?.redirectRefusal?.reason == .portChange(from: server.port, to: other.port))
        #expect(other.acceptedConnections == 0)
        await client.shutdown()
        try await server.shutdown()
        try await other.shutdown()
    }

    @Test("https to http is refused; the dangerous opt-in follows it and reports it")
    func downgrade() async throws {
        let server = try await self.harness.server()
        let reserved = try ExternalPeers.ClosedPort()
        defer { withExtendedLifetime(reserved) {} }
        let closedPort = reserved.port
        let plain = "http://\(Self.a):\(closedPort)/hello"
        let start = RedirectHarness.url(Self.a, server, RedirectHarness.redirect(302, to: plain))
        let strict = try self.harness.client(hosts: [Self.a], ports: [server.port, closedPort])
        let error = await Harness.expectError(.redirectRefused) {
            _ = try await strict.execute(BulwarkRequest(url: start))
        }
        #expect(error?.redirectRefusal?.reason == .schemeDowngrade)

        let monitor = RecordingEventMonitor()
        let lenient = try self.harness.client(hosts: [Self.a], ports: [server.port, closedPort], monitor: monitor) {
            $0.allowsPlainHTTP = true
            $0.redirects.allowsHTTPSToHTTP = true
            $0.redirects.allowedPorts = [closedPort]
        }
        for _ in 0..<2 {
            // Nothing listens on the plain port: the hop is followed, then the connection fails.
            await Harness.expectError(.connectFailed) { _ = try await lenient.execute(BulwarkRequest(url: start)) }
        }
        let insecure = monitor.events.filter { $0.kind == .insecureOptionUsed }.map(\.shortDescription)
        #expect(
            insecure.filter { $0 == "insecure_option_used:https_to_http_redirect" }.count == 2,
            "every use is reported"
        )
        await strict.shutdown()
        await lenient.shutdown()
        try await server.shutdown()
    }

    @Test("five hops are followed; the sixth is refused and never requested")
    func hopLimit() async throws {
        try await self.harness.withOrigin { server, client, monitor in
            let five = RedirectHarness.url(Self.a, server, RedirectHarness.chain(of: 5, to: "/hello"))
            let (response, body) = try await Harness.get(client, five)
            #expect(body == "hello")
            #expect(response.redirects.count == 5)
            server.resetRecording()
            let six = RedirectHarness.url(Self.a, server, RedirectHarness.chain(of: 6, to: "/hello"))
            let error = await Harness.expectError(.redirectRefused) {
                _ = try await client.execute(BulwarkRequest(url: six))
            }
            #expect(error?.redirectRefusal?.reason == .tooManyHops(limit: 5))
            #expect(
                error?.redirects.map(\.decision.shortDescription) == Array(repeating: "follow", count: 5) + [
                    "refuse:too_many_hops"
                ]
            )
            #expect(server.requests.count == 6)
            #expect(!server.requests.contains { $0.path == "/hello" })
        }
    }

    @Test("a loop (the same URL, ignoring the fragment) is refused after one request")
    func loop() async throws {
        try await self.harness.withOrigin { server, client, monitor in
            let start = RedirectHarness.url(Self.a, server, RedirectHarness.redirect(302, to: "#again"))
            let error = await Harness.expectError(.redirectRefused) {
                _ = try await client.execute(BulwarkRequest(url: start))
            }
            #expect(error?.redirectRefusal?.shortDescription == "loop")
            #expect(server.requests.count == 1)
        }
    }

    @Test("300, 304 and 305 are final responses; a redirect without Location is refused")
    func notRedirects() async throws {
        try await self.harness.withOrigin { server, client, monitor in
            for status in [300, 304, 305] {
                let url = RedirectHarness.url(Self.a, server, RedirectHarness.redirect(status, to: "/hello"))
                let (response, _) = try await Harness.get(client, url)
                #expect(Int(response.status.code) == status)
                #expect(response.redirects.isEmpty)
            }
            #expect(!monitor.events.contains { $0.kind == .redirectRefused || $0.kind == .redirectFollowed })
            let missing = RedirectHarness.url(Self.a, server, "/redirect/302")
            let error = await Harness.expectError(.redirectRefused) {
                _ = try await client.execute(BulwarkRequest(url: missing))
            }
            #expect(error?.redirectRefusal?.reason == .missingLocation)
            #expect(error?.redirectRefusal?.to == nil)
        }
    }

    @Test("doNotFollow returns the redirect untouched, without events")
    func doNotFollow() async throws {
        try await self.harness.withOrigin(
            configure: {
                $0.redirects = .doNotFollow
            },
            { server, client, monitor in
                let (response, _) = try await Harness.get(
                    client,
                    RedirectHarness.url(Self.a, server, RedirectHarness.redirect(302, to: "/hello"))
                )
                #expect(response.status == .found)
                #expect(response.redirects.isEmpty)
                #expect(server.requests.count == 1)
                #expect(!monitor.events.contains { $0.kind == .redirectRefused || $0.kind == .redirectFollowed })
            }
        )
    }

    @Test("a per-hop handler sees each hop and can add a header or refuse")
    func handler() async throws {
        try await self.harness.withOrigin(
            configure: {
                $0.redirects.handler = { hop, follow in
                    guard follow.url.path() != "/hello" else { return .refuse("no hello") }
                    var modified = follow
                    modified.headers.append(HeaderField(name: "X-Hop", value: String(hop.number)))
                    return .modify(modified)
                }
            },
            { server, client, monitor in
                let (response, body) = try await Harness.get(
                    client,
                    RedirectHarness.url(Self.a, server, RedirectHarness.chain(of: 2, to: "/headers"))
                )
                #expect(try RedirectHarness.headers(body)["x-hop"] == "1, 2")
                #expect(response.redirects.count == 2)
                let refused = RedirectHarness.url(Self.a, server, RedirectHarness.redirect(302, to: "/hello"))
                let error = await Harness.expectError(.redirectRefused) {
                    _ = try await client.execute(BulwarkRequest(url: refused))
                }
                #expect(error?.redirectRefusal?.reason == .refusedByHandler(detail: "no hello"))
            }
        )
    }
}
