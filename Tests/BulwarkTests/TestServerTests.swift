import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOSSL
import Testing
import X509

/// Proves the test servers are real by talking to them with a peer nobody here wrote: curl (OpenSSL, nghttp2).
@Suite("Test HTTPS servers against curl", .tags(.externalPeers))
struct TestServerTests {
    static let host = "server.bulwark.test"

    // MARK: - Protocols and routes

    @Test func servesHTTP11() async throws {
        let (server, chain) = try await Self.startServer()
        let result = try await Self.curl(
            server,
            chain.root,
            ["--http1.1", "-w", " %{http_version}"],
            paths: ["/hello"]
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdoutText == "hello 1.1")
        #expect(server.acceptedConnections == 1)
        #expect(server.completedHandshakes == 1)
        #expect(server.handshakes.first?.applicationProtocol == "http/1.1")
        #expect(server.handshakes.first?.tlsVersion == .tlsv13)
        #expect(server.requests.first?.httpVersion == "HTTP/1.1")
        #expect(server.receivedApplicationBytes > 0)
        try await server.shutdown()
    }

    @Test func servesHTTP2() async throws {
        let (server, chain) = try await Self.startServer()
        let result = try await Self.curl(server, chain.root, ["--http2", "-w", " %{http_version}"], paths: ["/hello"])
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdoutText == "hello 2")
        #expect(server.handshakes.first?.applicationProtocol == "h2")
        #expect(server.requests.first?.httpVersion == "HTTP/2.0")
        #expect(server.requests.first?.value(forHeader: "host") == "\(Self.host):\(server.port)")
        try await server.shutdown()
    }

    @Test func withoutH2InALPNServesHTTP11() async throws {
        let (server, chain) = try await Self.startServer(alpn: ["http/1.1"])
        let result = try await Self.curl(server, chain.root, ["--http2", "-w", " %{http_version}"], paths: ["/hello"])
        #expect(result.stdoutText == "hello 1.1", "\(result.stderr)")
        #expect(server.handshakes.first?.applicationProtocol == "http/1.1")
        try await server.shutdown()
    }

    @Test(arguments: ["--http1.1", "--http2"])
    func streamsBytesAndChunks(protocolFlag: String) async throws {
        let (server, chain) = try await Self.startServer()
        let count = 300_001
        for path in ["/bytes/\(count)", "/chunked/\(count)"] {
            let result = try await Self.curl(
                server,
                chain.root,
                [protocolFlag, "-D", "-", "-o", "BODY"],
                paths: [path]
            )
            #expect(result.exitCode == 0, "\(path): \(result.stderr)")
            #expect(result.file("BODY") == TestHTTPSServer.bytesBody(count: count), "\(path)")
            let head = result.stdoutText.lowercased()
            if path.hasPrefix("/bytes") {
                #expect(head.contains("content-length: \(count)"))
            } else if protocolFlag == "--http1.1" {
                #expect(head.contains("transfer-encoding: chunked"))
                #expect(!head.contains("content-length"))
            }
        }
        try await server.shutdown()
    }

    @Test func servesGzipThatCurlInflates() async throws {
        let (server, chain) = try await Self.startServer()
        let inflated = try await Self.curl(server, chain.root, ["--compressed"], paths: ["/gzip"])
        #expect(inflated.exitCode == 0, "\(inflated.stderr)")
        #expect(inflated.stdoutText == TestHTTPSServer.gzipText)
        let raw = try await Self.curl(server, chain.root, ["-D", "HEAD"], paths: ["/gzip"])
        #expect(raw.stdout.starts(with: [0x1F, 0x8B]))
        #expect(raw.stdout.count < TestHTTPSServer.gzipText.utf8.count / 4, "actually compressed")
        #expect(raw.fileText("HEAD").lowercased().contains("content-encoding: gzip"))
        try await server.shutdown()
    }

    @Test func bombIsSmallAndInflatesTo64MiB() async throws {
        let (server, chain) = try await Self.startServer()
        let raw = try await Self.curl(server, chain.root, ["-o", "BOMB"], paths: ["/bomb"])
        #expect(raw.exitCode == 0, "\(raw.stderr)")
        #expect(raw.file("BOMB").count < 70_000)
        // gzip checks the CRC-32 and the length of what it inflates.
        let inflated = try await CurlRun.shell("gzip -dc BOMB | wc -c", files: ["BOMB": raw.file("BOMB")])
        #expect(inflated.exitCode == 0, "\(inflated.stderr)")
        #expect(Int(inflated.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) == 64 * 1024 * 1024)
        let small = try await Self.curl(server, chain.root, ["--compressed"], paths: ["/bomb/1000"])
        #expect(small.stdout == [UInt8](repeating: 0, count: 1000), "\(small.stderr)")
        try await server.shutdown()
    }

    @Test func recordsRequestsAndEchoes() async throws {
        let (server, chain) = try await Self.startServer()
        let echo = try await Self.curl(
            server,
            chain.root,
            ["-D", "HEAD", "-H", "X-Test: yes", "-H", "content-type: text/plain", "--data-binary", "ping body"],
            paths: ["/echo?q=1"]
        )
        #expect(echo.stdoutText == "ping body", "\(echo.stderr)")
        let head = echo.fileText("HEAD").lowercased()
        #expect(head.contains("x-request-method: post"))
        #expect(head.contains("x-request-path: /echo?q=1"))
        let recorded = try #require(server.requests.first)
        #expect(recorded.method == "POST")
        #expect(recorded.uri == "/echo?q=1")
        #expect(recorded.path == "/echo")
        #expect(recorded.value(forHeader: "x-test") == "yes")
        #expect(recorded.bodyByteCount == 9)

        let headers = try await Self.curl(server, chain.root, ["-H", "X-Custom: Value"], paths: ["/headers"])
        let json = try JSONSerialization.jsonObject(with: Data(headers.stdout)) as? [String: String]
        #expect(json?["x-custom"] == "Value")
        #expect(json?["host"] == "\(Self.host):\(server.port)")
        #expect(server.requests.count == 2)
        try await server.shutdown()
    }

    @Test(arguments: ["--http1.1", "--http2"])
    func largeUploadWithExpectContinueIsEchoed(protocolFlag: String) async throws {
        let (server, chain) = try await Self.startServer()
        let body = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let result = try await Self.curl(
            server,
            chain.root,
            [protocolFlag, "-H", "Expect: 100-continue", "--data-binary", "@UPLOAD", "-o", "ECHO"],
            paths: ["/echo"],
            files: ["UPLOAD": body]
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.file("ECHO") == body)
        #expect(server.requests.first?.bodyByteCount == body.count)
        #expect(server.requests.first?.value(forHeader: "expect") != nil || protocolFlag == "--http2")
        try await server.shutdown()
    }

    @Test(arguments: ["--http1.1", "--http2"])
    func headGetsTheHeadOnly(protocolFlag: String) async throws {
        let (server, chain) = try await Self.startServer()
        let result = try await Self.curl(
            server,
            chain.root,
            [protocolFlag, "--head"],
            paths: ["/bytes/5000", "/hello"]
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        let head = result.stdoutText.lowercased()
        #expect(head.contains("content-length: 5000"))
        #expect(head.contains("content-length: 5"))
        #expect(!head.contains("hello"))
        #expect(server.requests.map(\.method) == ["HEAD", "HEAD"])
        #expect(server.acceptedConnections == 1)
        try await server.shutdown()
    }

    @Test func statusRedirectAndNotFound() async throws {
        let (server, chain) = try await Self.startServer()
        let result = try await Self.curl(
            server,
            chain.root,
            ["-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}\n"],
            paths: ["/status/418", "/redirect/307?to=/hello%3Fx=1", "/nope"]
        )
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines == ["418 ", "307 \(server.url("/hello?x=1", host: Self.host))", "404 "], "\(result.stderr)")
        let bad = try await Self.curl(
            server,
            chain.root,
            ["-o", "/dev/null", "-w", "%{http_code}"],
            paths: ["/slow/x"]
        )
        #expect(bad.stdoutText == "400")
        try await server.shutdown()
    }

    @Test(arguments: ["--http1.1", "--http2"])
    func closeRouteClosesTheConnection(protocolFlag: String) async throws {
        let (server, chain) = try await Self.startServer()
        let result = try await Self.curl(
            server,
            chain.root,
            [protocolFlag, "-D", "HEAD"],
            paths: ["/close", "/hello"]
        )
        #expect(result.stdoutText == "byehello", "\(result.stderr)")
        if protocolFlag == "--http1.1" {
            #expect(result.fileText("HEAD").lowercased().contains("connection: close"))
        }
        #expect(server.acceptedConnections == 2, "curl reconnects after the server closed")
        try await server.shutdown()
    }

    @Test func slowWaitsBeforeTheHead() async throws {
        let (server, chain) = try await Self.startServer()
        let format = " %{time_starttransfer} %{time_appconnect}"
        let result = try await Self.curl(server, chain.root, ["-w", format], paths: ["/slow/300"])
        let fields = result.stdoutText.split(separator: " ")
        #expect(fields.first == "slow", "\(result.stderr)")
        let waited = fields.count == 3 ? (Double(fields[1]) ?? 0) - (Double(fields[2]) ?? 0) : 0
        #expect(waited >= 0.29, "waited \(waited) s")
        try await server.shutdown()
    }

    // MARK: - Connections

    @Test(arguments: ["--http1.1", "--http2"])
    func curlReusesTheKeepAliveConnection(protocolFlag: String) async throws {
        let (server, chain) = try await Self.startServer()
        let result = try await Self.curl(server, chain.root, [protocolFlag], paths: ["/hello", "/bytes/10"])
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout == Array("hello".utf8) + TestHTTPSServer.bytesBody(count: 10))
        #expect(server.acceptedConnections == 1)
        #expect(server.requests.map(\.path) == ["/hello", "/bytes/10"])
        #expect(Set(server.requests.map(\.connectionID)) == [1])
        try await server.shutdown()
    }

    @Test func idleConnectionsAreClosed() async throws {
        // `--rate 20/m` starts the transfers three seconds apart: the connection idles well past the 100 ms limit, so
        // curl must reconnect. (At 1/s a first transfer slowed past 900 ms by the parallel test load left under
        // 100 ms of idle time, and the server's close raced curl's reuse: "Empty reply from server".)
        let options = ["--http1.1", "--rate", "20/m"]
        let (idle, idleChain) = try await Self.startServer(behavior: .closeIdleConnectionsAfter(milliseconds: 100))
        let reconnected = try await Self.curl(idle, idleChain.root, options, paths: ["/hello", "/hello"])
        #expect(reconnected.stdoutText == "hellohello", "\(reconnected.stderr)")
        #expect(idle.acceptedConnections == 2)
        try await idle.shutdown()

        let (normal, normalChain) = try await Self.startServer()
        let reused = try await Self.curl(normal, normalChain.root, options, paths: ["/hello", "/hello"])
        #expect(reused.stdoutText == "hellohello", "\(reused.stderr)")
        #expect(normal.acceptedConnections == 1)
        try await normal.shutdown()
    }

    // MARK: - Interceptor

    @Test func interceptorChainFailsAgainstTheGenuineRootAndGetsNoBytes() async throws {
        let genuine = try TestChain.make(host: Self.host)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Self.host)
        let refused = try await Self.curl(interceptor, genuine.root, paths: ["/hello"])
        #expect(refused.exitCode == 60, "\(refused.stderr)")
        #expect(interceptor.acceptedConnections == 1)
        #expect(interceptor.completedHandshakes == 0)
        #expect(interceptor.receivedApplicationBytes == 0)
        #expect(interceptor.requests.isEmpty)

        // A user who installed the proxy's CA is intercepted, for whatever name the client asks for.
        let forgedRoot = try #require(interceptor.forgedRoot)
        #expect(forgedRoot != genuine.root.certificate)
        for name in [Self.host, "bank.example"] {
            let accepted = try await Self.curl(interceptor, forgedRoot, host: name, paths: ["/hello"])
            #expect(accepted.exitCode == 0, "\(name): \(accepted.stderr)")
            #expect(accepted.stdoutText == "hello")
        }
        #expect(interceptor.receivedApplicationBytes > 0)
        #expect(interceptor.requests.count == 2)
        try await interceptor.shutdown()
    }

    // MARK: - Behaviors

    @Test func stalledHandshakeTimesCurlOut() async throws {
        let (server, chain) = try await Self.startServer(behavior: .stallHandshake)
        let result = try await Self.curl(server, chain.root, ["--max-time", "1"], paths: ["/hello"])
        #expect(result.exitCode == 28, "\(result.stderr)")
        #expect(server.acceptedConnections == 1)
        #expect(server.completedHandshakes == 0)
        try await server.shutdown()
        #expect(server.openConnections == 0)
    }

    @Test func garbageInsteadOfTLSIsATLSError() async throws {
        let (server, chain) = try await Self.startServer(behavior: .garbageInsteadOfTLS)
        let result = try await Self.curl(server, chain.root, paths: ["/hello"])
        #expect(result.exitCode == 35, "\(result.stderr)")
        #expect(server.completedHandshakes == 0)
        try await server.shutdown()
    }

    @Test(arguments: ["--http1.1", "--http2"])
    func resetMidBodyCutsTheTransfer(protocolFlag: String) async throws {
        let (server, chain) = try await Self.startServer(behavior: .resetMidBody)
        let count = 1_000_000
        let result = try await Self.curl(server, chain.root, [protocolFlag, "-o", "BODY"], paths: ["/bytes/\(count)"])
        // 56 "Recv failure", or 55 "Send failure" when curl's HTTP/2 WINDOW_UPDATE meets the RST first.
        #expect([55, 56].contains(result.exitCode), "\(result.stderr)")
        #expect(result.stderr.lowercased().contains("reset by peer"), "\(result.stderr)")
        let received = result.file("BODY")
        #expect(received.count <= count / 2)
        #expect(received == TestHTTPSServer.bytesBody(count: received.count))
        try await server.shutdown()
    }

    @Test(arguments: ["--http1.1", "--http2"])
    func truncatedChunkedBodyIsDetected(protocolFlag: String) async throws {
        let (server, chain) = try await Self.startServer(behavior: .truncatedChunkedBody)
        let count = 100_000
        let result = try await Self.curl(
            server,
            chain.root,
            [protocolFlag, "-o", "BODY"],
            paths: ["/chunked/\(count)"]
        )
        // HTTP/1.1: "transfer closed with outstanding read data remaining"; HTTP/2: "stream 1 was not closed cleanly".
        #expect(result.exitCode == 18, "\(result.stderr)")
        #expect(result.file("BODY") == TestHTTPSServer.bytesBody(count: count / 2))
        try await server.shutdown()
    }

    // MARK: - TLS versions

    @Test func tls11OnlyServerNegotiatesTLS11() async throws {
        let chain = try TestChain.make(host: Self.host)
        let server = try await TestHTTPSServer.start(
            configuration: .init(chain: chain, minimumTLSVersion: .tlsv1, maximumTLSVersion: .tlsv11)
        )
        // OpenSSL 3 allows TLS < 1.2 (SHA-1 handshake signatures) only at security level 0.
        let legacy = try await Self.curl(
            server,
            chain.root,
            ["--tlsv1.1", "--tls-max", "1.1", "--ciphers", "DEFAULT@SECLEVEL=0"],
            paths: ["/hello"]
        )
        #expect(legacy.stdoutText == "hello", "\(legacy.exitCode): \(legacy.stderr)")
        #expect(server.handshakes.first?.tlsVersion == .tlsv11)
        let sClient = try await CurlRun.shell(
            "openssl s_client -tls1_1 -cipher DEFAULT@SECLEVEL=0 -servername \(Self.host) "
                + "-connect 127.0.0.1:\(server.port) </dev/null 2>&1"
        )
        #expect(sClient.stdoutText.contains("Protocol  : TLSv1.1"), "\(sClient.stdoutText)")
        let modern = try await Self.curl(server, chain.root, ["--tlsv1.2"], paths: ["/hello"])
        #expect(modern.exitCode == 35, "\(modern.stderr)")
        #expect(server.completedHandshakes == 2)
        #expect(server.handshakes.allSatisfy { $0.tlsVersion == .tlsv11 })
        try await server.shutdown()
    }

    // MARK: - Helpers

    static func startServer(
        alpn: [String] = ["h2", "http/1.1"],
        behavior: TestHTTPSServer.Behavior = .normal
    ) async throws -> (TestHTTPSServer, TestChain) {
        let chain = try TestChain.make(host: Self.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain, alpn: alpn, behavior: behavior))
        return (server, chain)
    }

    /// `curl -sS --cacert ROOT --resolve HOST:PORT:127.0.0.1 OPTIONS https://HOST:PORT/PATH…`, run in a directory
    /// holding `files`.
    static func curl(
        _ server: TestHTTPSServer,
        _ root: TestIdentity,
        host: String = Self.host,
        _ options: [String] = [],
        paths: [String],
        files: [String: [UInt8]] = [:]
    ) async throws -> CurlRun {
        try await Self.curl(server, root.certificate, host: host, options, paths: paths, files: files)
    }

    static func curl(
        _ server: TestHTTPSServer,
        _ root: Certificate,
        host: String = Self.host,
        _ options: [String] = [],
        paths: [String],
        files: [String: [UInt8]] = [:]
    ) async throws -> CurlRun {
        var files = files
        files["root.pem"] = Array(try root.serializeAsPEM().pemString.utf8)
        let base = ["-sS", "--cacert", "root.pem", "--resolve", "\(host):\(server.port):127.0.0.1"]
        let urls = paths.map { server.url($0, host: host) }
        return try await CurlRun.execute("/usr/bin/env", ["curl"] + base + options + urls, files: files)
    }
}

