import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing

// The client against a proxy that misbehaves (ScriptedProxyServer, in process on 127.0.0.1): every broken answer ends
// with a typed error naming the proxy, and nothing is sent that should not be.

/// A client whose trust manager knows `localhost`, going through `proxy`.
func proxiedClient(
    _ proxy: BulwarkClient.Proxy,
    monitor: RecordingEventMonitor = RecordingEventMonitor(),
    configure: (inout BulwarkClient.Configuration) throws -> Void = { _ in }
) throws -> BulwarkClient {
    let chain = try TestChain.make(host: "localhost")
    var configuration = BulwarkClient.Configuration(
        trust: try ServerTrustManager(evaluators: ["localhost": .default(roots: .custom([chain.root.certificate]))])
    )
    configuration.proxy = proxy
    configuration.eventMonitor = monitor
    try configure(&configuration)
    return BulwarkClient(configuration: configuration)
}

/// The error of a request that must fail.
func proxiedError(_ client: BulwarkClient, _ url: String, timeout: TimeAmount? = nil) async -> BulwarkError? {
    do {
        if let timeout {
            _ = try await client.execute(BulwarkRequest(url: url), timeout: timeout)
        } else {
            _ = try await client.execute(BulwarkRequest(url: url))
        }
        Issue.record("the request to \(url) succeeded")
        return nil
    } catch let error as BulwarkError {
        return error
    } catch {
        Issue.record("not a BulwarkError: \(error)")
        return nil
    }
}

@Suite("Proxies: broken answers, credentials, choice per host")
struct ProxyClientTests {
    func url(_ proxy: ScriptedProxyServer) -> URL { URL(string: "http://127.0.0.1:\(proxy.port)")! }

    func withProxy(
        _ behavior: ScriptedProxyServer.Behavior,
        _ body: (ScriptedProxyServer) async throws -> Void
    ) async throws {
        let proxy = try await ScriptedProxyServer.start(behavior)
        do {
            try await body(proxy)
        } catch {
            try await proxy.shutdown()
            throw error
        }
        try await proxy.shutdown()
    }

