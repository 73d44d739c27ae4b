import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing
import X509

// Requests through an HTTPS proxy nobody here wrote: Debian's squid (built with GnuTLS) on an `https_port`, in front
// of nginx, both on 127.0.0.1. The proxy's certificate is evaluated by the proxy's own trust; the origin's, inside
// the tunnel, by the origin's, pins included. Neither stands in for the other.

/// The proxy's own PKI: a root and intermediate that issue nothing but proxy certificates (and, in the separation
/// test, an origin certificate the origin's trust must refuse).
struct ProxyPKI {
    let root: TestIdentity
    let intermediate: TestIdentity

    init() throws {
        self.root = try CertificateFactory.makeRoot(commonName: "Bulwark Test Proxy Root CA")
        self.intermediate = try CertificateFactory.issueIntermediate(
            from: self.root,
            commonName: "Bulwark Test Proxy Intermediate CA"
        )
    }

    /// The proxy's server chain for `dnsNames` and `ipAddresses`: one leaf, issued by the root.
    func chain(
        dnsNames: [String] = ["localhost"],
        ipAddresses: [String] = ["127.0.0.1"]
    ) throws -> (
        chain: [Certificate], key: TestIdentity
    ) {
        // Issued by the root itself: squid built with GnuTLS sends only the first certificate of its `tls-cert`
        // file (with OpenSSL it would send the chain after it).
        let leaf = try CertificateFactory.issueLeaf(
            from: self.root,
            commonName: dnsNames.first ?? ipAddresses.first ?? "proxy",
            dnsNames: dnsNames,
            ipAddresses: ipAddresses
        )
        return ([leaf.certificate], leaf)
    }

    /// The root as a trust evaluator for the proxy: chain and host name, this root only.
    var trust: DefaultTrustEvaluator { DefaultTrustEvaluator(roots: .custom([self.root.certificate])) }

    var rootPEM: String { self.root.certificatePEM + "\n" }
}

