import BulwarkPolicy
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import Bulwark

// The proxy handshakes as values, without sockets: what is sent, and what each answer leads to.

@Suite("CONNECT answers")
struct HTTPConnectResponseParserTests {
    func parse(_ chunks: [String]) throws(ProxyHandshakeFailure) -> HTTPConnectResponseParser.Outcome {
        var parser = HTTPConnectResponseParser()
        var outcome = HTTPConnectResponseParser.Outcome.needMore
        for chunk in chunks { outcome = try parser.receive(Array(chunk.utf8)) }
        return outcome
    }

    @Test("a 200 head, whole or byte by byte, grants the tunnel with nothing after it")
    func established() throws {
        let text = "HTTP/1.1 200 Connection established\r\n\r\n"
        let head = HTTPConnectResponseParser.Head(status: 200, reason: "Connection established", challenges: [])
        #expect(try parse([text]) == .head(head, trailing: 0))
        #expect(try parse(text.map { String($0) }) == .head(head, trailing: 0))
        #expect(
            try parse(["HTTP/1.0 200 OK\n\n"]) == .head(.init(status: 200, reason: "OK", challenges: []), trailing: 0)
        )
        #expect(try parse(["HTTP/1.1 200 Connection est"]) == .needMore)
    }

    @Test("bytes after the 200 are counted (the handler refuses them: a 200 with a body)")
    func trailing() throws {
        let outcome = try parse(["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"])
        #expect(outcome == .head(.init(status: 200, reason: "OK", challenges: []), trailing: 5))
    }

    @Test("407: the schemes of every Proxy-Authenticate field")
    func challenges() throws {
        let outcome = try parse([
            "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"a, b\"\r\n",
            "proxy-authenticate: Digest realm=\"x\", nonce=\"y\", qop=\"auth\"\r\nProxy-Authenticate: NTLM\r\n",
            "Proxy-Authenticate: Negotiate abc==\r\nContent-Length: 10\r\n\r\n0123456789",
        ])
        let head = HTTPConnectResponseParser.Head(
            status: 407,
            reason: "Proxy Authentication Required",
            challenges: ["Basic", "Digest", "NTLM", "Negotiate"]
        )
        #expect(outcome == .head(head, trailing: 10))
    }

    @Test(
        "garbage is refused early",
        arguments: [
            "SSH-2.0-OpenSSH_9.2\r\n", "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}", "HTTP/2 200\r\n\r\n",
            "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: \u{01}\r\n\r\n",
        ]
    )
    func garbage(_ text: String) {
        #expect(throws: ProxyHandshakeFailure.self) { try parse([text]) }
    }

    @Test("a head without end is refused after 16 KiB")
    func endless() {
        var parser = HTTPConnectResponseParser()
        let error = #expect(throws: ProxyHandshakeFailure.self) {
            _ = try parser.receive(Array("HTTP/1.1 200 OK\r\n".utf8))
            for _ in 0..<2000 { _ = try parser.receive(Array("X-Filler: 0123456789\r\n".utf8)) }
        }
        guard case .garbage(let what) = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(what.contains("16384"))
    }
}

@Suite("SOCKS5 negotiation")
struct SOCKS5HandshakeTests {
    @Test("no authentication: greeting, method 0, connect with the host name, reply")
    func noAuthentication() throws {
        var handshake = SOCKS5Handshake(host: "origin.bulwark.test", port: 443, offersCredentials: false)
        #expect(handshake.start() == [0x05, 0x01, 0x00])
        let name = Array("origin.bulwark.test".utf8)
        let request: [UInt8] = [0x05, 0x01, 0x00, 0x03, UInt8(name.count)] + name + [0x01, 0xBB]
        #expect(try handshake.receive([0x05, 0x00]) == .send(request))
        #expect(try handshake.receive([0x05, 0x00, 0x00, 0x01, 127, 0]) == .needMore)
        #expect(try handshake.receive([0, 1, 0x04, 0x38]) == .established(trailing: 0))
    }

