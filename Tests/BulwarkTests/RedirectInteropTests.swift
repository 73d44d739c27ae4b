import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The Bulwark client following (and refusing) nginx's `return 301/302/307/308` redirects: the locations written by
/// `scripts/peers/nginx-conf` (`/r301` … `/r308` → `/hello`, `/r302-relative`, `/loop` → itself, `/chain/1` …
/// `/chain/7`, a 7-hop chain ending at `/hello`).
@Suite("Interop: redirects from nginx through the Bulwark client", .serialized, .tags(.externalPeers))
struct InteropRedirectTests {
    let chain = InteropChain.shared

    func withClient<Result>(
        configure: (inout BulwarkClient.Configuration) -> Void = { _ in },
        _ body: (BulwarkClient, RecordingEventMonitor) async throws -> Result
    ) async throws -> Result {
        let monitor = RecordingEventMonitor()
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                "localhost": .default(roots: .custom([self.chain.root.certificate]))
            ])
        )
        configuration.eventMonitor = monitor
        configure(&configuration)
        let client = BulwarkClient(configuration: configuration)
        do {
            let result = try await body(client, monitor)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    @Test("301, 302, 307 and 308: GET follows, POST becomes GET only after 301 and 302")
    func statuses() async throws {
        let nginx = try await NginxServer.start(chain: self.chain)
        defer { nginx.stop() }
        let base = "https://localhost:\(nginx.port)"
        try await self.withClient { client, _ in
            for status in [301, 302, 307, 308] {
                let response = try await client.execute(BulwarkRequest(url: "\(base)/r\(status)"))
                #expect(String(buffer: try await response.body.collect(upTo: 1024)) == "hello from nginx\n")
                #expect(response.status == .ok)
                #expect(response.url.absoluteString == "\(base)/hello")
                #expect(response.redirects.map(\.status) == [status])
                #expect(response.redirects.first?.decision.follow?.url.absoluteString == "\(base)/hello")
            }
            for status in [301, 302, 307, 308] {
                let request = BulwarkRequest(
                    url: "\(base)/r\(status)",
                    method: .POST,
                    headers: ["Content-Type": "text/plain"],
                    body: .string("form=1")
                )
                let response = try await client.execute(request)
                _ = try await response.body.collect(upTo: 1024)
                #expect(response.status == .ok)
                #expect(response.redirects.first?.decision.follow?.method == (status < 303 ? "GET" : "POST"))
            }
        }
        let log = try await nginx.accessLog(atLeast: 16).map(\.request)
        #expect(
            log == [
                "GET /r301 HTTP/2.0", "GET /hello HTTP/2.0", "GET /r302 HTTP/2.0", "GET /hello HTTP/2.0",
                "GET /r307 HTTP/2.0", "GET /hello HTTP/2.0", "GET /r308 HTTP/2.0", "GET /hello HTTP/2.0",
                "POST /r301 HTTP/2.0", "GET /hello HTTP/2.0", "POST /r302 HTTP/2.0", "GET /hello HTTP/2.0",
                "POST /r307 HTTP/2.0", "POST /hello HTTP/2.0", "POST /r308 HTTP/2.0", "POST /hello HTTP/2.0",
            ]
        )
    }

    @Test("a relative Location is resolved against the request URL")
    func relative() async throws {
        let nginx = try await NginxServer.start(chain: self.chain)
        defer { nginx.stop() }
        try await self.withClient { client, _ in
            let response = try await client.execute(
                BulwarkRequest(url: "https://localhost:\(nginx.port)/r302-relative")
            )
            #expect(String(buffer: try await response.body.collect(upTo: 1024)) == "hello from nginx\n")
            #expect(response.url.absoluteString == "https://localhost:\(nginx.port)/hello")
        }
    }

    @Test("/loop is refused as a loop after one request, with one event")
    func loop() async throws {
        let nginx = try await NginxServer.start(chain: self.chain)
        defer { nginx.stop() }
        try await self.withClient { client, monitor in
            let error = await Harness.expectError(.redirectRefused) {
                _ = try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/loop"))
            }
            #expect(error?.redirectRefusal?.reason == .loop(url: "https://localhost:\(nginx.port)/loop"))
            let refused = monitor.events.filter { $0.kind == .redirectRefused }
            #expect(refused.map(\.shortDescription) == ["redirect_refused:loop"])
            #expect(refused.first?.details[.from]?.text == "https://localhost:\(nginx.port)/loop")
            #expect(refused.first?.details[.to]?.text == "https://localhost:\(nginx.port)/loop")
        }
        #expect(try await nginx.accessLog(atLeast: 1).map(\.request) == ["GET /loop HTTP/2.0"])
    }

    @Test(
        "five hops are followed on one HTTP/1.1 connection; six (one over the limit) are refused before the last"
    )
    func hopLimit() async throws {
        let nginx = try await NginxServer.start(chain: self.chain, variant: .modernHTTP1)
        defer { nginx.stop() }
        let base = "https://localhost:\(nginx.port)"
        try await self.withClient { client, _ in
            let five = try await client.execute(BulwarkRequest(url: "\(base)/chain/3"))
            #expect(String(buffer: try await five.body.collect(upTo: 1024)) == "hello from nginx\n")
            #expect(five.redirects.count == 5)
            #expect(five.redirects.map(\.url.path) == ["/chain/3", "/chain/4", "/chain/5", "/chain/6", "/chain/7"])

            let error = await Harness.expectError(.redirectRefused) {
                _ = try await client.execute(BulwarkRequest(url: "\(base)/chain/2"))
            }
            #expect(error?.redirectRefusal?.reason == .tooManyHops(limit: 5))
            #expect(error?.redirectRefusal?.from == "\(base)/chain/7")
            #expect(error?.redirectRefusal?.to == "\(base)/hello")
            #expect(error?.redirects.count == 6)
        }
        let log = try await nginx.accessLog(atLeast: 12)
        #expect(
            log.map(\.request) == [
                "GET /chain/3 HTTP/1.1", "GET /chain/4 HTTP/1.1", "GET /chain/5 HTTP/1.1", "GET /chain/6 HTTP/1.1",
                "GET /chain/7 HTTP/1.1", "GET /hello HTTP/1.1",
                "GET /chain/2 HTTP/1.1", "GET /chain/3 HTTP/1.1", "GET /chain/4 HTTP/1.1", "GET /chain/5 HTTP/1.1",
                "GET /chain/6 HTTP/1.1", "GET /chain/7 HTTP/1.1",
            ]
        )
        #expect(Set(log.map(\.connection)).count == 1, "redirect bodies are drained and the connection reused: \(log)")
    }

    @Test("the whole 7-hop chain with the limit raised to 7, as curl --location follows it")
    func raisedLimit() async throws {
        let nginx = try await NginxServer.start(chain: self.chain)
        defer { nginx.stop() }
        try await self.withClient(
            configure: { $0.redirects.maximumHops = 7 },
            { client, monitor in
                let response = try await client.execute(
                    BulwarkRequest(url: "https://localhost:\(nginx.port)/chain/1")
                )
                #expect(String(buffer: try await response.body.collect(upTo: 1024)) == "hello from nginx\n")
                #expect(response.redirects.count == 7)
                #expect(monitor.events.filter { $0.kind == .redirectFollowed }.count == 7)
            }
        )
    }
}
