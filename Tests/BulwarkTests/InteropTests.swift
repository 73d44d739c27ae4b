import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import X509

// Interop with real third-party peers (nginx, openssl s_server, mitmproxy), all on 127.0.0.1. The peers are
// installed by scripts/test; a missing peer fails these tests, it never skips them.

/// The chain every peer presents: root → intermediate → leaf for `localhost`, generated in process.
enum InteropChain {
    static let shared: TestChain = try! TestChain.make(host: "localhost")
}

/// Records how long a peer took to accept connections, in the test output.
func timedStart<Peer>(_ name: String, _ start: () async throws -> Peer) async throws -> Peer {
    let clock = ContinuousClock()
    var peer: Peer?
    let elapsed = try await clock.measure { peer = try await start() }
    print("[interop] \(name) accepted connections after \(elapsed.formatted(.units(allowed: [.milliseconds])))")
    return peer!
}

@Suite("Interop peers, checked with curl", .serialized, .tags(.externalPeers))
struct InteropPeerTests {
    let chain = InteropChain.shared

    /// curl arguments that trust `rootPEM` and send `localhost:port` to 127.0.0.1.
    func curlTrusting(_ rootPEM: String, port: Int) -> [String] {
        ["--cacert", rootPEM, "--resolve", "localhost:\(port):127.0.0.1"]
    }

    @Test("freePort returns a loopback port nobody listens on")
    func freePortIsFree() throws {
        let port = try ExternalPeers.freePort()
        #expect((1024...65535).contains(port))
        #expect(!ExternalPeers.isAccepting(port: port))
    }

