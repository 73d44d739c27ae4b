import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing
import X509

// Requests through real proxies nobody here wrote: squid (HTTP CONNECT, Basic authentication) and dante (SOCKS5,
// username/password), both on 127.0.0.1 in front of nginx. The origin's pins apply inside the tunnel.

@Suite("Proxies: squid and dante", .serialized, .tags(.externalPeers))
struct ProxyInteropTests {
    let chain = InteropChain.shared
    var root: Certificate { self.chain.root.certificate }
    /// The genuine chain's intermediate and root keys.
    var pinned: PublicKeysTrustEvaluator {
        get throws {
            PublicKeysTrustEvaluator.publicKeys(
                try PinSet([Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.root)]),
                roots: .custom([self.root])
            )
        }
    }

    func withClient<Result>(
        proxy: BulwarkClient.Proxy,
        monitor: RecordingEventMonitor = RecordingEventMonitor(),
        configure: (inout BulwarkClient.Configuration) -> Void = { _ in },
        _ body: (BulwarkClient) async throws -> Result
    ) async throws -> Result {
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": try pinned])
        )
        configuration.proxy = proxy
        configuration.eventMonitor = monitor
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

    func credentials(_ user: String, _ password: String) throws -> ProxyCredentials {
        try ProxyCredentials(username: user, password: SecretBytes(utf8: password))
    }

    // MARK: - squid

    @Test(
        "squid: a pinned request through CONNECT succeeds; the 407 is answered once with Basic; the log shows the CONNECT only"
    )
    func squidPinned() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let monitor = RecordingEventMonitor()
        let proxy = BulwarkClient.Proxy.http(
            URL(string: "http://127.0.0.1:\(squid.port)")!,
            credentials: try credentials(SquidProxy.username, SquidProxy.password)
        )
        try await withClient(proxy: proxy, monitor: monitor) { client in
            for path in ["/hello?token=secret-query", "/hello"] {
                let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)\(path)"))
                let body = try await response.body.collect(upTo: 1 << 20)
                #expect(response.status == .ok)
                #expect(String(buffer: body) == "hello from nginx\n")
                #expect(response.serverTrust?.trustedChain != nil)
            }
        }
        // squid logs the start-up probe's empty connection too.
        let log = try await squid.accessLog(atLeast: 3).filter { !$0.contains("transaction-end-before-headers") }
        // The first CONNECT without credentials (407), then one with them; the second request reused the tunnel.
        #expect(log.count == 2, "\(log)")
        #expect(log.allSatisfy { $0.contains("CONNECT localhost:\(nginx.port)") }, "\(log)")
        #expect(log.first?.contains("TCP_DENIED/407") == true, "\(log)")
        let all = log.joined(separator: "\n")
        #expect(!all.contains("/hello"), "the origin's path is inside the tunnel: \(log)")
        #expect(!all.contains("secret-query"))
        #expect(!all.contains(SquidProxy.password))
        // nginx saw the requests, not squid.
        let origin = try await nginx.accessLog(atLeast: 2)
        #expect(origin.map(\.request).contains("GET /hello?token=secret-query HTTP/2.0"))
        let kinds = monitor.events.map(\.kind)
        #expect(kinds.contains(.proxyAuthRequired))
        #expect(kinds.filter { $0 == .proxyConnected }.count == 1, "\(kinds)")
        let connected = monitor.events.first { $0.kind == .proxyConnected }
        #expect(connected?.details[.proxy]?.text == "127.0.0.1:\(squid.port)")
        #expect(!monitor.events.map(\.description).joined().contains(SquidProxy.password))
    }

    @Test("a policy file's proxy section: squid with credentials from a file, a host sent direct, pins unchanged")
    func squidFromAPolicyFile() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let directory = try ExternalPeers.makeDirectory("proxy-policy")
        defer { try? FileManager.default.removeItem(at: directory) }
        try "\(SquidProxy.username):\(SquidProxy.password)\n"
            .write(to: directory.appending(path: "proxy-credentials"), atomically: true, encoding: .utf8)
        let pins = [Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.root)]
        let policyText = """
            {
              "format": "bulwark-policy/1",
              "hosts": {
                "localhost": {
                  "evaluator": "publicKeys",
                  "pins": ["\(pins[0])", "\(pins[1])"],
                  "roots": { "system": false, "certificates": [{ "pem": \(Self.jsonString(self.chain.root.certificatePEM)) }] }
                }
              },
              "proxy": {
                "use": "http://127.0.0.1:\(squid.port)",
                "credentialsFile": "proxy-credentials",
                "hosts": { "direct.invalid": { "use": "none" } }
              }
            }
            """
        let policyPath = directory.appending(path: "bulwark-policy.json").path
        try policyText.write(toFile: policyPath, atomically: true, encoding: .utf8)
        let configuration = try BulwarkClient.Configuration(policyFile: policyPath)
        #expect(configuration.proxy.description == "http://127.0.0.1:\(squid.port) (credentials)")
        #expect(configuration.proxyOverrides.proxy(forHost: "direct.invalid")?.proxy.description == "none")
        #expect(!"\(configuration)".contains(SquidProxy.password))
        let client = BulwarkClient(configuration: configuration)
        do {
            let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/hello"))
            #expect(response.status == .ok)
            #expect(String(buffer: try await response.body.collect(upTo: 1 << 20)) == "hello from nginx\n")
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        let log = try await squid.accessLog(atLeast: 2)
        #expect(log.contains { $0.contains("CONNECT localhost:\(nginx.port)") && !$0.contains("/407") }, "\(log)")

        // The same command-line policy: `bulwark fetch --policy FILE` goes through squid too.
        let fetched = try await ProxyCLITests.run([
            "fetch", "https://localhost:\(nginx.port)/hello", "--policy", policyPath,
        ])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stdout == "hello from nginx\n")

        // A credentials file that is not one user:password line is named with its pointer.
        try "no colon here\n".write(
            to: directory.appending(path: "proxy-credentials"),
            atomically: true,
            encoding: .utf8
        )
        let error = #expect(throws: PolicyFileError.self) { try BulwarkClient.Configuration(policyFile: policyPath) }
        #expect(error?.pointer == "/proxy/credentialsFile", "\(String(describing: error))")
        #expect(error?.description.contains("must hold one line, user:password") == true)
    }

    static func jsonString(_ text: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }

    @Test("squid: a wrong password ends with proxy_auth_failed naming the proxy and the 407")
    func squidWrongPassword() async throws {
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let proxy = BulwarkClient.Proxy.http(
            URL(string: "http://127.0.0.1:\(squid.port)")!,
            credentials: try credentials(SquidProxy.username, "not-the-password")
        )
        try await withClient(proxy: proxy) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
            }
            #expect(error?.code == .proxyAuthFailed)
            #expect(
                error?.description
                    == "proxy_auth_failed (localhost): the proxy at 127.0.0.1:\(squid.port) refused the proxy "
                    + "credentials: 407 Proxy Authentication Required"
            )
            #expect(error?.debugDescription.contains("not-the-password") == false)
        }
    }

    @Test("squid: without credentials, proxy_auth_required and its event")
    func squidNoCredentials() async throws {
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let monitor = RecordingEventMonitor()
        try await withClient(proxy: .http(URL(string: "http://127.0.0.1:\(squid.port)")!), monitor: monitor) {
            client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
            }
            #expect(error?.code == .proxyAuthRequired)
            #expect(error?.description.contains("the proxy at 127.0.0.1:\(squid.port) requires authentication") == true)
        }
        let event = monitor.events.first { $0.kind == .proxyAuthRequired }
        #expect(event?.details[.schemes]?.list == ["Basic"])
        #expect(event?.details[.status]?.number == 407)
    }

    @Test("squid: a host outside the allowlist costs the proxy zero bytes")
    func allowlistBeforeProxy() async throws {
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let proxy = BulwarkClient.Proxy.http(
            URL(string: "http://127.0.0.1:\(squid.port)")!,
            credentials: try credentials(SquidProxy.username, SquidProxy.password)
        )
        let allowlist: (inout BulwarkClient.Configuration) -> Void = {
            $0.allowlist = try! HostAllowlist(patterns: ["localhost"])
        }
        try await withClient(proxy: proxy, configure: allowlist) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://refused.example/"))
            }
            #expect(error?.code == .hostNotAllowed)
        }
        // squid logs every transaction, a refused or broken one too: none reached it.
        try await Task.sleep(for: .milliseconds(300))
        let log = try await squid.accessLog(atLeast: 0, timeout: .zero)
        #expect(log.filter { !$0.contains("transaction-end-before-headers") }.isEmpty, "\(log)")
    }

    // MARK: - dante

    @Test("dante: a pinned request through SOCKS5 with username/password succeeds")
    func dantePinned() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let dante = try await DanteProxy.start()
        defer { dante.stop() }
        let monitor = RecordingEventMonitor()
        let proxy = BulwarkClient.Proxy.socks5(
            URL(string: "socks5://127.0.0.1:\(dante.port)")!,
            credentials: try credentials(DanteProxy.username, DanteProxy.password)
        )
        try await withClient(proxy: proxy, monitor: monitor) { client in
            let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/hello"))
            let body = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .ok)
            #expect(String(buffer: body) == "hello from nginx\n")
        }
        #expect(monitor.events.contains { $0.kind == .proxyConnected })
        #expect(dante.log().contains("username%\(DanteProxy.username)@"), "\(dante.log())")
        #expect(!dante.log().contains(DanteProxy.password))
    }

    @Test("dante: a wrong password ends with proxy_auth_failed")
    func danteWrongPassword() async throws {
        let dante = try await DanteProxy.start()
        defer { dante.stop() }
        let proxy = BulwarkClient.Proxy.socks5(
            URL(string: "socks5://127.0.0.1:\(dante.port)")!,
            credentials: try credentials(DanteProxy.username, "wrong-password")
        )
        try await withClient(proxy: proxy) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
            }
            #expect(error?.code == .proxyAuthFailed)
            #expect(
                error?.description.hasPrefix(
                    "proxy_auth_failed (localhost): the SOCKS5 proxy at 127.0.0.1:\(dante.port) refused the username "
                        + "and password"
                ) == true,
                "\(String(describing: error))"
            )
        }
    }

    @Test("dante: without credentials, proxy_auth_required")
    func danteNoCredentials() async throws {
        let dante = try await DanteProxy.start()
        defer { dante.stop() }
        try await withClient(proxy: .socks5(URL(string: "socks5://127.0.0.1:\(dante.port)")!)) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
            }
            #expect(error?.code == .proxyAuthRequired)
        }
    }

    @Test("dante: the host name goes to the proxy; the client resolves nothing (host unreachable comes from dante)")
    func danteNoLocalDNS() async throws {
        let dante = try await DanteProxy.start()
        defer { dante.stop() }
        let proxy = BulwarkClient.Proxy.socks5(
            URL(string: "socks5://127.0.0.1:\(dante.port)")!,
            credentials: try credentials(DanteProxy.username, DanteProxy.password)
        )
        let monitor = RecordingEventMonitor()
        let roots = [self.root]
        let trust: (inout BulwarkClient.Configuration) -> Void = {
            $0.trust = try! ServerTrustManager(evaluators: ["origin.bulwark.test": .default(roots: .custom(roots))])
        }
        try await withClient(proxy: proxy, monitor: monitor, configure: trust) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://origin.bulwark.test:8443/"))
            }
            // A local lookup would have failed with connect_failed ("the name could not be resolved"); the proxy
            // answered the name with its reply code instead.
            #expect(error?.code == .proxyRefused)
            #expect(error?.description.contains("host unreachable (reply 4)") == true, "\(String(describing: error))")
        }
        let refused = monitor.events.first { $0.kind == .proxyRefused }
        #expect(refused?.details[.status]?.number == 4)
        #expect(dante.log().contains("origin.bulwark.test"), "\(dante.log())")
    }
}