@Suite("HTTPS proxies: squid https_port", .serialized, .tags(.externalPeers))
struct HTTPSProxyInteropTests {
    let chain = InteropChain.shared
    var root: Certificate { self.chain.root.certificate }
    /// The origin's pins: the genuine chain's intermediate and root keys.
    var pinned: PublicKeysTrustEvaluator {
        get throws {
            PublicKeysTrustEvaluator.publicKeys(
                try PinSet([Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.root)]),
                roots: .custom([self.root])
            )
        }
    }

    func credentials(
        _ user: String = SquidProxy.username,
        _ password: String = SquidProxy.password
    ) throws
        -> ProxyCredentials
    {
        try ProxyCredentials(username: user, password: SecretBytes(utf8: password))
    }

    func withClient<Result>(
        proxy: BulwarkClient.Proxy,
        monitor: RecordingEventMonitor = RecordingEventMonitor(),
        configure: (inout BulwarkClient.Configuration) throws -> Void = { _ in },
        _ body: (BulwarkClient) async throws -> Result
    ) async throws -> Result {
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": try pinned])
        )
        configuration.proxy = proxy
        configuration.eventMonitor = monitor
        try configure(&configuration)
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

    /// The access log's request lines, once at least `count` are there (squid also logs its start-up probes and
    /// failed TLS handshakes, without a method; it writes a line when a transaction ends).
    func requests(_ squid: SquidProxy, atLeast count: Int) async throws -> [String] {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: count == 0 ? .zero : .seconds(10))
        while true {
            let lines = try await squid.accessLog(atLeast: 0, timeout: .zero).filter {
                $0.contains(" CONNECT ") || $0.contains(" GET ")
            }
            if lines.count >= count || clock.now >= deadline { return lines }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func proxyURL(_ squid: SquidProxy, host: String = "127.0.0.1") -> URL {
        URL(string: "https://\(host):\(squid.tlsPort!)")!
    }

    @Test(
        "a pinned request through the HTTPS proxy succeeds: TLS to squid, the CONNECT inside it, the origin's TLS inside the tunnel"
    )
    func pinnedThroughHTTPSProxy() async throws {
        let pki = try ProxyPKI()
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let monitor = RecordingEventMonitor()
        let proxy = BulwarkClient.Proxy.https(proxyURL(squid), credentials: try credentials(), trust: pki.trust)
        try await withClient(proxy: proxy, monitor: monitor) { client in
            for path in ["/hello?token=secret-query", "/hello"] {
                let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)\(path)"))
                let body = try await response.body.collect(upTo: 1 << 20)
                #expect(response.status == .ok)
                #expect(String(buffer: body) == "hello from nginx\n")
                // The origin's chain, verified by the origin's pins: not the proxy's.
                let trusted = try #require(response.serverTrust?.trustedChain)
                #expect(trusted.certificates.last == self.root)
                #expect(response.serverTrust?.presentedChain.first == self.chain.leaf.certificate)
            }
        }
        // A 407 for the CONNECT without credentials, then the tunnel; the second request reused it.
        let log = try await requests(squid, atLeast: 2)
        #expect(log.count == 2, "\(log)")
        #expect(log.allSatisfy { $0.contains("CONNECT localhost:\(nginx.port)") }, "\(log)")
        #expect(log.first?.contains("TCP_DENIED/407") == true, "\(log)")
        #expect(log.last?.contains("TCP_TUNNEL/200") == true, "\(log)")
        let all = log.joined(separator: "\n")
        #expect(!all.contains("/hello") && !all.contains("secret-query"), "the origin's path is inside the tunnel")
        #expect(!all.contains(SquidProxy.password))
        let origin = try await nginx.accessLog(atLeast: 2)
        #expect(origin.map(\.request).contains("GET /hello?token=secret-query HTTP/2.0"))
        // The proxy's trust decision is reported for the proxy's host, the origin's for the origin.
        let evaluated = monitor.events.filter { $0.kind == .trustEvaluated }.map { $0.host ?? "" }
        #expect(evaluated.contains("127.0.0.1") && evaluated.contains("localhost"), "\(evaluated)")
        let connected = monitor.events.filter { $0.kind == .proxyConnected }
        #expect(connected.count == 1)
        #expect(connected.first?.details[.proxy]?.text == "127.0.0.1:\(squid.tlsPort!)")
        #expect(!monitor.events.map(\.description).joined().contains(SquidProxy.password))
    }

    @Test("the proxy's host name is its TLS server name: https://localhost:PORT with a certificate for localhost")
    func proxyByName() async throws {
        let pki = try ProxyPKI()
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        // A certificate without the address: only the name (sent as SNI and checked) can match.
        let squid = try await SquidProxy.start(tls: try pki.chain(dnsNames: ["localhost"], ipAddresses: []))
        defer { squid.stop() }
        let proxy = BulwarkClient.Proxy.https(
            proxyURL(squid, host: "localhost"),
            credentials: try credentials(),
            trust: pki.trust
        )
        try await withClient(proxy: proxy) { client in
            let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/hello"))
            #expect(response.status == .ok)
            #expect(String(buffer: try await response.body.collect(upTo: 1 << 20)) == "hello from nginx\n")
        }
    }

    @Test("a proxy certificate from a CA not trusted for the proxy: proxy_untrusted naming the proxy, nothing sent")
    func untrustedProxy() async throws {
        let pki = try ProxyPKI()
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        // The system roots (the default), then the origin's own CA: neither issued the proxy's certificate.
        for (trust, label) in [
            (DefaultTrustEvaluator(), "system roots"),
            (DefaultTrustEvaluator(roots: .custom([self.root])), "origin CA"),
        ] {
            let monitor = RecordingEventMonitor()
            let proxy = BulwarkClient.Proxy.https(proxyURL(squid), credentials: try credentials(), trust: trust)
            try await withClient(proxy: proxy, monitor: monitor) { client in
                let error = await #expect(throws: BulwarkError.self, "\(label)") {
                    try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/hello"))
                }
                #expect(error?.code == .proxyUntrusted, "\(label): \(String(describing: error))")
                let prefix =
                    "proxy_untrusted (localhost): the proxy at 127.0.0.1:\(squid.tlsPort!) is not trusted: its "
                    + "certificate was refused for 127.0.0.1 ("
                #expect(error?.description.hasPrefix(prefix) == true, "\(label): \(String(describing: error))")
                #expect(
                    error?.description.hasSuffix("); nothing was sent to the proxy or to localhost") == true,
                    "\(String(describing: error))"
                )
                #expect(error?.trustRefusal?.host == "127.0.0.1")
                #expect(error?.trustRefusal?.reasons.first?.code == "untrusted_chain", "\(String(describing: error))")
                #expect(error?.description.contains(SquidProxy.password) == false)
            }
            let event = try #require(monitor.events.first { $0.kind == .proxyUntrusted }, "\(label)")
            #expect(event.host == "localhost")
            #expect(event.details[.proxy]?.text == "127.0.0.1:\(squid.tlsPort!)")
            #expect(event.details[.presented]?.list?.count == 1)
            #expect(!monitor.events.contains { $0.kind == .proxyConnected })
        }
        // No CONNECT reached squid, and nothing reached nginx.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await requests(squid, atLeast: 0).isEmpty)
        #expect(nginx.accessLog().isEmpty)
    }

    @Test(
        "separation: the proxy's CA trusted for the proxy never makes an origin certificate from it acceptable"
    )
    func proxyCANeverTrustedForTheOrigin() async throws {
        let pki = try ProxyPKI()
        // The origin presents a certificate for localhost issued by the proxy's CA.
        let originLeaf = try CertificateFactory.issueLeaf(from: pki.intermediate, dnsNames: ["localhost"])
        let forged = TestChain(
            root: pki.root,
            intermediate: pki.intermediate,
            leaf: originLeaf,
            presentedChain: [originLeaf.certificate, pki.intermediate.certificate]
        )
        let nginx = try await NginxServer.start(chain: forged)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let proxy = BulwarkClient.Proxy.https(proxyURL(squid), credentials: try credentials(), trust: pki.trust)
        // The origin's evaluator: the default validation against the origin's own CA (no pins, so only the CA
        // decides).
        let originTrust: (inout BulwarkClient.Configuration) throws -> Void = {
            $0.trust = try ServerTrustManager(evaluators: ["localhost": .default(roots: .custom([self.root]))])
        }
        let monitor = RecordingEventMonitor()
        try await withClient(proxy: proxy, monitor: monitor, configure: originTrust) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/hello"))
            }
            // The proxy was trusted and the tunnel made; the origin's own trust refused the origin.
            #expect(error?.code == .trustRefused, "\(String(describing: error))")
            #expect(error?.trustRefusal?.host == "localhost")
            #expect(error?.trustRefusal?.reasons.first?.code == "untrusted_chain")
        }
        #expect(monitor.events.contains { $0.kind == .proxyConnected })
        #expect(!monitor.events.contains { $0.kind == .proxyUntrusted })
        let log = try await requests(squid, atLeast: 2)
        #expect(
            log.contains { $0.contains("CONNECT localhost:\(nginx.port)") && $0.contains("TCP_TUNNEL/200") },
            "\(log)"
        )
        // No request went to the origin: its handshake was refused.
        #expect(nginx.accessLog().isEmpty)
    }

    @Test("proxy Basic authentication inside TLS: a wrong password is proxy_auth_failed naming the proxy and the 407")
    func proxyAuthentication() async throws {
        let pki = try ProxyPKI()
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let wrong = BulwarkClient.Proxy.https(
            proxyURL(squid),
            credentials: try credentials(SquidProxy.username, "not-the-password"),
            trust: pki.trust
        )
        try await withClient(proxy: wrong) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
            }
            #expect(error?.code == .proxyAuthFailed)
            #expect(
                error?.description
                    == "proxy_auth_failed (localhost): the proxy at 127.0.0.1:\(squid.tlsPort!) refused the proxy "
                    + "credentials: 407 Proxy Authentication Required"
            )
            #expect(error?.debugDescription.contains("not-the-password") == false)
        }
        let monitor = RecordingEventMonitor()
        let none = BulwarkClient.Proxy.https(proxyURL(squid), trust: pki.trust)
        try await withClient(proxy: none, monitor: monitor) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
            }
            #expect(error?.code == .proxyAuthRequired)
        }
        #expect(monitor.events.first { $0.kind == .proxyAuthRequired }?.details[.schemes]?.list == ["Basic"])
        let log = try await requests(squid, atLeast: 3)
        #expect(log.count == 3 && log.allSatisfy { $0.contains("TCP_DENIED/407") }, "\(log)")
    }

    @Test("a proxy certificate for another host name is refused: proxy_untrusted, hostname mismatch")
    func proxyHostnameMismatch() async throws {
        let pki = try ProxyPKI()
        let squid = try await SquidProxy.start(tls: try pki.chain(dnsNames: ["proxy.invalid"], ipAddresses: []))
        defer { squid.stop() }
        for host in ["127.0.0.1", "localhost"] {
            let monitor = RecordingEventMonitor()
            let proxy = BulwarkClient.Proxy.https(
                proxyURL(squid, host: host),
                credentials: try credentials(),
                trust: pki.trust
            )
            try await withClient(proxy: proxy, monitor: monitor) { client in
                let error = await #expect(throws: BulwarkError.self) {
                    try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
                }
                #expect(error?.code == .proxyUntrusted, "\(String(describing: error))")
                #expect(
                    error?.description.contains("the proxy at \(host):\(squid.tlsPort!) is not trusted") == true,
                    "\(String(describing: error))"
                )
                #expect(error?.description.contains("proxy.invalid") == true, "\(String(describing: error))")
                #expect(error?.trustRefusal?.reasons.first?.code == "hostname_mismatch", "\(String(describing: error))")
            }
            #expect(monitor.events.first { $0.kind == .proxyUntrusted }?.reason == "hostname_mismatch")
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await requests(squid, atLeast: 0).isEmpty)
    }

    @Test("an https:// proxy URL for a port that does not speak TLS: proxy_handshake_failed naming the proxy")
    func proxyWithoutTLS() async throws {
        let pki = try ProxyPKI()
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        // squid's plain http_port answers the client hello with an HTTP error page.
        let proxy = BulwarkClient.Proxy.https(
            URL(string: "https://127.0.0.1:\(squid.port)")!,
            credentials: try credentials(),
            trust: pki.trust
        )
        try await withClient(proxy: proxy) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "https://localhost:1/hello"))
            }
            #expect(error?.code == .proxyHandshakeFailed, "\(String(describing: error))")
            #expect(
                error?.description
                    == "proxy_handshake_failed (localhost): the TLS handshake with the proxy at 127.0.0.1:\(squid.port) "
                    + "failed: the server at 127.0.0.1:\(squid.port) did not answer with TLS (is it a plain HTTP port, "
                    + "or another protocol?)",
                "\(String(describing: error))"
            )
        }
    }

    @Test("plain http through the HTTPS proxy: absolute form inside TLS to the proxy, only when plain HTTP is allowed")
    func plainHTTPInsideTLS() async throws {
        let pki = try ProxyPKI()
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let proxy = BulwarkClient.Proxy.https(proxyURL(squid), credentials: try credentials(), trust: pki.trust)
        try await withClient(proxy: proxy) { client in
            let error = await #expect(throws: BulwarkError.self) {
                try await client.execute(BulwarkRequest(url: "http://localhost:1/plain"))
            }
            #expect(error?.code == .plainHTTPNotAllowed)
        }
        #expect(try await requests(squid, atLeast: 0).isEmpty)
        let allowPlainHTTP: (inout BulwarkClient.Configuration) throws -> Void = { $0.allowsPlainHTTP = true }
        try await withClient(proxy: proxy, configure: allowPlainHTTP) { client in
            // squid forwards the request and answers that the (closed) origin port refused it: its own answer,
            // through the TLS connection to it, with the credentials accepted.
            let response = try await client.execute(BulwarkRequest(url: "http://localhost:1/plain?q=1"))
            #expect(response.status.code == 503, "\(response.status)")
        }
        let log = try await requests(squid, atLeast: 1)
        // squid logs the absolute-form target (without the query: strip_query_terms) and the authenticated user.
        #expect(
            log.contains {
                $0.contains("TCP_MISS/503") && $0.contains("GET http://localhost:1/plain? \(SquidProxy.username) ")
            },
            "\(log)"
        )
    }

    @Test("a policy file: use https://, caFile and credentialsFile; a CA file that cannot be read is named")
    func fromAPolicyFile() async throws {
        let pki = try ProxyPKI()
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let directory = try ExternalPeers.makeDirectory("https-proxy-policy")
        defer { try? FileManager.default.removeItem(at: directory) }
        try "\(SquidProxy.username):\(SquidProxy.password)\n"
            .write(to: directory.appending(path: "proxy-credentials"), atomically: true, encoding: .utf8)
        try pki.rootPEM.write(to: directory.appending(path: "proxy-ca.pem"), atomically: true, encoding: .utf8)
        let pins = [Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.root)]
        func policy(caFile: String) -> String {
            """
            {
              "format": "bulwark-policy/1",
              "hosts": {
                "localhost": {
                  "evaluator": "publicKeys",
                  "pins": ["\(pins[0])", "\(pins[1])"],
                  "roots": { "system": false, "certificates": [{ "pem": \(ProxyInteropTests.jsonString(self.chain.root.certificatePEM)) }] }
                }
              },
              "proxy": {
                "use": "https://127.0.0.1:\(squid.tlsPort!)",
                "credentialsFile": "proxy-credentials",
                "caFile": "\(caFile)"
              }
            }
            """
        }
        let policyPath = directory.appending(path: "bulwark-policy.json").path
        try policy(caFile: "proxy-ca.pem").write(toFile: policyPath, atomically: true, encoding: .utf8)
        let configuration = try BulwarkClient.Configuration(policyFile: policyPath)
        #expect(configuration.proxy.description == "https://127.0.0.1:\(squid.tlsPort!) (credentials)")
        let client = BulwarkClient(configuration: configuration)
        do {
            let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(nginx.port)/hello"))
            #expect(response.status == .ok)
            #expect(String(buffer: try await response.body.collect(upTo: 1 << 20)) == "hello from nginx\n")
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()

        try policy(caFile: "missing-ca.pem").write(toFile: policyPath, atomically: true, encoding: .utf8)
        let error = #expect(throws: PolicyFileError.self) { try BulwarkClient.Configuration(policyFile: policyPath) }
        #expect(error?.pointer == "/proxy/caFile", "\(String(describing: error))")
        #expect(error?.description.contains("missing-ca.pem") == true, "\(String(describing: error))")
    }
}