    @Test("a missing tool is an error that says how to install it")
    func missingToolIsAnError() throws {
        let error = #expect(throws: ExternalPeerError.self) {
            try ExternalPeers.findTool("bulwark-no-such-tool")
        }
        #expect(error?.description.contains("not installed") == true)
        #expect(error?.description.contains("scripts/test") == true)
    }

    @Test("a peer that exits or never listens fails fast with its output, it does not hang")
    func peerStartFailures() async throws {
        let directory = try ExternalPeers.makeDirectory("selftest")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try ExternalPeers.freePort()
        let sh = try ExternalPeers.findTool("sh")

        let exits = try PeerProcess(
            name: "exiting peer",
            executable: sh,
            arguments: ["-c", "echo cannot start; exit 3"],
            logURL: directory.appending(path: "exits.out")
        )
        let exitError = await #expect(throws: ExternalPeerError.self) {
            try await exits.waitUntilAccepting(port: port)
        }
        #expect(exitError?.description.contains("exited with status 3") == true)
        #expect(exitError?.description.contains("cannot start") == true)

        let silent = try PeerProcess(
            name: "silent peer",
            executable: sh,
            arguments: ["-c", "exec sleep 60"],
            logURL: directory.appending(path: "silent.out")
        )
        let clock = ContinuousClock()
        let started = clock.now
        let timeoutError = await #expect(throws: ExternalPeerError.self) {
            try await silent.waitUntilAccepting(port: port, timeout: .seconds(1))
        }
        #expect(timeoutError?.description.contains("did not accept connections") == true)
        // Includes stop(): SIGTERM must work. Had it not, SIGKILL would come 5 s later (6 s in all), so 6 s still
        // tells; the rest is room for a loaded machine.
        #expect(clock.now - started < .seconds(6))
        // The kernel's view, as `stop()` waits on it: `Process.isRunning` turns false only once Foundation's exit
        // handler has run, which came late on a loaded CI machine (this line failed there with the peer already gone).
        #expect(!ExternalPeers.isAlive(silent.process.processIdentifier))
    }

    @Test("nginx over HTTP/2: two GETs share one connection")
    func nginxHTTP2KeepAlive() async throws {
        let nginx = try await timedStart("nginx (modern)") { try await NginxServer.start(chain: chain) }
        defer { nginx.stop() }
        let url = "https://localhost:\(nginx.port)/hello"
        let result = try await ExternalPeers.curl(
            curlTrusting(nginx.rootPEMPath, port: nginx.port) + ["--http2", url, url]
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output == "hello from nginx\nhello from nginx\n")
        let log = try await nginx.accessLog(atLeast: 2)
        #expect(log.map(\.protocolVersion) == ["HTTP/2.0", "HTTP/2.0"])
        #expect(log.map(\.requestOnConnection) == [1, 2])
        #expect(Set(log.map(\.connection)).count == 1)
    }

    @Test("nginx over HTTP/1.1: two GETs share one connection")
    func nginxHTTP1KeepAlive() async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: .modernHTTP1)
        defer { nginx.stop() }
        let url = "https://localhost:\(nginx.port)/hello"
        let result = try await ExternalPeers.curl(
            curlTrusting(nginx.rootPEMPath, port: nginx.port) + ["--http2", url, url]
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output == "hello from nginx\nhello from nginx\n")
        let log = try await nginx.accessLog(atLeast: 2)
        #expect(log.map(\.protocolVersion) == ["HTTP/1.1", "HTTP/1.1"])
        #expect(log.map(\.requestOnConnection) == [1, 2])
        #expect(Set(log.map(\.connection)).count == 1)
    }

    @Test("nginx serves /big, /gzip (gzip-encoded) and /chunked (chunked over HTTP/1.1)")
    func nginxContent() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let trust = curlTrusting(nginx.rootPEMPath, port: nginx.port)
        let base = "https://localhost:\(nginx.port)"

        let big = try await ExternalPeers.curl(trust + ["\(base)/big"])
        #expect(big.status == 0, "\(big.stderr)")
        #expect(big.stdout.count == 1 << 20)
        #expect(big.stdout == Array(try Data(contentsOf: nginx.bigFile)))

        let gzip = try await ExternalPeers.curl(
            trust + ["--compressed", "--dump-header", "/dev/stderr", "\(base)/gzip"]
        )
        #expect(gzip.status == 0, "\(gzip.stderr)")
        #expect(gzip.stderr.lowercased().contains("content-encoding: gzip"))
        let gzipFile = try Data(contentsOf: nginx.gzipFile)
        #expect(gzipFile.count > 100_000)
        #expect(gzip.stdout == Array(gzipFile))

        let chunked = try await ExternalPeers.curl(
            trust + ["--http1.1", "--dump-header", "/dev/stderr", "\(base)/chunked"]
        )
        #expect(chunked.status == 0, "\(chunked.stderr)")
        #expect(chunked.stderr.lowercased().contains("transfer-encoding: chunked"))
        #expect(!chunked.stderr.lowercased().contains("content-length"))
        #expect(chunked.stdout == Array(try Data(contentsOf: nginx.chunkedFile)))
    }

    @Test("nginx redirects: status codes, Location, a 7-hop chain and a loop")
    func nginxRedirects() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let trust = curlTrusting(nginx.rootPEMPath, port: nginx.port)
        let base = "https://localhost:\(nginx.port)"
        let expected: [(String, String, String)] = [
            ("/r301", "301", "\(base)/hello"),
            ("/r302", "302", "\(base)/hello"),
            ("/r307", "307", "\(base)/hello"),
            ("/r308", "308", "\(base)/hello"),
            ("/loop", "302", "\(base)/loop"),
            ("/chain/1", "302", "\(base)/chain/2"),
            ("/chain/6", "302", "\(base)/chain/7"),
            ("/chain/7", "302", "\(base)/hello"),
        ]
        for (path, code, location) in expected {
            let result = try await ExternalPeers.curl(
                trust + ["--output", "/dev/null", "--write-out", "%{http_code} %{redirect_url}", base + path]
            )
            #expect(result.output == "\(code) \(location)", "\(path)")
        }
        let relative = try await ExternalPeers.curl(
            trust + ["--output", "/dev/null", "--dump-header", "-", "\(base)/r302-relative"]
        )
        #expect(relative.output.lowercased().contains("location: /hello\r\n"))
        let followed = try await ExternalPeers.curl(
            trust + [
                "--location", "--write-out", "%{http_code} %{num_redirects}", "--output", "/dev/null",
                "\(base)/chain/1",
            ]
        )
        #expect(followed.output == "200 7")
        let loop = try await ExternalPeers.curl(trust + ["--location", "--max-redirs", "10", "\(base)/loop"])
        #expect(loop.status == 47)  // CURLE_TOO_MANY_REDIRECTS
    }

    @Test("nginx legacy variant speaks only TLS 1.0/1.1")
    func nginxLegacyTLS() async throws {
        let nginx = try await timedStart("nginx (legacy TLS)") {
            try await NginxServer.start(chain: chain, variant: .legacyTLS)
        }
        defer { nginx.stop() }
        let trust = curlTrusting(nginx.rootPEMPath, port: nginx.port)
        let url = "https://localhost:\(nginx.port)/hello"

        let modern = try await ExternalPeers.curl(trust + [url])
        #expect(modern.status == 35, "curl with TLS ≥ 1.2 must fail the handshake: \(modern.stderr)")

        let legacy = try await ExternalPeers.curl(
            trust + ["--verbose", "--tlsv1.1", "--tls-max", "1.1", "--ciphers", "DEFAULT@SECLEVEL=0", url]
        )
        #expect(legacy.status == 0, "\(legacy.stderr)")
        #expect(legacy.output == "hello from nginx\n")
        #expect(legacy.stderr.contains("SSL connection using TLSv1.1"))

        let sClient = try await ExternalPeers.run(
            try ExternalPeers.findTool("openssl"),
            [
                "s_client", "-connect", "127.0.0.1:\(nginx.port)", "-servername", "localhost", "-tls1_1",
                "-cipher", "DEFAULT@SECLEVEL=0", "-CAfile", nginx.rootPEMPath,
            ]
        )
        #expect(sClient.output.contains("Protocol  : TLSv1.1"), "\(sClient.output)")
        #expect(sClient.output.contains("Verify return code: 0 (ok)"))
    }

    @Test("openssl s_server -www answers GET / over HTTP/1.0")
    func opensslServer() async throws {
        let server = try await timedStart("openssl s_server") { try await OpenSSLServer.start(chain: chain) }
        defer { server.stop() }
        let result = try await ExternalPeers.curl(
            curlTrusting(server.rootPEMPath, port: server.port)
                + ["--write-out", "\n%{http_code} %{http_version}", "https://localhost:\(server.port)/"]
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output.contains("s_server"))
        #expect(result.output.hasSuffix("\n200 1"))
    }

    @Test("mitmproxy: refused without its CA (nothing reaches it), proxies with it (flow logged)")
    func mitmproxy() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await timedStart("mitmproxy") { try await MitmproxyServer.start(upstreamPort: nginx.port) }
        defer { mitm.stop() }
        let url = "https://localhost:\(mitm.port)/hello"
        let resolve = ["--resolve", "localhost:\(mitm.port):127.0.0.1"]

        let refused = try await ExternalPeers.curl(resolve + ["--cacert", nginx.rootPEMPath, url])
        #expect(refused.status == 60, "\(refused.stderr)")
        // mitmproxy logs the event in its own time, which on two loaded cores can exceed the default 5 s; the wait
        // ends as soon as the event is there.
        let events = try await mitm.tlsEvents(until: { $0.hasPrefix("failed localhost") }, timeout: .seconds(30))
        #expect(events.contains { $0.hasPrefix("failed localhost") }, "\(events)")
        #expect(mitm.requestsSeen.isEmpty)
        #expect(nginx.accessLog().isEmpty)

        let proxied = try await ExternalPeers.curl(resolve + ["--cacert", mitm.caCertificatePEMPath, url])
        #expect(proxied.status == 0, "\(proxied.stderr)")
        #expect(proxied.output == "hello from nginx\n")
        #expect(mitm.requestsSeen == ["GET https://127.0.0.1:\(nginx.port)/hello"])
        #expect(try await nginx.accessLog(atLeast: 1).map(\.request) == ["GET /hello HTTP/2.0"])
        _ = try mitm.caCertificate()
    }
}