    @Test("username/password: offered with no authentication, sent when chosen, then connect")
    func usernamePassword() throws {
        var handshake = SOCKS5Handshake(host: "127.0.0.1", port: 8443, offersCredentials: true)
        #expect(handshake.start() == [0x05, 0x02, 0x00, 0x02])
        #expect(try handshake.receive([0x05]) == .needMore)
        #expect(try handshake.receive([0x02]) == .sendAuthentication)
        // An IPv4 host goes as an address (type 1).
        #expect(try handshake.receive([0x01, 0x00]) == .send([0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, 0x20, 0xFB]))
        // A domain-name reply (type 3), and two bytes too many.
        let reply: [UInt8] = [0x05, 0x00, 0x00, 0x03, 3] + Array("abc".utf8) + [0, 80, 0xAA, 0xBB]
        #expect(try handshake.receive(reply) == .established(trailing: 2))
    }

    @Test("the RFC 1929 request carries the lengths, the user name and the password")
    func authenticationRequest() throws {
        let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "pw"))
        var bytes: [UInt8] = []
        _ = credentials.withUsernameAndPassword { user, password in
            SOCKS5Handshake.authenticationRequest(username: user, password: password) { bytes += $0 }
        }
        #expect(bytes == [0x01, 5] + Array("alice".utf8) + [2] + Array("pw".utf8))
    }

    @Test("an IPv6 host goes as an address (type 4)")
    func ipv6() {
        let handshake = SOCKS5Handshake(host: "::1", port: 1, offersCredentials: false)
        #expect(handshake.connectRequest() == [0x05, 0x01, 0x00, 0x04] + [UInt8](repeating: 0, count: 15) + [1, 0, 1])
    }

    @Test("failures: each reply code in words, refused authentication, no acceptable method, garbage")
    func failures() throws {
        for reply in UInt8(1)...8 {
            var handshake = SOCKS5Handshake(host: "a.test", port: 1, offersCredentials: false)
            _ = handshake.start()
            _ = try handshake.receive([0x05, 0x00])
            #expect(throws: ProxyHandshakeFailure.socksRefused(reply: reply)) {
                try handshake.receive([0x05, reply, 0x00, 0x01])
            }
        }
        #expect(ProxyHandshakeFailure.words(socksReply: 4) == "host unreachable")
        #expect(ProxyHandshakeFailure.words(socksReply: 2) == "connection not allowed by ruleset")
        var refused = SOCKS5Handshake(host: "a.test", port: 1, offersCredentials: true)
        _ = refused.start()
        _ = try refused.receive([0x05, 0x02])
        #expect(throws: ProxyHandshakeFailure.socksAuthFailed(status: 1)) { try refused.receive([0x01, 0x01]) }
        var noMethod = SOCKS5Handshake(host: "a.test", port: 1, offersCredentials: false)
        _ = noMethod.start()
        #expect(throws: ProxyHandshakeFailure.socksNoAcceptableMethod(offeredCredentials: false)) {
            try noMethod.receive([0x05, 0xFF])
        }
        var unoffered = SOCKS5Handshake(host: "a.test", port: 1, offersCredentials: false)
        _ = unoffered.start()
        #expect(throws: ProxyHandshakeFailure.self) { try unoffered.receive([0x05, 0x02]) }
        var http = SOCKS5Handshake(host: "a.test", port: 1, offersCredentials: false)
        _ = http.start()
        #expect(throws: ProxyHandshakeFailure.self) { try http.receive(Array("HTTP/1.1 400".utf8)) }
    }

    @Test("errors name the proxy and say what happened, in words")
    func errorText() {
        let proxy = "127.0.0.1:3128"
        #expect(
            "\(ProxyHandshakeFailure.httpRefused(status: 403, reason: "Forbidden").error(host: "a.test", proxy: proxy))"
                == "proxy_refused (a.test): the proxy at 127.0.0.1:3128 refused the tunnel to a.test: 403 Forbidden"
        )
        #expect(
            "\(ProxyHandshakeFailure.httpAuthRequired(challenges: ["NTLM", "Negotiate"]).error(host: "a.test", proxy: proxy))"
                == "proxy_auth_scheme_unsupported (a.test): the proxy at 127.0.0.1:3128 requires NTLM or Negotiate "
                + "authentication (407), which Bulwark does not support; only Basic is"
        )
        #expect(
            ProxyHandshakeFailure.httpAuthRequired(challenges: ["Digest", "Basic"]).error(host: "a", proxy: proxy).code
                == .proxyAuthRequired
        )
        #expect(
            ProxyHandshakeFailure.httpAuthRequired(challenges: ["Basic"]).error(
                host: "a",
                proxy: proxy,
                sentCredentials: true
            ).code == .proxyAuthFailed
        )
        #expect(
            "\(ProxyHandshakeFailure.bytesAfterTunnel(count: 5).error(host: "a.test", proxy: proxy))"
                == "proxy_handshake_failed (a.test): the proxy at 127.0.0.1:3128 sent 5 bytes after granting the "
                + "tunnel, before the TLS handshake; the tunnel was refused"
        )
        #expect(
            "\(ProxyHandshakeFailure.socksRefused(reply: 5).error(host: "a.test", proxy: proxy))"
                == "proxy_refused (a.test): the SOCKS5 proxy at 127.0.0.1:3128 refused the connection to a.test: "
                + "connection refused (reply 5)"
        )
    }
}

