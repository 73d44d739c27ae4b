import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

@Suite("Pin-failure reports (TrustKit, RFC 7469)", .tags(.timing))
struct PinFailureReportTests {
    static let collectorHost = "collector.bulwark.test"

    let genuine: TestChain
    let pins: PinSet

    init() throws {
        self.genuine = try TestChain.make(host: Harness.host)
        self.pins = try PinSet(
            [Pin.publicKey(of: genuine.intermediate!.certificate), Pin.publicKey(of: genuine.root.certificate)],
            expiration: Date(timeIntervalSince1970: 2_000_000_000)
        )
    }

    /// A pinned client aimed at an interceptor whose CA it trusts, reporting to `collectorPort`.
    func client(
        interceptor: TestHTTPSServer,
        collectorPort: Int,
        collectorRoot: Certificate,
        enforcement: PinSet.Enforcement = .enforce
    ) throws -> BulwarkClient {
        let pinSet = try PinSet(pins.pins, expiration: pins.expiration, enforcement: enforcement)
        let evaluator = PublicKeysTrustEvaluator(
            pinSet: pinSet,
            roots: .custom([genuine.root.certificate, interceptor.forgedRoot!])
        )
        return try Harness.client(for: interceptor, evaluator: evaluator) { configuration in
            var reporting = BulwarkClient.PinFailureReporting(
                reportURIs: [URL(string: "https://\(Self.collectorHost):\(collectorPort)/report")!],
                collectorTrust: try! ServerTrustManager(evaluators: [
                    Self.collectorHost: .default(roots: .custom([collectorRoot]))
                ])
            )
            reporting.timeout = .seconds(10)
            configuration.pinFailureReporting = reporting
            configuration.resolveOverrides[.init(host: Self.collectorHost, port: collectorPort)] = "127.0.0.1"
        }
    }

    static func waitForRequests(_ server: TestHTTPSServer, count: Int) async throws {
        for _ in 0..<100 where server.requests.count < count {
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func enforcedFailureIsReportedWithEveryField() async throws {
        let collectorChain = try TestChain.make(host: Self.collectorHost)
        let collector = try await Harness.server(collectorChain)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let client = try client(
            interceptor: interceptor,
            collectorPort: collector.port,
            collectorRoot: collectorChain.root.certificate
        )
        await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(client, Harness.url(interceptor, "/hello"))
        }
        try await Self.waitForRequests(collector, count: 1)
        let request = try #require(collector.requests.first)
        #expect(request.method == "POST")
        #expect(request.path == "/report")
        #expect(request.value(forHeader: "content-type") == "application/json")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(report["hostname"] as? String == Harness.host)
        #expect(report["port"] as? Int == interceptor.port)
        #expect(report["noted-hostname"] as? String == Harness.host)
        #expect(report["include-subdomains"] as? Bool == false)
        #expect(report["enforce-pinning"] as? Bool == true)
        #expect((report["effective-expiration-date"] as? String)?.hasPrefix("2033-05-18") == true)
        #expect(report["date-time"] is String)
        let known = try #require(report["known-pins"] as? [String])
        #expect(known == pins.pins.map { "pin-sha256=\"\(Data($0.digest).base64EncodedString())\"" })
        let chainPEM = try #require(report["validated-certificate-chain"] as? [String])
        let chain = try chainPEM.map { try Certificate(pemEncoded: $0) }
        #expect(chain.count == 3)
        #expect(chain.last == interceptor.forgedRoot)
        await client.shutdown()
        try await collector.shutdown()
        try await interceptor.shutdown()
    }

    @Test func duplicateFailuresWithin24HoursSendOneReport() async throws {
        let collectorChain = try TestChain.make(host: Self.collectorHost)
        let collector = try await Harness.server(collectorChain)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let client = try client(
            interceptor: interceptor,
            collectorPort: collector.port,
            collectorRoot: collectorChain.root.certificate,
            enforcement: .reportOnly
        )
        for _ in 0..<3 {
            // Report-only: the request goes through, and the violation is reported.
            let (response, _) = try await Harness.get(client, Harness.url(interceptor, "/close"))
            #expect(response.status == .ok)
        }
        try await Self.waitForRequests(collector, count: 1)
        try await Task.sleep(for: .milliseconds(500))
        #expect(interceptor.acceptedConnections == 3)
        #expect(collector.requests.count == 1)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(collector.requests[0].body)) as? [String: Any]
        )
        #expect(report["enforce-pinning"] as? Bool == false)
        await client.shutdown()
        try await collector.shutdown()
        try await interceptor.shutdown()
    }

    @Test func deadCollectorDoesNotHoldUpTheRequest() async throws {
        let collectorChain = try TestChain.make(host: Self.collectorHost)
        var stalled = TestHTTPSServer.Configuration(chain: collectorChain)
        stalled.behavior = .stallHandshake
        let collector = try await TestHTTPSServer.start(configuration: stalled)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let client = try client(
            interceptor: interceptor,
            collectorPort: collector.port,
            collectorRoot: collectorChain.root.certificate
        )
        let start = ContinuousClock.now
        await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(client, Harness.url(interceptor, "/hello"))
        }
        let elapsed = ContinuousClock.now - start
        // The report hangs in a stalled TLS handshake for its 10 s timeout; the request must not wait for it.
        #expect(elapsed < .seconds(5), "the refused request took \(elapsed)")
        #expect(collector.acceptedConnections <= 1)
        await client.shutdown()
        try await collector.shutdown()
        try await interceptor.shutdown()
    }
}