// MARK: - The Bulwark client against the same peers

@Suite("Interop with the Bulwark client", .serialized, .tags(.externalPeers))
struct InteropClientTests {
    let chain = InteropChain.shared
    var root: Certificate { self.chain.root.certificate }
    /// The genuine chain's backup pins: intermediate and root keys (what OkHttp and TrustKit recommend pinning).
    var genuinePins: PinSet {
        get throws {
            try PinSet([Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.root)])
        }
    }

    /// Runs `body` with a client that evaluates `localhost` with `evaluator`, then shuts the client down.
    func withClient<Result>(
        _ evaluator: any ServerTrustEvaluating,
        configure: (inout BulwarkClient.Configuration) -> Void = { _ in },
        _ body: (BulwarkClient) async throws -> Result
    ) async throws -> Result {
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": evaluator])
        )
        configure(&configuration)
        let client = BulwarkClient(configuration: configuration)
        do {
            let result = try await body(client)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    /// GET `path` on localhost:`port`, returning the response and its whole body.
    func get(_ client: BulwarkClient, port: Int, _ path: String) async throws -> (BulwarkResponse, ByteBuffer) {
        let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(port)\(path)"))
        let body = try await response.body.collect(upTo: 10 << 20)
        return (response, body)
    }

    @Test("nginx over HTTP/2: two GETs of /hello on one connection")
    func nginxHTTP2KeepAlive() async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: .modern)
        defer { nginx.stop() }
        try await withClient(.default(roots: .custom([root]))) { client in
            for _ in 0..<2 {
                let (response, body) = try await get(client, port: nginx.port, "/hello")
                #expect(response.status == .ok)
                #expect(response.httpVersion == .http2)
                #expect(String(buffer: body) == "hello from nginx\n")
            }
        }
        let log = try await nginx.accessLog(atLeast: 2)
        #expect(log.map(\.request) == ["GET /hello HTTP/2.0", "GET /hello HTTP/2.0"])
        #expect(log.map(\.requestOnConnection) == [1, 2])
        #expect(Set(log.map(\.connection)).count == 1, "\(log)")
    }

    /// nginx ends an HTTP/2 connection after `keepalive_requests` requests: GOAWAY naming the last stream it serves,
    /// then it closes the connection once that stream is done, and leaves the streams after it unanswered. Before,
    /// those streams failed (remote_connection_closed, "the connection was closed before the response was complete"),
    /// and a request handed the connection between the GOAWAY and the close could wait for its read timeout.
    @Test("nginx over HTTP/2 with keepalive_requests 2: every request after its GOAWAY goes to a new connection")
    func nginxHTTP2GoAway() async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: .modern, keepaliveRequests: 2)
        defer { nginx.stop() }
        try await withClient(.default(roots: .custom([root]))) { client in
            for _ in 0..<10 {
                let (response, body) = try await get(client, port: nginx.port, "/hello")
                #expect(response.httpVersion == .http2 && String(buffer: body) == "hello from nginx\n")
            }
            try await withThrowingTaskGroup(of: String.self) { group in
                // Eight at once on one connection: nginx serves two and its GOAWAY leaves the others unprocessed;
                // they go to the next connection, which serves two more, and so on (three times sent again).
                for _ in 0..<8 {
                    group.addTask { String(buffer: try await get(client, port: nginx.port, "/hello").1) }
                }
                for try await body in group { #expect(body == "hello from nginx\n") }
            }
        }
        let log = try await nginx.accessLog(atLeast: 18)
        #expect(log.count == 18, "\(log)")
        #expect(log.allSatisfy { $0.requestOnConnection <= 2 && $0.protocolVersion == "HTTP/2.0" }, "\(log)")
    }

    @Test("nginx over HTTP/1.1: two GETs of /hello on one keep-alive connection")
    func nginxHTTP1KeepAlive() async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: .modernHTTP1)
        defer { nginx.stop() }
        try await withClient(.default(roots: .custom([root]))) { client in
            for _ in 0..<2 {
                let (response, body) = try await get(client, port: nginx.port, "/hello")
                #expect(response.status == .ok)
                #expect(response.httpVersion == .http1_1)
                #expect(String(buffer: body) == "hello from nginx\n")
            }
        }
        let log = try await nginx.accessLog(atLeast: 2)
        #expect(log.map(\.request) == ["GET /hello HTTP/1.1", "GET /hello HTTP/1.1"])
        #expect(log.map(\.requestOnConnection) == [1, 2])
        #expect(Set(log.map(\.connection)).count == 1, "\(log)")
    }

    @Test("ALPN limited to http/1.1 against an h2-capable nginx")
    func nginxALPNHTTP1Only() async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: .modern)
        defer { nginx.stop() }
        try await withClient(
            .default(roots: .custom([root])),
            configure: { $0.tls.applicationProtocols = ["http/1.1"] },
            { client in
                let (response, body) = try await get(client, port: nginx.port, "/hello")
                #expect(response.httpVersion == .http1_1)
                #expect(String(buffer: body) == "hello from nginx\n")
            }
        )
        #expect(try await nginx.accessLog(atLeast: 1).map(\.protocolVersion) == ["HTTP/1.1"])
    }

    @Test("nginx /big: a 1 MiB body arrives intact", arguments: [NginxServer.Variant.modern, .modernHTTP1])
    func nginxBigBody(variant: NginxServer.Variant) async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: variant)
        defer { nginx.stop() }
        let expected = try Data(contentsOf: nginx.bigFile)
        try await withClient(.default(roots: .custom([root]))) { client in
            let (response, body) = try await get(client, port: nginx.port, "/big")
            #expect(response.status == .ok)
            #expect(response.httpVersion == (variant == .modern ? .http2 : .http1_1))
            #expect(body.readableBytes == 1 << 20)
            #expect(Data(body.readableBytesView) == expected)
        }
    }

    @Test("nginx /gzip: decompressed body equals the file", arguments: [NginxServer.Variant.modern, .modernHTTP1])
    func nginxGzip(variant: NginxServer.Variant) async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: variant)
        defer { nginx.stop() }
        let expected = try Data(contentsOf: nginx.gzipFile)
        try await withClient(.default(roots: .custom([root]))) { client in
            let (response, body) = try await get(client, port: nginx.port, "/gzip")
            #expect(response.status == .ok)
            #expect(Data(body.readableBytesView) == expected)
        }
    }

    @Test("nginx /gzip with decompression off: no accept-encoding sent, identity body")
    func nginxGzipDecompressionOff() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let expected = try Data(contentsOf: nginx.gzipFile)
        try await withClient(
            .default(roots: .custom([root])),
            configure: { $0.decompression = nil },
            { client in
                let (response, body) = try await get(client, port: nginx.port, "/gzip")
                #expect(response.headers["content-encoding"].isEmpty)
                #expect(Data(body.readableBytesView) == expected)
            }
        )
    }

    @Test("nginx /chunked over HTTP/1.1: body intact, connection reused afterwards")
    func nginxChunked() async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: .modernHTTP1)
        defer { nginx.stop() }
        let expected = try Data(contentsOf: nginx.chunkedFile)
        try await withClient(.default(roots: .custom([root]))) { client in
            for _ in 0..<2 {
                let (response, body) = try await get(client, port: nginx.port, "/chunked")
                #expect(response.httpVersion == .http1_1)
                #expect(response.headers["content-length"].isEmpty)
                #expect(Data(body.readableBytesView) == expected)
            }
        }
        // Chunked framing parsed correctly: the second request went on the same connection.
        let log = try await nginx.accessLog(atLeast: 2)
        #expect(log.map(\.requestOnConnection) == [1, 2])
        #expect(Set(log.map(\.connection)).count == 1, "\(log)")
    }

    @Test("nginx speaking only TLS 1.0/1.1 is refused by default with tlsHandshakeFailed")
    func nginxLegacyTLSRefused() async throws {
        let nginx = try await NginxServer.start(chain: chain, variant: .legacyTLS)
        defer { nginx.stop() }
        try await withClient(.default(roots: .custom([root]))) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/hello"))
            }
            #expect(error?.code == .tlsHandshakeFailed, "\(String(describing: error))")
        }
        #expect(nginx.accessLog().isEmpty)
    }

    @Test("openssl s_server -www: GET / answered over HTTP/1.0 and close, twice")
    func opensslServer() async throws {
        let server = try await OpenSSLServer.start(chain: chain)
        defer { server.stop() }
        try await withClient(.default(roots: .custom([root]))) { client in
            for _ in 0..<2 {
                let (response, body) = try await get(client, port: server.port, "/")
                #expect(response.status == .ok)
                #expect(String(buffer: body).contains("s_server"))
            }
        }
    }

    @Test("mitmproxy with default trust: trustRefused, no request reaches the proxy")
    func mitmproxyRefused() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(upstreamPort: nginx.port)
        defer { mitm.stop() }
        try await withClient(.default(roots: .custom([root]))) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:\(mitm.port)/hello"))
            }
            #expect(error?.code == .trustRefused, "\(String(describing: error))")
            #expect(error?.trustRefusal != nil)
        }
        // The client did reach the proxy (so the empty flow log means something) …
        // mitmproxy logs the event in its own time, which on two loaded cores can exceed the default 5 s; the wait
        // ends as soon as the event is there.
        let events = try await mitm.tlsEvents(until: { $0.hasPrefix("failed") }, timeout: .seconds(30))
        #expect(events.contains("clienthello localhost"), "\(events)")
        #expect(!events.contains { $0.hasPrefix("established") }, "\(events)")
        // … and sent it nothing.
        #expect(mitm.requestsSeen.isEmpty)
        #expect(nginx.accessLog().isEmpty)
    }

    /// A CA for mitmproxy made like an ordinary private CA (ECDSA, no extended key usage on the CA certificate).
    static let proxyCA: TestIdentity = try! CertificateFactory.makeRoot(
        commonName: "Interop Proxy CA",
        validity: .between(Date() - 7 * 86_400, Date() + 30 * 86_400)  // mitmproxy backdates its leaves 2 days
    )

    @Test("mitmproxy's own CA added as a custom root: the request goes through it and is logged")
    func mitmproxyTrusted() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(upstreamPort: nginx.port)
        defer { mitm.stop() }
        let mitmCA = try mitm.caCertificate()
        // mitmproxy marks its CA with extendedKeyUsage serverAuth; as a root the user configured, that is accepted.
        #expect(mitmCA.extensions[oid: .X509ExtensionID.extendedKeyUsage] != nil)
        try await withClient(.default(roots: .custom([root, mitmCA]))) { client in
            let (response, body) = try await get(client, port: mitm.port, "/hello")
            #expect(response.status == .ok)
            #expect(String(buffer: body) == "hello from nginx\n")
        }
        #expect(mitm.requestsSeen == ["GET https://127.0.0.1:\(nginx.port)/hello"])
        #expect(try await nginx.accessLog(atLeast: 1).map(\.status) == [200])
    }

    @Test("mitmproxy issuing from a private CA we configured: trusted as a custom root")
    func mitmproxyPrivateCATrusted() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(upstreamPort: nginx.port, certificateAuthority: Self.proxyCA)
        defer { mitm.stop() }
        let mitmCA = try mitm.caCertificate()
        #expect(mitmCA == Self.proxyCA.certificate)
        try await withClient(.default(roots: .custom([root, mitmCA]))) { client in
            let (response, body) = try await get(client, port: mitm.port, "/hello")
            #expect(response.status == .ok)
            #expect(String(buffer: body) == "hello from nginx\n")
        }
        #expect(mitm.requestsSeen == ["GET https://127.0.0.1:\(nginx.port)/hello"])
    }

    @Test("pinned intermediate and root keys: nginx accepted, mitmproxy refused with pinMismatch")
    func mitmproxyPinned() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(upstreamPort: nginx.port)
        defer { mitm.stop() }
        let mitmCA = try mitm.caCertificate()
        let pinned = PublicKeysTrustEvaluator.publicKeys(try genuinePins, roots: .custom([root, mitmCA]))
        try await withClient(pinned) { client in
            // The pins are the genuine chain's: straight to nginx, they hold.
            let (direct, body) = try await get(client, port: nginx.port, "/hello")
            #expect(direct.status == .ok)
            #expect(String(buffer: body) == "hello from nginx\n")
            // Through the proxy the chain is valid (its CA is a root here) but carries none of the pins.
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:\(mitm.port)/hello"))
            }
            #expect(error?.code == .trustRefused, "\(String(describing: error))")
            let reasons = error?.trustRefusal?.reasons ?? []
            #expect(reasons.count == 1, "\(reasons)")
            #expect(reasons.contains { $0.code == "pin_mismatch" }, "\(reasons)")
        }
        #expect(mitm.requestsSeen.isEmpty)
        #expect(try await nginx.accessLog(atLeast: 1).count == 1)  // only the direct request
    }
}