@Suite("Choosing the proxy of each request and hop")
struct ProxyRouterTests {
    func router(_ configure: (inout BulwarkClient.Configuration) throws -> Void) throws -> ProxyRouter {
        var configuration = BulwarkClient.Configuration(trust: try ServerTrustManager(evaluators: [:]))
        try configure(&configuration)
        return ProxyRouter(configuration: configuration)
    }

    func route(_ router: ProxyRouter, _ url: String) throws -> String? {
        try router.route(for: try RequestTarget(URL(string: url)!)).map(\.description)
    }

    @Test("each hop chooses for its own host and scheme: no_proxy and the overrides may differ per hop")
    func perHop() throws {
        let environment = try router {
            $0.proxy = .environment(
                ProxyEnvironment([
                    "https_proxy": "http://proxy.corp:3128", "http_proxy": "socks5://127.0.0.1:1080",
                    "no_proxy": ".internal.example",
                ])
            )
        }
        #expect(try route(environment, "https://api.example/start") == "http://proxy.corp:3128")
        #expect(try route(environment, "https://svc.internal.example/next") == nil)
        #expect(try route(environment, "http://api.example/") == "socks5://127.0.0.1:1080")

        let overridden = try router {
            $0.proxy = .http(URL(string: "http://proxy.corp:3128")!)
            $0.proxyOverrides = try .init([
                "**.internal.example": .none, "tor.example": .socks5(URL(string: "socks5h://127.0.0.1:9050")!),
            ])
        }
        #expect(try route(overridden, "https://api.example/") == "http://proxy.corp:3128")
        #expect(try route(overridden, "https://internal.example/") == nil)
        #expect(try route(overridden, "https://tor.example/") == "socks5://127.0.0.1:9050")
        let bypassing = try router { $0.proxy = Proxy.url("proxy.corp:3128").bypassing(NoProxyList("10.0.0.0/8")) }
        #expect(try route(bypassing, "https://10.1.2.3/") == nil)
        #expect(try route(bypassing, "https://11.1.2.3/") == "http://proxy.corp:3128")
    }

    @Test("the pool keys connections by origin and proxy (and proxy credentials)")
    func poolKey() throws {
        let endpoint = try ProxyEndpoint(kind: .http, host: "proxy.corp", port: 3128)
        let credentials = try ProxyCredentials(username: "a", password: SecretBytes(utf8: "b"))
        let direct = ConnectionPool.Key(scheme: "https", host: "api.example", port: 443)
        var viaProxy = direct
        viaProxy.proxy = ProxyRoute(endpoint: endpoint, credentials: nil)
        var withCredentials = direct
        withCredentials.proxy = ProxyRoute(endpoint: endpoint, credentials: credentials)
        #expect(Set([direct, viaProxy, withCredentials]).count == 3)
    }