    @Test("the CONNECT request names the origin's host and port only: no path, no credentials before a 407")
    func connectRequestBytes() async throws {
        try await withProxy(.reply(Array("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".utf8), close: true)) {
            proxy in
            let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "pw"))
            let client = try proxiedClient(.http(url(proxy), credentials: credentials))
            let error = await proxiedError(client, "https://localhost:8443/secret/path?token=abc")
            #expect(error?.code == .proxyRefused)
            #expect(
                error?.description
                    == "proxy_refused (localhost): the proxy at 127.0.0.1:\(proxy.port) refused the tunnel to "
                    + "localhost: 403 Forbidden"
            )
            #expect(
                String(decoding: proxy.receivedBytes, as: UTF8.self)
                    == "CONNECT localhost:8443 HTTP/1.1\r\nHost: localhost:8443\r\n\r\n"
            )
            await client.shutdown()
        }
    }

    @Test("resolveOverrides apply to the proxy's own host, as curl's --resolve does; the error names the proxy's name")
    func resolveOverridesReachTheProxy() async throws {
        try await withProxy(.reply(Array("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".utf8), close: true)) {
            proxy in
            let client = try proxiedClient(.http(URL(string: "http://proxy.bulwark.test:\(proxy.port)")!)) {
                $0.resolveOverrides[.init(host: "proxy.bulwark.test", port: proxy.port)] = "127.0.0.1"
            }
            let error = await proxiedError(client, "https://localhost:8443/")
            #expect(error?.code == .proxyRefused)
            #expect(
                error?.description
                    == "proxy_refused (localhost): the proxy at proxy.bulwark.test:\(proxy.port) refused the tunnel to "
                    + "localhost: 403 Forbidden"
            )
            #expect(proxy.connectionCount == 1)
            await client.shutdown()
        }
    }

    @Test(
        "a 407 with a Basic challenge is answered once with the credentials, on a new connection; a second 407 is proxy_auth_failed"
    )
    func basicRetryOnce() async throws {
        let answer = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"t\"\r\n\r\n"
        try await withProxy(.reply(Array(answer.utf8), close: true)) { proxy in
            let monitor = RecordingEventMonitor()
            let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "pw"))
            let client = try proxiedClient(.http(url(proxy), credentials: credentials), monitor: monitor)
            let error = await proxiedError(client, "https://localhost:8443/")
            #expect(error?.code == .proxyAuthFailed)
            #expect(proxy.connectionCount == 2)
            let sent = String(decoding: proxy.receivedBytes, as: UTF8.self)
            #expect(
                sent == "CONNECT localhost:8443 HTTP/1.1\r\nHost: localhost:8443\r\n\r\n"
                    + "CONNECT localhost:8443 HTTP/1.1\r\nHost: localhost:8443\r\n"
                    + "Proxy-Authorization: Basic YWxpY2U6cHc=\r\n\r\n"
            )
            #expect(monitor.events.filter { $0.kind == .proxyAuthRequired }.count == 2)
            #expect(!monitor.events.map(\.description).joined().contains("YWxpY2U6cHc"))
            #expect(error.map { String(reflecting: $0) }?.contains("pw") == false)
            // The proxy asked once: the next tunnel sends the credentials at once.
            _ = await proxiedError(client, "https://localhost:8443/")
            #expect(proxy.connectionCount == 3)
            await client.shutdown()
        }
    }

    @Test("Digest, NTLM or Negotiate only: a typed error naming the scheme, credentials never sent")
    func unsupportedScheme() async throws {
        let answer =
            "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Digest realm=\"x\", nonce=\"y\"\r\n"
            + "Proxy-Authenticate: NTLM\r\nContent-Length: 0\r\n\r\n"
        try await withProxy(.reply(Array(answer.utf8), close: false)) { proxy in
            let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "pw"))
            let client = try proxiedClient(.http(url(proxy), credentials: credentials))
            let error = await proxiedError(client, "https://localhost:8443/")
            #expect(error?.code == .proxyAuthSchemeUnsupported)
            #expect(error?.description.contains("requires Digest or NTLM authentication (407)") == true)
            #expect(proxy.connectionCount == 1)
            #expect(!String(decoding: proxy.receivedBytes, as: UTF8.self).contains("Proxy-Authorization"))
            await client.shutdown()
        }
    }

    @Test("garbage, a 200 with a body, and a close mid-handshake: proxy_handshake_failed naming the proxy")
    func brokenAnswers() async throws {
        let cases: [(ScriptedProxyServer.Behavior, String)] = [
            (.reply(Array("SSH-2.0-OpenSSH_9.2\r\n\r\n".utf8), close: false), "did not answer as a proxy"),
            (
                .reply(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8), close: false),
                "sent 5 bytes after granting the tunnel"
            ),
            (.close, "closed the connection before the tunnel was set up"),
        ]
        for (behavior, words) in cases {
            try await withProxy(behavior) { proxy in
                let client = try proxiedClient(.http(url(proxy)))
                let error = await proxiedError(client, "https://localhost:8443/")
                #expect(error?.code == .proxyHandshakeFailed)
                #expect(
                    error?.description.contains("the proxy at 127.0.0.1:\(proxy.port) \(words)") == true,
                    "\(String(describing: error))"
                )
                await client.shutdown()
            }
        }
    }

    @Test("a host outside the allowlist: the proxy gets no connection and no byte")
    func allowlistFirst() async throws {
        try await withProxy(.silent) { proxy in
            let client = try proxiedClient(.http(url(proxy))) {
                $0.allowlist = try HostAllowlist(patterns: ["localhost"])
            }
            let error = await proxiedError(client, "https://refused.example/")
            #expect(error?.code == .hostNotAllowed)
            try await Task.sleep(for: .milliseconds(100))
            #expect(proxy.connectionCount == 0)
            #expect(proxy.receivedBytes.isEmpty)
            await client.shutdown()
        }
    }

    @Test("proxyOverrides: .none sends a host direct; the environment's no_proxy too")
    func choicePerHost() async throws {
        try await withProxy(.reply(Array("HTTP/1.1 403 Forbidden\r\n\r\n".utf8), close: true)) { proxy in
            let closed = try ExternalPeers.ClosedPort()
            let overridden = try proxiedClient(.http(url(proxy))) {
                $0.proxyOverrides = try .init(["localhost": .none])
            }
            #expect(await proxiedError(overridden, "https://localhost:\(closed.port)/")?.code == .connectFailed)
            #expect(proxy.connectionCount == 0)
            await overridden.shutdown()

            let variables = ["https_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": "localhost"]
            let environment = try proxiedClient(.environment(ProxyEnvironment(variables)))
            #expect(await proxiedError(environment, "https://localhost:\(closed.port)/")?.code == .connectFailed)
            #expect(proxy.connectionCount == 0)
            await environment.shutdown()

            let proxied = try proxiedClient(.environment(ProxyEnvironment(["https_proxy": "127.0.0.1:\(proxy.port)"])))
            #expect(await proxiedError(proxied, "https://localhost:\(closed.port)/")?.code == .proxyRefused)
            #expect(proxy.connectionCount == 1)
            await proxied.shutdown()
        }
    }

    @Test("a proxy URL that cannot be used fails every request with invalid_configuration, without the password")
    func invalidProxy() async throws {
        let client = try proxiedClient(.url("socks4://user:hunter2@127.0.0.1:1080"))
        let error = await proxiedError(client, "https://localhost:8443/")
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.description.contains("socks4") == true)
        #expect(error?.description.contains("hunter2") == false)
        await client.shutdown()
        let environment = try proxiedClient(.environment(ProxyEnvironment(["https_proxy": "http://u:hunter2@:1"])))
        let fromEnvironment = await proxiedError(environment, "https://localhost:8443/")
        #expect(fromEnvironment?.code == .invalidConfiguration)
        #expect(fromEnvironment?.description.contains("https_proxy") == true)
        #expect(fromEnvironment?.description.contains("hunter2") == false)
        await environment.shutdown()
    }

    @Test("plain http through an HTTP proxy: absolute form with Proxy-Authorization, only when plain HTTP is allowed")
    func absoluteForm() async throws {
        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
        try await withProxy(.reply(Array(answer.utf8), close: false)) { proxy in
            let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "pw"))
            let refused = try proxiedClient(.http(url(proxy), credentials: credentials))
            #expect(await proxiedError(refused, "http://localhost:8080/a?b=c")?.code == .plainHTTPNotAllowed)
            #expect(proxy.connectionCount == 0)
            await refused.shutdown()
            let client = try proxiedClient(.http(url(proxy), credentials: credentials)) { $0.allowsPlainHTTP = true }
            let response = try await client.execute(BulwarkRequest(url: "http://localhost:8080/a?b=c"))
            #expect(String(buffer: try await response.body.collect(upTo: 100)) == "ok")
            let sent = String(decoding: proxy.receivedBytes, as: UTF8.self)
            #expect(sent.hasPrefix("GET http://localhost:8080/a?b=c HTTP/1.1\r\n"), "\(sent)")
            #expect(sent.contains("proxy-authorization: Basic YWxpY2U6cHc=\r\n"), "\(sent)")
            await client.shutdown()
        }
    }

    @Test("descriptions never show credentials")
    func descriptions() throws {
        let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "hunter2"))
        let proxy = BulwarkClient.Proxy.http(URL(string: "http://proxy.example:3128")!, credentials: credentials)
        #expect("\(proxy)" == "http://proxy.example:3128 (credentials)")
        let fromURL = BulwarkClient.Proxy.url("socks5h://alice:hunter2@127.0.0.1")
        #expect("\(fromURL)" == "socks5://127.0.0.1:1080 (credentials)")
        var dumped = ""
        dump(fromURL, to: &dumped)
        #expect(!dumped.contains("hunter2") && !dumped.contains("alice"), "\(dumped)")
        let overrides = try BulwarkClient.ProxyOverrides(["**.internal.example": .none, "api.example": proxy])
        #expect(
            "\(overrides)"
                == "ProxyOverrides(**.internal.example: none, api.example: http://proxy.example:3128 (credentials))"
        )
    }
}

