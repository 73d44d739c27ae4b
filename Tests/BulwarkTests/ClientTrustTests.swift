import Bulwark
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import X509

/// Shared helpers: a server presenting a chain for `api.bulwark.test` on 127.0.0.1, and a client that resolves
/// that name to the server (so SNI and host validation use the DNS name, as in production).
enum Harness {
    static let host = "api.bulwark.test"

    static func client(
        for server: TestHTTPSServer,
        evaluator: any ServerTrustEvaluating,
        host: String = Harness.host,
        configure: (inout BulwarkClient.Configuration) -> Void = { _ in }
    ) throws -> BulwarkClient {
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [(try HostPattern(host), evaluator)])
        )
        configuration.resolveOverrides[.init(host: host, port: server.port)] = "127.0.0.1"
        configure(&configuration)
        return BulwarkClient(configuration: configuration)
    }

    static func url(_ server: TestHTTPSServer, _ path: String, host: String = Harness.host) -> String {
        "https://\(host):\(server.port)\(path)"
    }

    static func server(_ chain: TestChain, alpn: [String] = ["h2", "http/1.1"]) async throws -> TestHTTPSServer {
        var configuration = TestHTTPSServer.Configuration(chain: chain)
        configuration.alpn = alpn
        return try await TestHTTPSServer.start(configuration: configuration)
    }

    static func get(_ client: BulwarkClient, _ url: String) async throws -> (BulwarkResponse, String) {
        let response = try await client.execute(BulwarkRequest(url: url))
        let body = try await response.body.collect(upTo: 64 << 20)
        return (response, String(buffer: body))
    }

    /// Runs `body`, expecting a `BulwarkError` of `code`; returns it.
    @discardableResult
    static func expectError(
        _ code: BulwarkError.Code,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> Void
    ) async -> BulwarkError? {
        do {
            try await body()
            Issue.record("expected \(code), but the request succeeded", sourceLocation: sourceLocation)
        } catch let error as BulwarkError {
            #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected BulwarkError \(code), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}

@Suite("Trust inside every handshake, over real TLS on loopback")
struct ClientTrustTests {
    @Test(arguments: TestChain.Scenario.allCases)
    func certificateMatrix(scenario: TestChain.Scenario) async throws {
        let chain = try TestChain.make(scenario, host: Harness.host)
        let server = try await Harness.server(chain)
        let client = try Harness.client(for: server, evaluator: .default(roots: .custom([chain.root.certificate])))
        let expected: String? =
            switch scenario {
            case .valid: nil
            case .expiredLeaf: "expired"
            case .notYetValidLeaf: "not_yet_valid"
            case .wrongHost, .ipAddressSAN, .wildcardSAN: "hostname_mismatch"
            case .selfSignedLeaf, .missingIntermediate, .wrongExtendedKeyUsage, .intermediateNotCA, .noExtendedKeyUsage:
                "untrusted_chain"
            }
        if let expected {
            let error = await Harness.expectError(.trustRefused) {
                _ = try await Harness.get(client, Harness.url(server, "/hello"))
            }
            #expect(
                error?.trustRefusal?.reasons.first?.shortDescription == expected,
                "\(scenario): \(String(describing: error))"
            )
            #expect(error?.host == Harness.host)
            #expect(server.receivedApplicationBytes == 0, "\(scenario): request bytes reached a refused server")
            #expect(server.acceptedConnections == 1, "\(scenario): a refused handshake must not be retried")
        } else {
            let (response, body) = try await Harness.get(client, Harness.url(server, "/hello"))
            #expect(response.status == .ok)
            #expect(body == "hello")
            #expect(response.serverTrust?.trustedChain?.certificates.count == 3)
        }
        await client.shutdown()
        try await server.shutdown()
    }

    @Test(arguments: ["leaf", "intermediate", "root"])
    func pinAtEachLevel(level: String) async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let certificate =
            switch level {
            case "leaf": chain.leaf.certificate
            case "intermediate": chain.intermediate!.certificate
            default: chain.root.certificate
            }
        let backup = try CertificateFactory.makeRoot(commonName: "Backup key")
        let pins = try PinSet([Pin.publicKey(of: certificate), Pin.publicKey(of: backup.certificate)])
        let client = try Harness.client(
            for: server,
            evaluator: .publicKeys(pins, roots: .custom([chain.root.certificate]))
        )
        let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test func interceptorIsRefusedBeforeAnyRequestByteReachesIt() async throws {
        let genuine = try TestChain.make(host: Harness.host)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let forgedRoot = try #require(interceptor.forgedRoot)
        let pins = try PinSet([
            Pin.publicKey(of: genuine.intermediate!.certificate), Pin.publicKey(of: genuine.root.certificate),
        ])
        // The user installed the interceptor's CA (Charles, mitmproxy): only the pins stand in the way.
        let client = try Harness.client(
            for: interceptor,
            evaluator: .publicKeys(pins, roots: .custom([genuine.root.certificate, forgedRoot]))
        )
        let error = await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(client, Harness.url(interceptor, "/hello"))
        }
        guard let reason = error?.trustRefusal?.reasons.first, reason.code == "pin_mismatch",
            let mismatch = reason.pinMismatch
        else {
            Issue.record("expected a pin mismatch, got \(String(describing: error))")
            return
        }
        #expect(mismatch.host == Harness.host)
        #expect(mismatch.expectedPins == pins.pins)
        let message = String(describing: error!)
        #expect(message.contains("Certificate pinning failure!"))
        #expect(message.contains("Pinned certificates for \(Harness.host):"))
        #expect(interceptor.receivedApplicationBytes == 0)
        #expect(interceptor.requests.isEmpty)
        await client.shutdown()
        try await interceptor.shutdown()
    }

    @Test func everyHandshakeEmitsATrustEvent() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let monitor = RecordingEventMonitor()
        let pins = try PinSet([
            Pin.publicKey(of: chain.intermediate!.certificate), Pin.publicKey(of: chain.root.certificate),
        ])
        let evaluator = PublicKeysTrustEvaluator(
            pinSet: pins,
            roots: .custom([chain.root.certificate, interceptor.forgedRoot!])
        )
        let client = try Harness.client(for: server, evaluator: evaluator) { configuration in
            configuration.eventMonitor = monitor
            configuration.resolveOverrides[.init(host: Harness.host, port: interceptor.port)] = "127.0.0.1"
        }
        _ = try await Harness.get(client, Harness.url(server, "/hello"))
        await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(client, Harness.url(interceptor, "/hello"))
        }
        let events = monitor.events
        #expect(events.map(\.kind) == [.trustEvaluated, .pinMatched, .pinFailed])
        #expect(events.map(\.host) == [Harness.host, Harness.host, Harness.host])
        #expect(events[1].message.contains(Pin.publicKey(of: chain.intermediate!.certificate).description))
        #expect(events.last?.shortDescription == "pin_failed:pin_mismatch")
        #expect(events.last?.message.contains("Pinned certificates for \(Harness.host)") == true)
        await client.shutdown()
        try await server.shutdown()
        try await interceptor.shutdown()
    }

    @Test(arguments: [true, false])
    func trustedDecisionsAreReusedOnlyForTheSameChainAndStillReported(cacheEnabled: Bool) async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let monitor = RecordingEventMonitor()
        let pins = try PinSet([
            Pin.publicKey(of: chain.intermediate!.certificate), Pin.publicKey(of: chain.root.certificate),
        ])
        let roots = TrustRoots.custom([chain.root.certificate, interceptor.forgedRoot!])
        let evaluator = PublicKeysTrustEvaluator(pinSet: pins, roots: roots)
        let client = try Harness.client(for: server, evaluator: evaluator) { configuration in
            configuration.eventMonitor = monitor
            configuration.resolveOverrides[.init(host: Harness.host, port: interceptor.port)] = "127.0.0.1"
            if !cacheEnabled { configuration.trustDecisionCache = nil }
        }
        for _ in 0..<3 {
            // A new connection (and handshake) each time.
            let request = BulwarkRequest(url: Harness.url(server, "/hello"), headers: ["connection": "close"])
            let response = try await client.execute(request)
            _ = try await response.body.collect(upTo: 1 << 20)
            #expect(response.serverTrust?.trustedChain?.certificates.count == 3)
        }
        // Another chain for the same host (the interceptor's forged one) is evaluated, and refused, every time.
        for _ in 0..<2 {
            await Harness.expectError(.trustRefused) {
                _ = try await Harness.get(client, Harness.url(interceptor, "/hello"))
            }
        }
        #expect(server.completedHandshakes == 3)
        let events = monitor.events
        let handshake: [SecurityEvent.Kind] = [.trustEvaluated, .pinMatched]
        #expect(events.map(\.kind) == handshake + handshake + handshake + [.pinFailed, .pinFailed])
        let cached = events.filter { $0.kind == .trustEvaluated }.map { $0.details[.cached]?.flag }
        #expect(cached == (cacheEnabled ? [false, true, true] : [false, false, false]))
        await client.shutdown()
        try await server.shutdown()
        try await interceptor.shutdown()
    }

    @Test func unlistedHostIsRefusedInTheHandshake() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let client = try Harness.client(
            for: server,
            evaluator: .default(roots: .custom([chain.root.certificate])),
            host: "other.bulwark.test"
        ) { configuration in
            configuration.resolveOverrides[.init(host: Harness.host, port: server.port)] = "127.0.0.1"
        }
        let error = await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        #expect(error?.trustRefusal?.reasons == [.hostNotEvaluated(host: Harness.host)])
        #expect(server.receivedApplicationBytes == 0)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test func tls13OnlyRefusesATLS12Server() async throws {
        let chain = try TestChain.make(host: Harness.host)
        var configuration = TestHTTPSServer.Configuration(chain: chain)
        configuration.maximumTLSVersion = .tlsv12
        let server = try await TestHTTPSServer.start(configuration: configuration)
        let roots = TrustRoots.custom([chain.root.certificate])
        let strict = try Harness.client(for: server, evaluator: .default(roots: roots)) {
            $0.tls.minimumVersion = .tls13
        }
        await Harness.expectError(.tlsHandshakeFailed) {
            _ = try await Harness.get(strict, Harness.url(server, "/hello"))
        }
        let lenient = try Harness.client(for: server, evaluator: .default(roots: roots))
        #expect(try await Harness.get(lenient, Harness.url(server, "/hello")).1 == "hello")
        await strict.shutdown()
        await lenient.shutdown()
        try await server.shutdown()
    }

    @Test func legacyTLSServerIsRefusedByDefault() async throws {
        let chain = try TestChain.make(host: Harness.host)
        var configuration = TestHTTPSServer.Configuration(chain: chain)
        configuration.minimumTLSVersion = .tlsv1
        configuration.maximumTLSVersion = .tlsv11
        let server = try await TestHTTPSServer.start(configuration: configuration)
        let client = try Harness.client(for: server, evaluator: .default(roots: .custom([chain.root.certificate])))
        await Harness.expectError(.tlsHandshakeFailed) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        await client.shutdown()
        try await server.shutdown()
    }
}