extension TestServerTests {
    /// A finished curl (or shell) process. It ran in a temporary directory, deleted since; what it wrote there was
    /// kept.
    struct CurlRun {
        let exitCode: Int32
        let stdout: [UInt8]
        let stderr: String
        let files: [String: [UInt8]]

        var stdoutText: String { String(decoding: self.stdout, as: UTF8.self) }

        /// A file the process wrote into its directory (`-o NAME`, `-D NAME`); empty if none.
        func file(_ name: String) -> [UInt8] {
            self.files[name] ?? []
        }

        func fileText(_ name: String) -> String {
            String(decoding: self.file(name), as: UTF8.self)
        }

        /// `sh -c LINE`, with input `files` in its working directory.
        static func shell(_ line: String, files: [String: [UInt8]] = [:]) async throws -> CurlRun {
            try await Self.execute("/bin/sh", ["-c", line], files: files)
        }

        /// Runs the process to its end (through the tests' one process runner).
        static func execute(
            _ executable: String,
            _ arguments: [String],
            files: [String: [UInt8]]
        ) async throws -> CurlRun {
            let result = try await ProcessRunner.run(URL(fileURLWithPath: executable), arguments, files: files)
            return CurlRun(exitCode: result.status, stdout: result.stdout, stderr: result.stderr, files: result.files)
        }
    }
}