@Suite("Proxies: time limits cover the proxy handshake", .tags(.timing))
struct ProxyTimingTests {
    @Test("a proxy that never answers: the connect timeout names the proxy; the request deadline ends it")
    func silentProxy() async throws {
        let proxy = try await ScriptedProxyServer.start(.silent)
        let url = URL(string: "http://127.0.0.1:\(proxy.port)")!
        let client = try proxiedClient(.http(url)) { $0.timeouts.connect = .milliseconds(300) }
        let started = ContinuousClock.now
        let error = await proxiedError(client, "https://localhost:8443/")
        #expect(error?.code == .connectTimeout)
        #expect(
            error?.description.contains("the proxy at 127.0.0.1:\(proxy.port) did not set up the tunnel in time")
                == true
        )
        #expect(ContinuousClock.now - started < .seconds(5))
        await client.shutdown()
        let bounded = try proxiedClient(.http(url))
        let deadline = await proxiedError(bounded, "https://localhost:8443/", timeout: .milliseconds(300))
        #expect(deadline?.code == .deadlineExceeded)
        await bounded.shutdown()
        try await proxy.shutdown()
    }

    @Test("an HTTPS proxy that never finishes the TLS handshake: the timeout names the proxy; no CONNECT was sent")
    func silentHTTPSProxy() async throws {
        let proxy = try await ScriptedProxyServer.start(.silent)
        let url = URL(string: "https://127.0.0.1:\(proxy.port)")!
        let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "pw"))
        let client = try proxiedClient(.https(url, credentials: credentials)) {
            $0.timeouts.connect = .milliseconds(300)
        }
        let started = ContinuousClock.now
        let error = await proxiedError(client, "https://localhost:8443/")
        #expect(error?.code == .connectTimeout)
        #expect(
            error?.description.contains("the proxy at 127.0.0.1:\(proxy.port) did not set up the tunnel in time")
                == true,
            "\(String(describing: error))"
        )
        #expect(ContinuousClock.now - started < .seconds(5))
        await client.shutdown()
        // Only the TLS client hello reached the proxy (a handshake record), never the CONNECT or the credentials.
        let received = proxy.receivedBytes
        #expect(received.first == 0x16)
        #expect(!String(decoding: received, as: UTF8.self).contains("CONNECT"))
        let bounded = try proxiedClient(.https(url))
        let deadline = await proxiedError(bounded, "https://localhost:8443/", timeout: .milliseconds(300))
        #expect(deadline?.code == .deadlineExceeded)
        await bounded.shutdown()
        try await proxy.shutdown()
    }
}
