import Bulwark
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import X509

/// Several HTTPS origins on 127.0.0.1 for redirect tests: one root, one leaf valid for `*.bulwark.test` and
/// `*.attacker.test`, each server on its own port, and clients that resolve every name to 127.0.0.1 and trust the
/// root for both domains (so the redirect policy, never the trust policy, is what refuses a hop).
struct RedirectHarness {
    let root: TestIdentity
    let intermediate: TestIdentity
    let leaf: TestIdentity

    init() throws {
        self.root = try CertificateFactory.makeRoot()
        self.intermediate = try CertificateFactory.issueIntermediate(from: self.root)
        self.leaf = try CertificateFactory.issueLeaf(
            from: self.intermediate,
            commonName: "bulwark.test",
            dnsNames: ["*.bulwark.test", "*.attacker.test"]
        )
    }

    func server(alpn: [String] = ["h2", "http/1.1"]) async throws -> TestHTTPSServer {
        try await TestHTTPSServer.start(
            configuration: TestHTTPSServer.Configuration(
                chain: [self.leaf.certificate, self.intermediate.certificate],
                privateKey: self.leaf.privateKey,
                alpn: alpn
            )
        )
    }

    /// A client whose names in `hosts` all resolve to 127.0.0.1 on every port of `ports`.
    func client(
        hosts: [String],
        ports: [Int],
        monitor: RecordingEventMonitor? = nil,
        configure: (inout BulwarkClient.Configuration) -> Void = { _ in }
    ) throws -> BulwarkClient {
        let evaluator = DefaultTrustEvaluator(roots: .custom([self.root.certificate]))
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["**.bulwark.test": evaluator, "**.attacker.test": evaluator])
        )
        for host in hosts {
            for port in ports {
                configuration.resolveOverrides[.init(host: host, port: port)] = "127.0.0.1"
            }
        }
        if let monitor {
            configuration.eventMonitor = monitor
        }
        configure(&configuration)
        return BulwarkClient(configuration: configuration)
    }

    /// The host of ``withOrigin(alpn:configure:_:)``'s server.
    static let originHost = "a.bulwark.test"

    /// Runs `body` with one server, a client that reaches it as ``originHost`` and that client's event monitor,
    /// then shuts the client and the server down (after a failure too).
    func withOrigin(
        alpn: [String] = ["h2", "http/1.1"],
        configure: (inout BulwarkClient.Configuration) -> Void = { _ in },
        _ body: (TestHTTPSServer, BulwarkClient, RecordingEventMonitor) async throws -> Void
    ) async throws {
        let server = try await self.server(alpn: alpn)
        let monitor = RecordingEventMonitor()
        do {
            let client = try self.client(
                hosts: [Self.originHost],
                ports: [server.port],
                monitor: monitor,
                configure: configure
            )
            do {
                try await body(server, client, monitor)
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    /// `https://host:port/path`.
    static func url(_ host: String, _ server: TestHTTPSServer, _ path: String) -> String {
        "https://\(host):\(server.port)\(path)"
    }

    /// The path of the test server's redirect route: status `status` with `Location: location`.
    static func redirect(_ status: Int, to location: String) -> String {
        "/redirect/\(status)?to=" + Self.encoded(location)
    }

    /// `path` wrapped in `count` same-origin 302 redirects: `count` hops lead to it.
    static func chain(of count: Int, to path: String) -> String {
        var path = path
        for _ in 0..<count {
            path = Self.redirect(302, to: path)
        }
        return path
    }

    /// Percent-encodes everything but unreserved characters, for a value after `?to=`.
    static func encoded(_ text: String) -> String {
        var allowed = CharacterSet()
        allowed.insert(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed)!
    }

    /// The JSON object `/headers` returns.
    static func headers(_ body: String) throws -> [String: String] {
        try JSONDecoder().decode([String: String].self, from: Data(body.utf8))
    }
}

/// A GET with a bearer token and a session cookie.
func credentialedRequest(
    _ url: String,
    method: HTTPMethod = .GET,
    body: BulwarkRequest.Body? = nil
) -> BulwarkRequest {
    BulwarkRequest(
        url: url,
        method: method,
        headers: ["Authorization": "Bearer secret-token", "Cookie": "session=secret-cookie", "Accept": "*/*"],
        body: body
    )
}
