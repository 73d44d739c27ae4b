import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing
import X509

// TLSStream through real proxies: squid (HTTP CONNECT with Basic authentication) and dante (SOCKS5 with
// username/password), in front of nginx. The origin's trust, SNI and pins are the stream's, inside the tunnel.

@Suite("TLSStream through squid and dante", .serialized, .tags(.externalPeers))
struct TLSStreamProxyTests {
    let chain = InteropChain.shared
    var root: Certificate { self.chain.root.certificate }

    /// A configuration that trusts only the genuine chain's intermediate and root keys for `localhost`.
    func configuration(
        proxy: BulwarkClient.Proxy,
        monitor: RecordingEventMonitor = RecordingEventMonitor()
    ) throws -> TLSStream.Configuration {
        let pinned = PublicKeysTrustEvaluator.publicKeys(
            try PinSet([Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.root)]),
            roots: .custom([self.root])
        )
        var configuration = TLSStream.Configuration(trust: try ServerTrustManager(evaluators: ["localhost": pinned]))
        configuration.proxy = proxy
        configuration.eventMonitor = monitor
        return configuration
    }

    func credentials(_ user: String, _ password: String) throws -> ProxyCredentials {
        try ProxyCredentials(username: user, password: SecretBytes(utf8: password))
    }

    /// One HTTP/1.1 request written on the stream by hand, and the whole answer (nginx closes after it).
    func get(_ stream: TLSStream, path: String) async throws -> String {
        try await stream.write(
            ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        )
        var answer = ""
        while let bytes = try await stream.read() { answer += String(buffer: bytes) }
        try await stream.close()
        return answer
    }

    func squidProxy(_ squid: SquidProxy, password: String = SquidProxy.password) throws -> BulwarkClient.Proxy {
        .http(
            URL(string: "http://127.0.0.1:\(squid.port)")!,
            credentials: try self.credentials(SquidProxy.username, password)
        )
    }

    // MARK: - squid

    @Test("squid: a pinned stream through CONNECT; the origin's chain, SNI and pins; the log shows the CONNECT only")
    func squidPinned() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let monitor = RecordingEventMonitor()
        let stream = try await TLSStream.connect(
            host: "localhost",
            port: nginx.port,
            configuration: try self.configuration(proxy: try self.squidProxy(squid), monitor: monitor)
        )
        // The chain is nginx's own, verified for the origin's name through the tunnel.
        #expect(stream.serverTrust.presentedChain.first == self.chain.leaf.certificate)
        #expect(stream.serverTrust.trustedChain != nil)
        #expect(stream.host == "localhost")
        let answer = try await self.get(stream, path: "/hello?token=stream-secret")
        #expect(answer.hasPrefix("HTTP/1.1 200 OK"), "\(answer)")
        #expect(answer.hasSuffix("hello from nginx\n"), "\(answer)")
        let connected = monitor.events.first { $0.kind == .proxyConnected }
        #expect(connected?.details[.proxy]?.text == "127.0.0.1:\(squid.port)")
        #expect(monitor.events.contains { $0.kind == .proxyAuthRequired })
        // A 407 for the CONNECT without credentials, then the tunnel with them; never the path.
        let log = try await squid.accessLog(atLeast: 3).filter { !$0.contains("transaction-end-before-headers") }
        #expect(log.count == 2, "\(log)")
        #expect(log.allSatisfy { $0.contains("CONNECT localhost:\(nginx.port)") }, "\(log)")
        let all = log.joined(separator: "\n")
        #expect(!all.contains("stream-secret"))
        #expect(!all.contains(SquidProxy.password))
        let origin = try await nginx.accessLog(atLeast: 1)
        #expect(origin.map(\.request) == ["GET /hello?token=stream-secret HTTP/1.1"])
    }

    @Test("squid: a wrong password ends with proxy_auth_failed naming the proxy and the 407")
    func squidWrongPassword() async throws {
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let error = await #expect(throws: BulwarkError.self) {
            try await TLSStream.connect(
                host: "localhost",
                port: 1,
                configuration: try self.configuration(proxy: try self.squidProxy(squid, password: "not-it"))
            )
        }
        #expect(error?.code == .proxyAuthFailed)
        #expect(
            error?.description
                == "proxy_auth_failed (localhost): the proxy at 127.0.0.1:\(squid.port) refused the proxy "
                + "credentials: 407 Proxy Authentication Required"
        )
        #expect(error?.debugDescription.contains("not-it") == false)
    }

    @Test("squid: a host outside the allowlist costs the proxy zero connections")
    func allowlistBeforeProxy() async throws {
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        // squid logs one line per connection, an empty one too: the start-up probe's is the only one.
        let before = try await squid.accessLog(atLeast: 1)
        #expect(before.count == 1, "\(before)")
        let monitor = RecordingEventMonitor()
        var configuration = try self.configuration(proxy: try self.squidProxy(squid), monitor: monitor)
        configuration.allowlist = try HostAllowlist(patterns: ["localhost"])
        let error = await #expect(throws: BulwarkError.self) {
            try await TLSStream.connect(host: "refused.example", port: 443, configuration: configuration)
        }
        #expect(error?.code == .hostNotAllowed)
        #expect(monitor.events.map(\.kind) == [.requestRefusedByAllowlist], "\(monitor.events.map(\.kind))")
        try await Task.sleep(for: .milliseconds(300))
        let after = try await squid.accessLog(atLeast: 0, timeout: .zero)
        #expect(after == before, "\(after)")
    }

    @Test("proxy overrides and the environment: a host sent direct costs squid nothing; https_proxy is read")
    func overridesAndEnvironment() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let before = try await squid.accessLog(atLeast: 1)

        var direct = try self.configuration(proxy: try self.squidProxy(squid))
        direct.proxyOverrides = try BulwarkClient.ProxyOverrides(["localhost": .none])
        #expect(try direct.proxy(forHost: "localhost", port: nginx.port) == nil)
        #expect(try direct.proxy(forHost: "other.example", port: 443) == "http://127.0.0.1:\(squid.port)")
        let answer = try await self.get(
            try await TLSStream.connect(host: "localhost", port: nginx.port, configuration: direct),
            path: "/hello"
        )
        #expect(answer.hasSuffix("hello from nginx\n"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await squid.accessLog(atLeast: 0, timeout: .zero) == before)

        // The environment, read as for an https URL: the credentials come from the proxy URL's user information.
        let variables = [
            "https_proxy": "http://\(SquidProxy.username):\(SquidProxy.password)@127.0.0.1:\(squid.port)"
        ]
        let fromEnvironment = try self.configuration(proxy: .environment(ProxyEnvironment(variables)))
        #expect(try fromEnvironment.proxy(forHost: "localhost", port: nginx.port) == "http://127.0.0.1:\(squid.port)")
        let stream = try await TLSStream.connect(host: "localhost", port: nginx.port, configuration: fromEnvironment)
        #expect(stream.serverTrust.presentedChain.first == self.chain.leaf.certificate)
        try await stream.close()
        let log = try await squid.accessLog(atLeast: before.count + 2)
        #expect(log.dropFirst(before.count).allSatisfy { $0.contains("CONNECT localhost:\(nginx.port)") }, "\(log)")

        // A proxy URL that cannot be read fails before any connection, naming the option.
        let invalid = try self.configuration(proxy: .url("ftp://127.0.0.1:21"))
        let error = await #expect(throws: BulwarkError.self) {
            try await TLSStream.connect(host: "localhost", port: nginx.port, configuration: invalid)
        }
        #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
    }

    @Test("squid's https_port: TLS to the proxy under its own trust, the origin's pinned TLS inside the tunnel")
    func httpsProxy() async throws {
        let pki = try ProxyPKI()
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let monitor = RecordingEventMonitor()
        let proxy = BulwarkClient.Proxy.https(
            URL(string: "https://127.0.0.1:\(squid.tlsPort!)")!,
            credentials: try self.credentials(SquidProxy.username, SquidProxy.password),
            trust: pki.trust
        )
        let stream = try await TLSStream.connect(
            host: "localhost",
            port: nginx.port,
            configuration: try self.configuration(proxy: proxy, monitor: monitor)
        )
        // The origin's chain, not the proxy's: each evaluated by its own trust.
        #expect(stream.serverTrust.presentedChain.first == self.chain.leaf.certificate)
        let answer = try await self.get(stream, path: "/hello")
        #expect(answer.hasSuffix("hello from nginx\n"), "\(answer)")
        let evaluated = monitor.events.filter { $0.kind == .trustEvaluated }.map { $0.host ?? "" }
        #expect(evaluated.contains("127.0.0.1") && evaluated.contains("localhost"), "\(evaluated)")
        let connected = monitor.events.first { $0.kind == .proxyConnected }
        #expect(connected?.details[.proxy]?.text == "127.0.0.1:\(squid.tlsPort!)")
    }

    // MARK: - dante

    @Test("dante: a pinned stream through SOCKS5 with username/password; the name goes to the proxy")
    func dantePinned() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let dante = try await DanteProxy.start()
        defer { dante.stop() }
        let monitor = RecordingEventMonitor()
        let proxy = BulwarkClient.Proxy.socks5(
            URL(string: "socks5://127.0.0.1:\(dante.port)")!,
            credentials: try self.credentials(DanteProxy.username, DanteProxy.password)
        )
        let stream = try await TLSStream.connect(
            host: "localhost",
            port: nginx.port,
            configuration: try self.configuration(proxy: proxy, monitor: monitor)
        )
        #expect(stream.serverTrust.presentedChain.first == self.chain.leaf.certificate)
        let answer = try await self.get(stream, path: "/hello")
        #expect(answer.hasSuffix("hello from nginx\n"), "\(answer)")
        #expect(monitor.events.contains { $0.kind == .proxyConnected })
        #expect(dante.log().contains("username%\(DanteProxy.username)@"), "\(dante.log())")
        #expect(!dante.log().contains(DanteProxy.password))
    }

    @Test("dante: a wrong password ends with proxy_auth_failed; an allowlist refusal reaches no proxy")
    func danteWrongPasswordAndAllowlist() async throws {
        let dante = try await DanteProxy.start()
        defer { dante.stop() }
        let wrong = BulwarkClient.Proxy.socks5(
            URL(string: "socks5://127.0.0.1:\(dante.port)")!,
            credentials: try self.credentials(DanteProxy.username, "wrong-password")
        )
        let error = await #expect(throws: BulwarkError.self) {
            try await TLSStream.connect(
                host: "localhost",
                port: 1,
                configuration: try self.configuration(proxy: wrong)
            )
        }
        #expect(error?.code == .proxyAuthFailed)
        #expect(
            error?.description.hasPrefix(
                "proxy_auth_failed (localhost): the SOCKS5 proxy at 127.0.0.1:\(dante.port) refused the username and "
                    + "password"
            ) == true,
            "\(String(describing: error))"
        )
        // dante logs the refused login when that connection ends: wait for the line, so the log is settled (up to
        // 30 s: on two loaded cores 5 s was not always enough; the wait ends as soon as the line is there).
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while !dante.log().contains("authentication failed") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(dante.log().contains("authentication failed"), "\(dante.log())")
        let logBefore = dante.log()
        var refused = try self.configuration(proxy: wrong)
        refused.allowlist = try HostAllowlist(patterns: ["localhost"])
        let notAllowed = await #expect(throws: BulwarkError.self) {
            try await TLSStream.connect(host: "refused.example", port: 443, configuration: refused)
        }
        #expect(notAllowed?.code == .hostNotAllowed)
        try await Task.sleep(for: .milliseconds(300))
        #expect(dante.log() == logBefore)
        #expect(!dante.log().contains("refused.example"))
    }
}
