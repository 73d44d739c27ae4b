import AsyncHTTPClient
import Bulwark
import BulwarkOpenAPITransport
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Testing

@Suite("BulwarkClientTransport: a generated OpenAPI client over Bulwark, against real TLS servers on loopback")
struct BulwarkClientTransportTests {
    @Test("the generated client calls the server under a pinned policy")
    func generatedClientUnderPinnedPolicy() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let client = Client(
            serverURL: TransportHarness.serverURL(port: server.port),
            transport: BulwarkClientTransport(client: bulwark)
        )

        let hello = try await client.getHello(headers: .init(xTraceTag: "tag-1"))
        #expect(try await String(collecting: hello.ok.body.plainText, upTo: 1024) == "hello")

        let echoed = try await client.echo(body: .json(.init(message: "hi", count: 3)))
        let ok = try echoed.ok
        #expect(try ok.body.json == .init(message: "hi", count: 3))
        #expect(ok.headers.xRequestMethod == "POST")
        #expect(ok.headers.xRequestPath == "/echo")

        let headers = try await client.getHeaders(headers: .init(xTraceTag: "tag-2"))
        #expect(try headers.ok.body.json.additionalProperties["x-trace-tag"] == "tag-2")

        let status = try await client.getStatus(path: .init(code: 204))
        #expect(status == .noContent(.init()))

        #expect(server.requests.map(\.uri) == ["/hello", "/echo", "/headers", "/status/204"])
        #expect(server.requests.first?.headers.contains { $0.name == "x-trace-tag" && $0.value == "tag-1" } == true)
        await bulwark.shutdown()
        try await server.shutdown()
    }

    @Test("a pin mismatch reaches the caller as Bulwark's trust refusal, before any request byte is sent")
    func pinMismatchIsTrustRefusal() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let other = try CertificateFactory.makeRoot(commonName: "Some other key")
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain, pinning: other.certificate)
        let client = Client(
            serverURL: TransportHarness.serverURL(port: server.port),
            transport: BulwarkClientTransport(client: bulwark)
        )
        do {
            _ = try await client.getHello()
            Issue.record("the request succeeded against a server whose key is not pinned")
        } catch let error as ClientError {
            let underlying = try #require(error.underlyingError as? BulwarkError, "\(error.underlyingError)")
            #expect(underlying.code == .trustRefused)
            #expect(underlying.host == TransportHarness.host)
            let refusal = try #require(underlying.trustRefusal)
            #expect(refusal.reasons.contains { $0.pinMismatch != nil }, "\(refusal)")
        }
        #expect(server.receivedApplicationBytes == 0)
        #expect(server.requests.isEmpty)
        await bulwark.shutdown()
        try await server.shutdown()
    }

    @Test("an error while the response body streams is Bulwark's, typed")
    func bodyErrorIsTyped() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain, behavior: .resetMidBody))
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let transport = BulwarkClientTransport(client: bulwark)
        let (response, body) = try await transport.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/bytes/4000000"),
            body: nil,
            baseURL: TransportHarness.serverURL(port: server.port),
            operationID: "download"
        )
        #expect(response.status == .ok)
        do {
            for try await _ in try #require(body) {}
            Issue.record("the body ended although the server reset the connection")
        } catch let error as BulwarkError {
            #expect(error.code == .remoteConnectionClosed, "\(error)")
        }
        await bulwark.shutdown()
        try await server.shutdown()
    }

    @Test("a small body that can be iterated again is resent on a 307; a single-pass one is not")
    func bodyReplayOnRedirect() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let transport = BulwarkClientTransport(client: bulwark)
        let request = HTTPRequest(
            method: .post,
            scheme: nil,
            authority: nil,
            path: "/redirect/307?to=/echo",
            headerFields: [.contentType: "text/plain"]
        )
        let baseURL = TransportHarness.serverURL(port: server.port)

        let (followed, followedBody) = try await transport.send(
            request,
            body: HTTPBody("payload"),
            baseURL: baseURL,
            operationID: "replay"
        )
        #expect(followed.status == .ok)
        #expect(try await String(collecting: try #require(followedBody), upTo: 1024) == "payload")

        let once = HTTPBody(
            ChunkSource(total: 1000) { _ in },
            length: .known(1000),
            iterationBehavior: .single
        )
        let (returned, _) = try await transport.send(request, body: once, baseURL: baseURL, operationID: "once")
        #expect(returned.status.code == 307)
        #expect(server.requests.map(\.uri) == ["/redirect/307?to=/echo", "/echo", "/redirect/307?to=/echo"])
        #expect(server.requests.map(\.bodyByteCount) == [7, 7, 1000])
        await bulwark.shutdown()
        try await server.shutdown()
    }

    @Test("a server URL with user information fails with invalid_url, naming no secret")
    func invalidURL() async throws {
        let bulwark = BulwarkClient(configuration: .init(trust: ServerTrustManager(patterns: [])))
        let transport = BulwarkClientTransport(client: bulwark)
        do {
            _ = try await transport.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/hello"),
                body: nil,
                baseURL: URL(string: "https://user:pass-secret@api.bulwark.test")!,
                operationID: "x"
            )
            Issue.record("the request was sent")
        } catch let error as BulwarkError {
            #expect(error.code == .invalidURL, "\(error)")
            #expect(!String(describing: error).contains("secret"))
        }
        await bulwark.shutdown()
    }
}
