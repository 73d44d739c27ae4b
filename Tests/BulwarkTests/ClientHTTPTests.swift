import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite("HTTP over the trusted connection")
struct ClientHTTPTests {
    let chain: TestChain
    let evaluator: DefaultTrustEvaluator

    init() throws {
        self.chain = try TestChain.make(host: Harness.host)
        self.evaluator = DefaultTrustEvaluator(roots: .custom([chain.root.certificate]))
    }

    @Test(arguments: [["http/1.1"], ["h2"]])
    func keepAliveReusesOneConnection(alpn: [String]) async throws {
        let server = try await Harness.server(chain, alpn: alpn)
        let client = try Harness.client(for: server, evaluator: evaluator)
        for _ in 0..<5 {
            let (response, body) = try await Harness.get(client, Harness.url(server, "/hello"))
            #expect(body == "hello")
            #expect(response.httpVersion == (alpn == ["h2"] ? .http2 : .http1_1))
        }
        #expect(server.acceptedConnections == 1)
        #expect(server.requests.count == 5)
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func http2MultiplexesConcurrentRequestsOnOneConnection() async throws {
        let server = try await Harness.server(chain, alpn: ["h2"])
        let client = try Harness.client(for: server, evaluator: evaluator)
        try await withThrowingTaskGroup(of: HTTPResponseStatus.self) { group in
            for _ in 0..<20 {
                group.addTask { try await Harness.get(client, Harness.url(server, "/slow/50")).0.status }
            }
            for try await status in group { #expect(status == .ok) }
        }
        #expect(server.acceptedConnections == 1)
        #expect(server.requests.count == 20)
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func http1ConcurrencyIsBoundedPerHost() async throws {
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        let client = try Harness.client(for: server, evaluator: evaluator) { $0.pool.maximumConnectionsPerHost = 3 }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask { _ = try await Harness.get(client, Harness.url(server, "/slow/30")) }
            }
            try await group.waitForAll()
        }
        #expect(server.acceptedConnections <= 3)
        #expect(server.requests.count == 12)
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test(arguments: [["http/1.1"], ["h2"]])
    func bodiesArriveIntact(alpn: [String]) async throws {
        let server = try await Harness.server(chain, alpn: alpn)
        let client = try Harness.client(for: server, evaluator: evaluator)
        let sized = try await client.execute(try BulwarkRequest(url: Harness.url(server, "/bytes/3000000")))
        #expect(
            Array(buffer: try await sized.body.collect(upTo: 4 << 20)) == TestHTTPSServer.bytesBody(count: 3_000_000)
        )
        let chunked = try await client.execute(try BulwarkRequest(url: Harness.url(server, "/chunked/100000")))
        #expect(chunked.headers.first(name: "content-length") == nil)
        #expect(
            Array(buffer: try await chunked.body.collect(upTo: 1 << 20)) == TestHTTPSServer.bytesBody(count: 100_000)
        )
        let (gzipResponse, gzip) = try await Harness.get(client, Harness.url(server, "/gzip"))
        #expect(gzipResponse.status == .ok)
        #expect(gzip == TestHTTPSServer.gzipText)
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func decompressionBombIsStopped() async throws {
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        let client = try Harness.client(for: server, evaluator: evaluator)
        await Harness.expectError(.decompressionLimitExceeded) {
            _ = try await Harness.get(client, Harness.url(server, "/bomb"))
        }
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test(arguments: [["http/1.1"], ["h2"]])
    func requestBodiesBufferedAndStreamed(alpn: [String]) async throws {
        let server = try await Harness.server(chain, alpn: alpn)
        let client = try Harness.client(for: server, evaluator: evaluator)
        let payload = String(repeating: "bulwark ", count: 10_000)
        let buffered = try await client.execute(
            try BulwarkRequest(url: Harness.url(server, "/echo"), method: .POST, body: .string(payload))
        )
        #expect(String(buffer: try await buffered.body.collect(upTo: 1 << 20)) == payload)
        let streamed = try await client.execute(
            try BulwarkRequest(
                url: Harness.url(server, "/echo"),
                method: .PUT,
                body: .stream { writer in
                    for _ in 0..<10 { try await writer.write(ByteBuffer(string: "0123456789")) }
                }
            )
        )
        #expect(
            String(buffer: try await streamed.body.collect(upTo: 1 << 20)) == String(repeating: "0123456789", count: 10)
        )
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func bodyLimitIsEnforced() async throws {
        let server = try await Harness.server(chain)
        let client = try Harness.client(for: server, evaluator: evaluator)
        let response = try await client.execute(try BulwarkRequest(url: Harness.url(server, "/bytes/100000")))
        await Harness.expectError(.bodyTooLarge) { _ = try await response.body.collect(upTo: 1000) }
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func plainHTTPAndBadURLsAreRefusedBeforeConnecting() async throws {
        let client = try BulwarkClient(configuration: .init(trust: try ServerTrustManager(evaluators: [:])))
        await Harness.expectError(.plainHTTPNotAllowed) {
            _ = try await client.execute(try BulwarkRequest(url: "http://127.0.0.1:9/"))
        }
        await Harness.expectError(.invalidURL) {
            _ = try await client.execute(try BulwarkRequest(url: "https://user:secret@example.com/"))
        }
        let ftp = await Harness.expectError(.invalidURL) {
            _ = try await client.execute(try BulwarkRequest(url: "ftp://example.com/"))
        }
        #expect(!String(describing: ftp as Any).contains("secret"))
        try await client.shutdown()
    }

    @Test func tlsStreamCarriesRawBytesUnderTheSamePolicy() async throws {
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [(try HostPattern(Harness.host), evaluator)])
        )
        configuration.resolveOverrides["\(Harness.host):\(server.port)"] = "127.0.0.1"
        let stream = try await TLSStream.connect(host: Harness.host, port: server.port, configuration: configuration)
        #expect(stream.serverTrust.trustedChain?.certificates.count == 3)
        try await stream.write(
            ByteBuffer(string: "GET /hello HTTP/1.1\r\nHost: \(Harness.host)\r\nConnection: close\r\n\r\n")
        )
        var received = ""
        while let buffer = try await stream.read() { received += String(buffer: buffer) }
        #expect(received.hasPrefix("HTTP/1.1 200"))
        #expect(received.hasSuffix("hello"))
        try await stream.close()

        let stranger = try TestChain.make(host: Harness.host)
        let forged = try await Harness.server(stranger, alpn: ["http/1.1"])
        configuration.resolveOverrides["\(Harness.host):\(forged.port)"] = "127.0.0.1"
        await Harness.expectError(.trustRefused) {
            _ = try await TLSStream.connect(host: Harness.host, port: forged.port, configuration: configuration)
        }
        #expect(forged.receivedApplicationBytes == 0)
        try await server.shutdown()
        try await forged.shutdown()
    }
}

@Suite("Robustness: misbehaving servers end in typed errors within their timeouts", .tags(.timing))
struct ClientRobustnessTests {
    let chain: TestChain
    let evaluator: DefaultTrustEvaluator