@Suite("bulwark fetch through proxies", .serialized, .tags(.externalPeers))
struct ProxyCLITests {
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> CLI.Result {
        // The test process's own proxy variables must not decide for these runs.
        var variables = [
            "https_proxy": "", "HTTPS_PROXY": "", "http_proxy": "", "all_proxy": "", "ALL_PROXY": "", "no_proxy": "",
            "NO_PROXY": "",
        ]
        variables.merge(environment) { $1 }
        let result = try await ProcessRunner.run(CLI.binary, arguments, environment: variables, timeout: .seconds(120))
        return CLI.Result(status: result.status, stdout: result.output, stderr: result.stderr)
    }

    @Test("--proxy with --proxy-user-file, a wrong password, the environment, and --noproxy")
    func fetchThroughSquid() async throws {
        let chain = InteropChain.shared
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        let good = try CLI.write("\(SquidProxy.username):\(SquidProxy.password)\n", name: "proxy-user")
        let bad = try CLI.write("\(SquidProxy.username):wrong-password\n", name: "proxy-user-bad")
        defer { for path in [root, good, bad] { try? FileManager.default.removeItem(atPath: path) } }
        let url = "https://localhost:\(nginx.port)/hello"
        let proxy = "http://127.0.0.1:\(squid.port)"

        let ok = try await Self.run(["fetch", url, "--ca", root, "--proxy", proxy, "--proxy-user-file", good])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout == "hello from nginx\n")
        #expect(ok.stderr.hasPrefix("h2 200 OK\ntrusted; verified chain:\n"), "\(ok.stderr)")

