import Bulwark
import BulwarkTestSupport
import Foundation
import Testing

/// TLS options NIOSSL would stop the process on are refused with an error in words. Before, a cipher list BoringSSL
/// did not know (`cipherSuites = "NO-SUCH-CIPHER"`, a string) reached NIOSSL's precondition and crashed the process;
/// cipher suites are now typed values, and the one list they can still make wrong, an empty one, is refused.
@Suite("TLS options BoringSSL would refuse")
struct ClientOptionErrorTests {
    func configuration(_ suites: [BulwarkClient.TLSOptions.CipherSuite]?) throws -> BulwarkClient.Configuration {
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [(try HostPattern(Harness.host), .default())])
        )
        configuration.tls.cipherSuites = suites
        return configuration
    }

    func check(_ error: BulwarkError) {
        #expect(error.code == .tlsHandshakeFailed)
        let text = String(describing: error)
        #expect(text.contains("the cipher suite list is empty"), "\(text)")
        #expect(!text.contains("NIOSSL"), "\(text)")
    }

    @Test func anEmptyCipherListIsRefusedByTheClientAndAStream() async throws {
        do {
            _ = try BulwarkClient(configuration: try self.configuration([]))
            Issue.record("a client with an empty cipher list was made")
        } catch let error as BulwarkError {
            self.check(error)
        }
        do {
            _ = try await TLSStream.connect(host: Harness.host, port: 443, configuration: try self.configuration([]))
            Issue.record("a stream with an empty cipher list was opened")
        } catch let error as BulwarkError {
            self.check(error)
        }
    }

    /// A typed list reaches BoringSSL as a valid cipher string: the client connects.
    @Test func aTypedCipherListConnects() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        var configuration = try self.configuration([.ecdheECDSAWithAES256GCMSHA384])
        configuration.trust = ServerTrustManager(patterns: [
            (try HostPattern(Harness.host), .default(roots: .custom([chain.root.certificate])))
        ])
        configuration.resolveOverrides["\(Harness.host):\(server.port)"] = "127.0.0.1"
        let client = try BulwarkClient(configuration: configuration)
        let (response, body) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        #expect(body == "hello")
        try await client.shutdown()
        try await server.shutdown()
    }
}