    init() throws {
        self.chain = try TestChain.make(host: Harness.host)
        self.evaluator = DefaultTrustEvaluator(roots: .custom([chain.root.certificate]))
    }

    func server(_ behavior: TestHTTPSServer.Behavior, alpn: [String] = ["http/1.1"]) async throws -> TestHTTPSServer {
        var configuration = TestHTTPSServer.Configuration(chain: chain)
        configuration.alpn = alpn
        configuration.behavior = behavior
        return try await TestHTTPSServer.start(configuration: configuration)
    }

    func client(_ server: TestHTTPSServer) throws -> BulwarkClient {
        try Harness.client(for: server, evaluator: evaluator) { configuration in
            configuration.timeouts.tlsHandshake = .seconds(2)
            configuration.timeouts.idleRead = .seconds(1)
        }
    }

    @Test func resetMidBody() async throws {
        let server = try await server(.resetMidBody)
        let client = try client(server)
        await Harness.expectError(.remoteConnectionClosed) {
            _ = try await Harness.get(client, Harness.url(server, "/bytes/1000000"))
        }
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func truncatedChunkedBody() async throws {
        let server = try await server(.truncatedChunkedBody)
        let client = try client(server)
        await Harness.expectError(.remoteConnectionClosed) {
            _ = try await Harness.get(client, Harness.url(server, "/chunked/100000"))
        }
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func stalledHandshake() async throws {
        let server = try await server(.stallHandshake)
        let client = try client(server)
        let start = ContinuousClock.now
        await Harness.expectError(.tlsHandshakeTimeout) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        #expect(ContinuousClock.now - start < .seconds(6), "the 2 s handshake timeout must end the request")
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func garbageInsteadOfTLS() async throws {
        let server = try await server(.garbageInsteadOfTLS)
        let client = try client(server)
        await Harness.expectError(.tlsHandshakeFailed) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func serverClosingIdleKeepAliveConnections() async throws {
        let server = try await server(.closeIdleConnectionsAfter(milliseconds: 1500))
        let client = try client(server)
        #expect(try await Harness.get(client, Harness.url(server, "/hello")).1 == "hello")
        try await Task.sleep(for: .milliseconds(3000))
        #expect(try await Harness.get(client, Harness.url(server, "/hello")).1 == "hello")
        #expect(server.acceptedConnections == 2)
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func slowHeadHitsTheIdleReadTimeout() async throws {
        let server = try await server(.normal)
        let client = try client(server)
        await Harness.expectError(.readTimeout) { _ = try await Harness.get(client, Harness.url(server, "/slow/3000")) }
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func deadlineCoversTheWholeRequest() async throws {
        let server = try await server(.normal)
        let client = try Harness.client(for: server, evaluator: evaluator)
        await Harness.expectError(.deadlineExceeded) {
            let response = try await client.execute(
                try BulwarkRequest(url: Harness.url(server, "/slow/2000")),
                timeout: .milliseconds(200)
            )
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func cancellingTheTaskCancelsTheRequest() async throws {
        let server = try await server(.normal)
        let client = try Harness.client(for: server, evaluator: evaluator)
        let task = Task { try await Harness.get(client, Harness.url(server, "/slow/5000")) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let start = ContinuousClock.now
        do {
            _ = try await task.value
            Issue.record("cancelled request succeeded")
        } catch let error as BulwarkError {
            #expect(error.code == .cancelled)
        }
        #expect(ContinuousClock.now - start < .seconds(3), "cancellation must not wait for the 5 s response")
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func noFileDescriptorsLeak() async throws {
        func openFileDescriptors() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        }
        let server = try await server(.normal, alpn: ["h2", "http/1.1"])
        // Warm up NIO's singleton event loops, which own descriptors of their own.
        let warm = try client(server)
        _ = try await Harness.get(warm, Harness.url(server, "/hello"))
        try await warm.shutdown()
        try await Task.sleep(for: .milliseconds(100))
        let before = try openFileDescriptors()
        for round in 0..<3 {
            let client = try client(server)
            for _ in 0..<10 { _ = try await Harness.get(client, Harness.url(server, "/hello")) }
            await Harness.expectError(.readTimeout) {
                _ = try await Harness.get(client, Harness.url(server, "/slow/3000"))
            }
            _ = round
            try await client.shutdown()
        }
        // The server keeps running: its ends of the closed connections go away once the client's FIN arrives.
        try await Task.sleep(for: .milliseconds(500))
        let after = try openFileDescriptors()
        #expect(after <= before, "\(after - before) descriptors leaked")
        try await server.shutdown()
    }
}