        let refused = try await Self.run(["fetch", url, "--ca", root, "--proxy", proxy, "--proxy-user-file", bad])
        #expect(refused.status == 3)
        #expect(
            refused.stderr
                == "bulwark fetch: proxy_auth_failed (localhost): the proxy at 127.0.0.1:\(squid.port) refused the "
                + "proxy credentials: 407 Proxy Authentication Required\n"
        )
        #expect(!refused.stderr.contains("wrong-password"))

        let noCredentials = try await Self.run(["fetch", url, "--ca", root, "--proxy", proxy])
        #expect(noCredentials.status == 3)
        #expect(
            noCredentials.stderr
                == "bulwark fetch: proxy_auth_required (localhost): the proxy at 127.0.0.1:\(squid.port) requires "
                + "authentication: 407 Proxy Authentication Required (it offers Basic); no proxy credentials are "
                + "configured\n"
        )

        // The environment, as curl reads it: credentials in the URL's user information, percent-encoded.
        let environmentProxy = "http://\(SquidProxy.username):\(SquidProxy.password)@127.0.0.1:\(squid.port)"
        // squid writes a line when a transaction ends: its start-up probe, then 407 + tunnel, 407 + 407, and 407.
        let before = try await squid.accessLog(atLeast: 6).count
        #expect(before == 6)
        let fromEnvironment = try await Self.run(
            ["fetch", url, "--ca", root],
            environment: ["HTTPS_PROXY": environmentProxy]
        )
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        #expect(fromEnvironment.stdout == "hello from nginx\n")
        let afterEnvironment = try await squid.accessLog(atLeast: before + 2)
        #expect(afterEnvironment.count == before + 2, "a 407, then the tunnel: \(afterEnvironment)")

        // --noproxy (and no_proxy) send the host direct: squid sees nothing more.
        let direct = try await Self.run(
            ["fetch", url, "--ca", root, "--noproxy", "localhost"],
            environment: ["https_proxy": environmentProxy]
        )
        #expect(direct.status == 0, "\(direct.stderr)")
        let viaNoProxy = try await Self.run(
            ["fetch", url, "--ca", root],
            environment: ["https_proxy": environmentProxy, "no_proxy": ".localhost,127.0.0.1"]
        )
        #expect(viaNoProxy.status == 0, "\(viaNoProxy.stderr)")
        try await Task.sleep(for: .milliseconds(300))
        let final = try await squid.accessLog(atLeast: 0, timeout: .zero)
        #expect(final.count == afterEnvironment.count, "\(final.suffix(3))")

        let unreadable = try await Self.run(["fetch", url, "--ca", root, "--proxy-user-file", good])
        #expect(unreadable.status == 64 || unreadable.status == 2, "\(unreadable.status) \(unreadable.stderr)")
        #expect(unreadable.stderr.contains("--proxy-user-file needs --proxy"))
    }
}
