import Bulwark
import BulwarkTestSupport
import Foundation
import Testing

@Suite("BulwarkClient.shared: the web PKI for every host, never shut down")
struct SharedClientTests {
    @Test("one instance, judging every host by the default evaluator")
    func oneInstanceWithTheDefaultEvaluator() {
        #expect(BulwarkClient.shared === BulwarkClient.shared)
        let trust = BulwarkClient.shared.configuration.trust
        #expect(trust.evaluator(forHost: "api.example.com") is DefaultTrustEvaluator)
        #expect(trust.evaluator(forHost: "other.example.org") is DefaultTrustEvaluator)
        #expect(BulwarkClient.shared.configuration.allowlist == nil)
        #expect(BulwarkClient.shared.configuration.credentials == nil)
    }

    @Test("a chain from a private CA is refused, and shutting the shared client down does nothing")
    func privateCAIsRefusedAndShutdownDoesNothing() async throws {
        let chain = try TestChain.make(host: "localhost")
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        // An IP address: no name to resolve (the server listens on 127.0.0.1 only).
        let url = "https://127.0.0.1:\(server.port)/hello"
        // The system roots are read and parsed once per process, on first use: in a debug build under the parallel
        // in-process run that took longer than the 10 s handshake timeout (tls_handshake_timeout on a clean CI run).
        // Read them here, outside any handshake.
        let warm = await BulwarkClient.shared.configuration.trust.evaluate(chain.presentedChain, forHost: "127.0.0.1")
        #expect(!warm.isTrusted)
        await Harness.expectError(.trustRefused) {
            _ = try await BulwarkClient.shared.execute(BulwarkRequest(url: url))
        }
        await BulwarkClient.shared.shutdown()
        await BulwarkClient.shared.shutdown(gracePeriod: .zero)
        // Still refused by trust, not by a shutdown.
        await Harness.expectError(.trustRefused) {
            _ = try await BulwarkClient.shared.execute(BulwarkRequest(url: url))
        }
        #expect(server.receivedApplicationBytes == 0)
        try await server.shutdown()
    }
}