@Suite("Host allowlist in the client")
struct ClientAllowlistTests {
    @Test func unlistedHostIsRefusedBeforeAnyConnection() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let monitor = RecordingEventMonitor()
        let client = try Harness.client(for: server, evaluator: .default(roots: .custom([chain.root.certificate]))) {
            configuration in
            configuration.allowlist = try! HostAllowlist(patterns: ["**.allowed.test"])
            configuration.eventMonitor = monitor
        }
        let error = await Harness.expectError(.hostNotAllowed) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        #expect(error?.host == Harness.host)
        #expect(server.acceptedConnections == 0, "the allowlist must refuse before any connection")
        #expect(monitor.events.map(\.kind) == [.requestRefusedByAllowlist])
        await client.shutdown()
        try await server.shutdown()
    }

    @Test func redirectHopsGoThroughTheSameAllowlist() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let outside = try await Harness.server(chain)
        let monitor = RecordingEventMonitor()
        let client = try Harness.client(for: server, evaluator: .default(roots: .custom([chain.root.certificate]))) {
            configuration in
            configuration.allowlist = try! HostAllowlist([HostAllowlist.Entry(Harness.host, ports: [server.port])])
            configuration.redirects.allowedHosts = [try! HostPattern(Harness.host)]
            configuration.redirects.allowedPorts = [outside.port]
            configuration.eventMonitor = monitor
            configuration.resolveOverrides[.init(host: Harness.host, port: outside.port)] = "127.0.0.1"
        }
        let target = "https://\(Harness.host):\(outside.port)/hello"
        let escaped = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        await Harness.expectError(.hostNotAllowed) {
            _ = try await Harness.get(client, Harness.url(server, "/redirect/302?to=\(escaped)"))
        }
        #expect(server.requests.count == 1)
        #expect(outside.acceptedConnections == 0)
        #expect(monitor.events.contains { $0.kind == .requestRefusedByAllowlist })
        await client.shutdown()
        try await server.shutdown()
        try await outside.shutdown()
    }
}