    @Test("an environment proxy with credentials in its URL gives every request the same route, so it is pooled")
    func environmentCredentialsPool() throws {
        let router = try router {
            $0.proxy = .environment(
                ProxyEnvironment([
                    "https_proxy": "http://user:secret@proxy.corp:3128", "http_proxy": "socks5://u:p@127.0.0.1:1080",
                ])
            )
        }
        let target = try RequestTarget(URL(string: "https://api.example/a")!)
        let first = try #require(try router.route(for: target))
        let second = try #require(try router.route(for: try RequestTarget(URL(string: "https://api.example/b")!)))
        #expect(first.credentials != nil)
        // The pool's key holds the route: two requests to one origin must share it, or no connection is reused.
        #expect(first == second)
        let plain = try #require(try router.route(for: try RequestTarget(URL(string: "http://api.example/")!)))
        #expect(plain != first)
        #expect(try router.route(for: try RequestTarget(URL(string: "http://api.example/c")!)) == plain)
    }

    @Test("the pool keys connections by proxy scheme and by the HTTPS proxy's own trust")
    func poolKeyByProxySchemeAndTrust() throws {
        let plain = try ProxyEndpoint(kind: .http, host: "proxy.corp", port: 3129)
        let tls = try ProxyEndpoint(kind: .https, host: "proxy.corp", port: 3129)
        let custom = ProxyTrust(DefaultTrustEvaluator(roots: .custom([])))
        let direct = ConnectionPool.Key(scheme: "https", host: "api.example", port: 443)
        var viaHTTP = direct
        viaHTTP.proxy = ProxyRoute(endpoint: plain, credentials: nil)
        var viaHTTPS = direct
        viaHTTPS.proxy = ProxyRoute(endpoint: tls, credentials: nil)
        var viaHTTPSCustom = direct
        viaHTTPSCustom.proxy = ProxyRoute(endpoint: tls, credentials: nil, trust: custom)
        var viaHTTPSCustomAgain = direct
        viaHTTPSCustomAgain.proxy = ProxyRoute(endpoint: tls, credentials: nil, trust: custom)
        #expect(Set([direct, viaHTTP, viaHTTPS, viaHTTPSCustom, viaHTTPSCustomAgain]).count == 4)
        // An HTTPS route always has a trust (the system roots by default); the others never do.
        #expect(viaHTTPS.proxy?.trust === ProxyTrust.systemRoots)
        #expect(viaHTTP.proxy?.trust == nil)
        #expect(ProxyRoute(endpoint: plain, credentials: nil, trust: custom).trust == nil)
    }

    @Test("https proxies: .https, .url, the environment and trustingProxy(with:) choose an HTTPS route")
    func httpsRoutes() throws {
        let evaluator = DefaultTrustEvaluator(roots: .custom([]))
        let explicit = try router { $0.proxy = .https(URL(string: "https://proxy.corp:3129")!, trust: evaluator) }
        #expect(try route(explicit, "https://api.example/") == "https://proxy.corp:3129")
        #expect(try route(explicit, "http://api.example/") == "https://proxy.corp:3129")
        let fromText = try router { $0.proxy = .url("https://proxy.corp") }
        #expect(try route(fromText, "https://api.example/") == "https://proxy.corp:443")
        let environment = try router {
            $0.proxy = Proxy.environment(ProxyEnvironment(["https_proxy": "https://proxy.corp:3129"]))
                .trustingProxy(with: evaluator)
        }
        let chosen = try environment.route(for: try RequestTarget(URL(string: "https://api.example/")!))
        #expect(chosen?.endpoint.kind == .https)
        #expect(chosen?.trust != nil && chosen?.trust !== ProxyTrust.systemRoots)
        // The same trust for every request: the pool can reuse the connections.
        let again = try environment.route(for: try RequestTarget(URL(string: "https://other.example/")!))
        #expect(again?.trust === chosen?.trust)
        let defaultTrust = try router { $0.proxy = .environment(ProxyEnvironment(["https_proxy": "https://p:1"])) }
        let systemRoots = try defaultTrust.route(for: try RequestTarget(URL(string: "https://api.example/")!))
        #expect(systemRoots?.trust === ProxyTrust.systemRoots)
    }

