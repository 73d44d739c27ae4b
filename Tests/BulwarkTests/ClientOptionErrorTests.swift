import Bulwark
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing

/// Options the client cannot use are reported on first use, each named. Making a client never fails (as with
/// AsyncHTTPClient): every request of a misconfigured client fails with `invalid_configuration`, before anything is
/// resolved or connected. Before, a cipher list BoringSSL did not know (`cipherSuites = "NO-SUCH-CIPHER"`, a string)
/// reached NIOSSL's precondition and crashed the process; cipher suites are now typed values, and the one list they
/// can still make wrong, an empty one, is refused.
@Suite("Options the client cannot use")
struct ClientOptionErrorTests {
    func configuration(_ suites: [BulwarkClient.TLSOptions.CipherSuite]?) throws -> BulwarkClient.Configuration {
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [(try HostPattern(Harness.host), .default())])
        )
        configuration.tls.cipherSuites = suites
        return configuration
    }

    /// Every request of a client made with `configuration` fails with `invalid_configuration` naming `option`, and no
    /// byte reaches the server the request is for.
    func expectRefused(
        _ configuration: BulwarkClient.Configuration,
        naming option: String,
        because reason: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        var configuration = configuration
        if configuration.resolveOverrides.isEmpty {
            configuration.resolveOverrides[.init(host: Harness.host, port: server.port)] = "127.0.0.1"
        }
        let client = BulwarkClient(configuration: configuration)
        for path in ["/hello", "/echo", "/hello"] {
            let error = await Harness.expectError(.invalidConfiguration, sourceLocation: sourceLocation) {
                _ = try await client.execute(BulwarkRequest(url: Harness.url(server, path)))
            }
            let text = error.map { String(describing: $0) } ?? ""
            #expect(text.contains(option), "\(text)", sourceLocation: sourceLocation)
            #expect(text.contains(reason), "\(text)", sourceLocation: sourceLocation)
            #expect(!text.contains("NIOSSL"), "\(text)", sourceLocation: sourceLocation)
        }
        #expect(server.acceptedConnections == 0, sourceLocation: sourceLocation)
        #expect(server.receivedApplicationBytes == 0, sourceLocation: sourceLocation)
        #expect(client.openConnectionCount == 0, sourceLocation: sourceLocation)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test func anEmptyCipherListFailsEveryRequestOfTheClient() async throws {
        try await self.expectRefused(
            try self.configuration([]),
            naming: "tls.cipherSuites",
            because: "the cipher suite list is empty"
        )
    }

    @Test func anEmptyCipherListIsRefusedByAStream() async throws {
        do {
            _ = try await TLSStream.connect(host: Harness.host, port: 443, configuration: try self.configuration([]))
            Issue.record("a stream with an empty cipher list was opened")
        } catch let error as BulwarkError {
            #expect(error.code == .tlsHandshakeFailed)
            let text = String(describing: error)
            #expect(text.contains("the cipher suite list is empty"), "\(text)")
            #expect(!text.contains("NIOSSL"), "\(text)")
        }
    }

    @Test func aResolveOverrideThatIsNotAnAddressFailsEveryRequest() async throws {
        var configuration = try self.configuration(nil)
        configuration.resolveOverrides[.init(host: Harness.host, port: 8443)] = "localhost"
        try await self.expectRefused(
            configuration,
            naming: "resolveOverrides[api.bulwark.test:8443]",
            because: "\"localhost\" is not an IP address"
        )
    }

    @Test func aResolveOverrideWithAnInvalidPortOrHostFailsEveryRequest() async throws {
        var configuration = try self.configuration(nil)
        configuration.resolveOverrides[.init(host: Harness.host, port: 70_000)] = "127.0.0.1"
        try await self.expectRefused(
            configuration,
            naming: "resolveOverrides[api.bulwark.test:70000]",
            because: "port 70000 is out of range"
        )
        configuration.resolveOverrides = [.init(host: "bad host", port: 443): "127.0.0.1"]
        try await self.expectRefused(
            configuration,
            naming: "resolveOverrides[bad host:443]",
            because: "the host is not a valid host name"
        )
    }

    @Test func aPoolWithoutConnectionsFailsEveryRequest() async throws {
        var configuration = try self.configuration(nil)
        configuration.pool.maximumConnectionsPerHost = 0
        try await self.expectRefused(
            configuration,
            naming: "pool.maximumConnectionsPerHost",
            because: "it must be at least 1"
        )
    }

    /// Resolve-override keys are canonical: a host written in capitals names the same endpoint, and an IPv6
    /// address may carry brackets.
    @Test func resolveOverrideKeysAreCanonical() {
        let upper = BulwarkClient.Endpoint(host: "API.Bulwark.Test", port: 443)
        #expect(upper == BulwarkClient.Endpoint(host: "api.bulwark.test", port: 443))
        #expect(upper.host == "api.bulwark.test")
        #expect(upper.description == "api.bulwark.test:443")
        let v6 = BulwarkClient.Endpoint(host: "[2001:DB8::1]", port: 8443)
        #expect(v6.host == "2001:db8::1")
        #expect(v6.description == "[2001:db8::1]:8443")
        let address: BulwarkClient.ResolvedAddress = "[::1]"
        #expect(address.description == "[::1]")
    }

    /// A request made from text that is not a URL fails when it is executed, with `invalid_url`; nothing is sent.
    @Test func aRequestWithAnUnusableURLFailsAtExecute() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        let client = try Harness.client(for: server, evaluator: .default(roots: .custom([chain.root.certificate])))
        for text in ["", "https://user:pass@\(Harness.host):\(server.port)/", "ftp://\(Harness.host)/"] {
            let request = BulwarkRequest(url: text)
            let error = await Harness.expectError(.invalidURL) { _ = try await client.execute(request) }
            #expect(!(error.map { String(describing: $0) } ?? "").contains("pass"))
        }
        #expect(server.acceptedConnections == 0)
        // Setting a URL makes the request usable.
        var request = BulwarkRequest(url: "")
        request.url = URL(string: Harness.url(server, "/hello"))!
        let response = try await client.execute(request)
        #expect(response.status == .ok)
        await client.shutdown()
        try await server.shutdown()
    }

    /// A typed list reaches BoringSSL as a valid cipher string: the client connects.
    @Test func aTypedCipherListConnects() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        var configuration = try self.configuration([.ecdheECDSAWithAES256GCMSHA384])
        configuration.trust = ServerTrustManager(patterns: [
            (try HostPattern(Harness.host), .default(roots: .custom([chain.root.certificate])))
        ])
        configuration.resolveOverrides[.init(host: Harness.host, port: server.port)] = "127.0.0.1"
        let client = BulwarkClient(configuration: configuration)
        let (response, body) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        #expect(body == "hello")
        await client.shutdown()
        try await server.shutdown()
    }
}