@Suite("bulwark fetch through an HTTPS proxy", .serialized, .tags(.externalPeers))
struct HTTPSProxyCLITests {
    @Test("--proxy https://… with --proxy-cacert, without it (proxy_untrusted, exit 5), and https_proxy=https://…")
    func fetchThroughHTTPSSquid() async throws {
        let pki = try ProxyPKI()
        let chain = InteropChain.shared
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        let proxyCA = try CLI.write(pki.rootPEM, name: "proxy-ca.pem")
        let good = try CLI.write("\(SquidProxy.username):\(SquidProxy.password)\n", name: "proxy-user")
        defer { for path in [root, proxyCA, good] { try? FileManager.default.removeItem(atPath: path) } }
        let url = "https://localhost:\(nginx.port)/hello"
        let proxy = "https://127.0.0.1:\(squid.tlsPort!)"

        let ok = try await ProxyCLITests.run([
            "fetch", url, "--ca", root, "--proxy", proxy, "--proxy-user-file", good, "--proxy-cacert", proxyCA,
        ])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout == "hello from nginx\n")

        let untrusted = try await ProxyCLITests.run([
            "fetch", url, "--ca", root, "--proxy", proxy, "--proxy-user-file", good,
        ])
        #expect(untrusted.status == 5, "\(untrusted.stderr)")
        #expect(
            untrusted.stderr.hasPrefix(
                "bulwark fetch: proxy_untrusted (localhost): the proxy at 127.0.0.1:\(squid.tlsPort!) is not trusted: "
            ),
            "\(untrusted.stderr)"
        )

        // The proxy's CA is never the origin's: an origin whose certificate the proxy's CA issued is refused.
        let originLeaf = try CertificateFactory.issueLeaf(from: pki.intermediate, dnsNames: ["localhost"])
        let forged = try await NginxServer.start(
            chain: TestChain(
                root: pki.root,
                intermediate: pki.intermediate,
                leaf: originLeaf,
                presentedChain: [originLeaf.certificate, pki.intermediate.certificate]
            )
        )
        defer { forged.stop() }
        let originRefused = try await ProxyCLITests.run([
            "fetch", "https://localhost:\(forged.port)/hello", "--proxy", proxy, "--proxy-user-file", good,
            "--proxy-cacert", proxyCA,
        ])
        #expect(originRefused.status == 5, "\(originRefused.stderr)")
        #expect(originRefused.stderr.hasPrefix("bulwark fetch: trust_refused (localhost)"), "\(originRefused.stderr)")
        #expect(forged.accessLog().isEmpty)

        // The environment, as curl 7.52 and later read it, with the credentials in the URL.
        let environmentProxy = "https://\(SquidProxy.username):\(SquidProxy.password)@127.0.0.1:\(squid.tlsPort!)"
        let fromEnvironment = try await ProxyCLITests.run(
            ["fetch", url, "--ca", root, "--proxy-cacert", proxyCA],
            environment: ["https_proxy": environmentProxy]
        )
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        #expect(fromEnvironment.stdout == "hello from nginx\n")

        let notTLS = try await ProxyCLITests.run([
            "fetch", url, "--ca", root, "--proxy", "http://user:hunter2@127.0.0.1:\(squid.port)", "--proxy-cacert",
            proxyCA,
        ])
        #expect(notTLS.status == 64 || notTLS.status == 2, "\(notTLS.status) \(notTLS.stderr)")
        #expect(
            notTLS.stderr.contains(
                "--proxy-cacert is the CA of an https:// proxy; http://127.0.0.1:\(squid.port) is not reached over TLS"
            ),
            "\(notTLS.stderr)"
        )
        #expect(!notTLS.stderr.contains("hunter2"))

        let unreadable = try await ProxyCLITests.run([
            "fetch", url, "--ca", root, "--proxy", proxy, "--proxy-cacert", "/nonexistent/proxy-ca.pem",
        ])
        #expect(unreadable.status == 64 || unreadable.status == 2, "\(unreadable.status) \(unreadable.stderr)")
        #expect(unreadable.stderr.contains("--proxy-cacert: "), "\(unreadable.stderr)")
        #expect(unreadable.stderr.contains("/nonexistent/proxy-ca.pem"), "\(unreadable.stderr)")
    }
}
