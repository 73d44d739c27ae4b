import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import InMemoryTracing
import NIOSSL
import Testing
import Tracing

// Through an HTTPS proxy, two TLS sessions share one channel: the proxy's, then the origin's inside it. What the
// client reports about "the" TLS session must be the origin's.
@Suite("HTTPS proxy hardening", .serialized, .tags(.externalPeers))
struct HTTPSProxyHardeningTests {
    @Test("the hop's TLS version is the origin's (1.2 here), not the HTTPS proxy's (1.3)")
    func hopRecordsTheOriginsTLSVersion() async throws {
        let pki = try ProxyPKI()
        let squid = try await SquidProxy.start(tls: try pki.chain())
        defer { squid.stop() }
        let chain = try TestChain.make(host: "localhost")
        let origin = try await TestHTTPSServer.start(
            configuration: .init(chain: chain, maximumTLSVersion: .tlsv12)
        )
        let tracer = InMemoryTracer()
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": .default(roots: .custom([chain.root.certificate]))])
        )
        configuration.proxy = .https(
            URL(string: "https://127.0.0.1:\(squid.tlsPort!)")!,
            credentials: try ProxyCredentials(
                username: SquidProxy.username,
                password: SecretBytes(utf8: SquidProxy.password)
            ),
            trust: pki.trust
        )
        configuration.tracing = BulwarkClient.TracingOptions(tracer: tracer)
        let client = BulwarkClient(configuration: configuration)
        let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(origin.port)/hello"))
        _ = try await response.body.collect(upTo: 1 << 20)
        await client.shutdown()
        try await origin.shutdown()
        let versions = tracer.finishedSpans.compactMap { span -> String? in
            guard case .string(let version) = span.attributes.get("tls.protocol.version") else { return nil }
            return version
        }
        #expect(!versions.isEmpty)
        #expect(versions.allSatisfy { $0 == "1.2" }, "\(versions)")
    }
}
