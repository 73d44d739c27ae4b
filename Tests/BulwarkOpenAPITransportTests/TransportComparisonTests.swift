import AsyncHTTPClient
import Bulwark
import BulwarkOpenAPITransport
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import HTTPTypes
import NIOCore
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Testing

@Suite("BulwarkClientTransport and AsyncHTTPClientTransport side by side, over one server")
struct TransportComparisonTests {
    /// The requests both transports send: path, method, header fields, body.
    static let cases: [(String, HTTPRequest.Method, HTTPFields, String?)] = [
        ("/hello", .get, [.init("x-trace-tag")!: "same"], nil),
        ("/bytes/100000", .get, [:], nil),
        ("/chunked/70000", .get, [:], nil),
        ("/echo", .post, [.contentType: "application/json"], #"{"message":"hi"}"#),
        ("/echo?q=1", .put, [.contentType: "text/plain"], "plain text"),
        ("/status/404", .get, [:], nil),
        ("/status/204", .delete, [:], nil),
        ("/hello", .head, [:], nil),
        ("/missing", .get, [:], nil),
    ]

    @Test("same status, header fields and body for each request")
    func sameExchanges() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let httpClient = try TransportHarness.asyncHTTPClient(chain: chain)
        let transports: [any ClientTransport] = [
            BulwarkClientTransport(client: bulwark),
            AsyncHTTPClientTransport(configuration: .init(client: httpClient)),
        ]
        let baseURL = TransportHarness.serverURL(port: server.port)
        for (path, method, fields, text) in Self.cases {
            var exchanges: [TransportHarness.Exchange] = []
            for transport in transports {
                let (response, body) = try await transport.send(
                    HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: fields),
                    body: text.map { HTTPBody($0) },
                    baseURL: baseURL,
                    operationID: "compare"
                )
                exchanges.append(try await TransportHarness.Exchange(response, body))
            }
            #expect(exchanges[0] == exchanges[1], "\(method) \(path): Bulwark \(exchanges[0]), AHC \(exchanges[1])")
        }
        // The server saw the same requests from both, in pairs.
        let seen = server.requests.map { "\($0.method) \($0.uri) \($0.bodyByteCount)" }
        #expect(seen.count == 2 * Self.cases.count)
        for index in stride(from: 0, to: seen.count - 1, by: 2) {
            #expect(seen[index] == seen[index + 1])
        }
        try await httpClient.shutdown()
        await bulwark.shutdown()
        try await server.shutdown()
    }

    @Test("the generated client gets the same answers through either transport")
    func sameGeneratedClientResults() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let httpClient = try TransportHarness.asyncHTTPClient(chain: chain)
        let serverURL = TransportHarness.serverURL(port: server.port)
        let clients = [
            Client(serverURL: serverURL, transport: BulwarkClientTransport(client: bulwark)),
            Client(serverURL: serverURL, transport: AsyncHTTPClientTransport(configuration: .init(client: httpClient))),
        ]
        var results: [[String]] = []
        for client in clients {
            let hello = try await String(collecting: client.getHello().ok.body.plainText, upTo: 1024)
            let echo = try await client.echo(body: .json(.init(message: "same", count: 7))).ok
            let headers = try await client.getHeaders(headers: .init(xTraceTag: "t")).ok.body.json
            let downloaded = try await client.download(path: .init(count: 300_000)).ok.body.binary
            let download = try await [UInt8](collecting: downloaded, upTo: 1 << 20)
            let status = try await client.getStatus(path: .init(code: 503))
            results.append([
                hello, "\(try echo.body.json)", echo.headers.xRequestMethod, echo.headers.xRequestPath,
                headers.additionalProperties["x-trace-tag"] ?? "none", "\(download.count) \(download.reduce(0, &+))",
                "\(status)",
            ])
        }
        #expect(results[0] == results[1])
        try await httpClient.shutdown()
        await bulwark.shutdown()
        try await server.shutdown()
    }

    @Test("repeated response header fields are all kept (AsyncHTTPClientTransport keeps the last one only)")
    func repeatedHeaderFields() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let httpClient = try TransportHarness.asyncHTTPClient(chain: chain)
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/set-cookie?a=1&b=2")
        let baseURL = TransportHarness.serverURL(port: server.port)
        let (ours, _) = try await BulwarkClientTransport(client: bulwark)
            .send(request, body: nil, baseURL: baseURL, operationID: "cookies")
        let (theirs, _) = try await AsyncHTTPClientTransport(configuration: .init(client: httpClient))
            .send(request, body: nil, baseURL: baseURL, operationID: "cookies")
        #expect(ours.headerFields[values: .setCookie] == ["a=1", "b=2"])
        #expect(theirs.headerFields[values: .setCookie] == ["b=2"])
        try await httpClient.shutdown()
        await bulwark.shutdown()
        try await server.shutdown()
    }
}
