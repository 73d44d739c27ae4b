import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

// A request the client makes on its own (a pin-failure report) goes through the proxy the client's configuration
// chooses, as the request that caused it did: on a network where only the proxy reaches out, a report sent direct is
// lost, and through a `socks5h` proxy a direct connection leaks the collector's name to the local resolver.
@Suite("Pin-failure reports through the client's proxy", .serialized, .tags(.externalPeers))
struct PinFailureReporterProxyTests {
    @Test("the report to the collector goes through squid, as the refused request did (squid's log shows both)")
    func reportGoesThroughTheProxy() async throws {
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let genuine = try TestChain.make(host: "localhost")
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: "localhost")
        let collectorChain = try TestChain.make(host: "localhost")
        let collector = try await TestHTTPSServer.start(configuration: .init(chain: collectorChain))
        let pins = try PinSet([
            Pin.publicKey(of: genuine.intermediate!.certificate), Pin.publicKey(of: genuine.root.certificate),
        ])
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                "localhost": PublicKeysTrustEvaluator(
                    pinSet: pins,
                    roots: .custom([genuine.root.certificate, interceptor.forgedRoot!])
                )
            ])
        )
        configuration.proxy = .http(
            URL(string: "http://127.0.0.1:\(squid.port)")!,
            credentials: try ProxyCredentials(
                username: SquidProxy.username,
                password: SecretBytes(utf8: SquidProxy.password)
            )
        )
        var reporting = BulwarkClient.PinFailureReporting(
            reportURIs: [URL(string: "https://localhost:\(collector.port)/report")!],
            collectorTrust: try ServerTrustManager(evaluators: [
                "localhost": .default(roots: .custom([collectorChain.root.certificate]))
            ])
        )
        // The route is what this test is about, not the time: beside the other external-program suites on two cores,
        // the report through squid can take longer than a few seconds.
        reporting.timeout = .seconds(30)
        configuration.pinFailureReporting = reporting
        let client = BulwarkClient(configuration: configuration)
        do {
            _ = try await client.execute(BulwarkRequest(url: "https://localhost:\(interceptor.port)/hello"))
            Issue.record("the pinned request through the interceptor succeeded")
        } catch let error as BulwarkError {
            #expect(error.code == .trustRefused, "\(error)")
        }
        // The report is sent after the refusal, in the background: wait for it, up to the reporter's 30 s.
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while collector.requests.isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(collector.requests.first?.path == "/report")
        let log = try await squid.accessLog(atLeast: 2).filter { $0.contains(" CONNECT ") }
        #expect(log.contains { $0.contains("CONNECT localhost:\(interceptor.port)") }, "\(log)")
        #expect(log.contains { $0.contains("CONNECT localhost:\(collector.port)") }, "the report went direct: \(log)")
        await client.shutdown()
        try await collector.shutdown()
        try await interceptor.shutdown()
    }
}