    @Test("an HTTPS proxy's description; a proxy trust for a proxy without TLS, or a wrong scheme, is refused")
    func httpsDescriptionsAndMisuse() async throws {
        let credentials = try ProxyCredentials(username: "a", password: SecretBytes(utf8: "b"))
        #expect(Proxy.url("https://u:secret@proxy.corp:3129").description == "https://proxy.corp:3129 (credentials)")
        #expect(
            Proxy.https(URL(string: "https://proxy.corp:3129")!, credentials: credentials).description
                == "https://proxy.corp:3129 (credentials)"
        )
        #expect(Proxy.environment.trustingProxy(with: DefaultTrustEvaluator()).description == "environment")
        #expect(Proxy.none.trustingProxy(with: DefaultTrustEvaluator()).description == "none")
        let misused = Proxy.http(URL(string: "http://proxy.corp:3128")!).trustingProxy(with: DefaultTrustEvaluator())
        #expect(
            misused.validationError
                == "a proxy trust evaluator is for an https:// proxy; http://proxy.corp:3128 is not reached over TLS"
        )
        let wrongScheme = Proxy.https(URL(string: "http://proxy.corp:3128")!)
        #expect(wrongScheme.validationError == "the proxy URL's scheme is not https")
        var configuration = BulwarkClient.Configuration(trust: try ServerTrustManager(evaluators: [:]))
        configuration.proxy = misused
        let client = BulwarkClient(configuration: configuration)
        let error = await proxiedError(client, "https://api.example/")
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.description.contains("is not reached over TLS") == true, "\(String(describing: error))")
        await client.shutdown()
    }
}

private typealias Proxy = BulwarkClient.Proxy

@Suite("A proxy's own text in errors")
struct ProxyTextInErrorsTests {
    /// The error a tunnel handler with `credentials` fails with after reading `answer`, as users see it.
    func failure(_ answer: String, kind: ProxyEndpoint.Kind = .http) throws -> String {
        let channel = EmbeddedChannel()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let credentials = try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "hunter2-Secret"))
        let handler = ProxyTunnelHandler(
            kind: kind,
            host: "api.example",
            port: 443,
            credentials: credentials,
            promise: promise
        )
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).wait()
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try channel.writeInbound(ByteBuffer(string: answer))
        var text = ""
        promise.futureResult.whenFailure { error in
            if let failure = error as? ProxyHandshakeFailure {
                text = "\(failure.error(host: "api.example", proxy: "proxy:3128"))"
            } else {
                text = "\(error)"
            }
        }
        _ = try? channel.finish()
        return text
    }

    @Test("a reason phrase or challenge that repeats the proxy password or Basic token is withheld from the error")
    func reflectedSecretsWithheld() throws {
        // base64("alice:hunter2-Secret")
        let token = "YWxpY2U6aHVudGVyMi1TZWNyZXQ="
        let cases = [
            "HTTP/1.1 403 wrong password hunter2-Secret\r\n\r\n",
            "HTTP/1.1 403 bad token \(token)\r\n\r\n",
            "HTTP/1.1 502 Basic \(token) rejected upstream\r\n\r\n",
            "HTTP/1.1 407 Auth\r\nProxy-Authenticate: hunter2-Secret\r\n\r\n",
            "HTTP/1.1 407 Auth\r\nProxy-Authenticate: \(token)\r\n\r\n",
        ]
        for answer in cases {
            let text = try failure(answer)
            #expect(!text.isEmpty, "\(answer)")
            #expect(!text.contains("hunter2"), "\(text)")
            #expect(!text.contains(token), "\(text)")
        }
        // Text that holds no secret is still shown, in words.
        #expect(
            try failure("HTTP/1.1 403 Forbidden\r\n\r\n")
                == "proxy_refused (api.example): the proxy at proxy:3128 refused the tunnel to api.example: 403 Forbidden"
        )
        #expect(
            try failure("HTTP/1.1 403 wrong password hunter2-Secret\r\n\r\n")
                == "proxy_refused (api.example): the proxy at proxy:3128 refused the tunnel to api.example: 403 "
                + "(the proxy's reason phrase is withheld: it repeats the proxy credentials)"
        )
    }
}
