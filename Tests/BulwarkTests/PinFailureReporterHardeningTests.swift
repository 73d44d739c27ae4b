import BulwarkTestSupport
import Foundation
import NIOCore
import Testing
import X509

@testable import Bulwark

/// Regression tests for issue 16's defects 6 and 7: the pin-failure reporter and `TLSStream` under the client's
/// own policy (allowlist, event monitor), with bounded memory and work whatever a server presents.
@Suite("Pin-failure reporter and TLS stream hardening")
struct PinFailureReporterHardeningTests {
    static let collectorHost = "collector.bulwark.test"

    let genuine: TestChain
    let pins: PinSet

    init() throws {
        self.genuine = try TestChain.make(host: Harness.host)
        self.pins = try PinSet([
            Pin.publicKey(of: genuine.intermediate!.certificate), Pin.publicKey(of: genuine.root.certificate),
        ])
    }

    func reporting(collectorPort: Int, collectorRoot: Certificate) throws -> BulwarkClient.PinFailureReporting {
        BulwarkClient.PinFailureReporting(
            reportURIs: [URL(string: "https://\(Self.collectorHost):\(collectorPort)/report")!],
            collectorTrust: try ServerTrustManager(evaluators: [
                Self.collectorHost: .default(roots: .custom([collectorRoot]))
            ])
        )
    }

    /// Defect 6: the collector's client was built from the collector trust alone, so it reached collectors the
    /// client's allowlist does not list, and its refusals and trust decisions reached no event monitor.
    @Test func aCollectorOutsideTheAllowlistIsNotContacted() async throws {
        let collectorChain = try TestChain.make(host: Self.collectorHost)
        let collector = try await Harness.server(collectorChain)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let monitor = RecordingEventMonitor()
        let evaluator = PublicKeysTrustEvaluator(
            pinSet: self.pins,
            roots: .custom([self.genuine.root.certificate, interceptor.forgedRoot!])
        )
        let client = try Harness.client(for: interceptor, evaluator: evaluator) { configuration in
            configuration.pinFailureReporting = try! self.reporting(
                collectorPort: collector.port,
                collectorRoot: collectorChain.root.certificate
            )
            configuration.resolveOverrides[.init(host: Self.collectorHost, port: collector.port)] = "127.0.0.1"
            configuration.allowlist = try! HostAllowlist(patterns: [Harness.host])
            configuration.eventMonitor = monitor
        }
        await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(client, Harness.url(interceptor, "/hello"))
        }
        // The report is attempted in the background after the refusal: wait for the allowlist's refusal of it (up to
        // 30 s, for a loaded machine; the wait ends as soon as the event is there).
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while !monitor.events.contains(where: { $0.kind == .requestRefusedByAllowlist })
            && ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(collector.acceptedConnections == 0)
        let refusal = monitor.events.first { $0.kind == .requestRefusedByAllowlist }
        #expect(refusal?.host == Self.collectorHost)
        await client.shutdown()
        try await collector.shutdown()
        try await interceptor.shutdown()
    }

    /// Defect 6: the de-duplication map was keyed by whole PEM chains and never shrank, so a server presenting a
    /// fresh chain on every handshake grew it without end; and every report started its own detached task, so a
    /// stalled collector let them pile up.
    @Test func theReportersMemoryAndWorkAreBounded() async throws {
        let collectorChain = try TestChain.make(host: Self.collectorHost)
        var stalled = TestHTTPSServer.Configuration(chain: collectorChain)
        stalled.behavior = .stallHandshake
        let collector = try await TestHTTPSServer.start(configuration: stalled)
        let monitor = RecordingEventMonitor()
        var reporting = try self.reporting(
            collectorPort: collector.port,
            collectorRoot: collectorChain.root.certificate
        )
        reporting.timeout = .seconds(5)
        var configuration = BulwarkClient.Configuration(trust: ServerTrustManager(patterns: []))
        configuration.resolveOverrides[.init(host: Self.collectorHost, port: collector.port)] = "127.0.0.1"
        configuration.eventMonitor = monitor
        let reporter = PinFailureReporter(configuration: reporting, client: configuration)
        let submitted = 3 * PinFailureReporter.rememberedReportLimit
        for index in 0..<submitted {
            // A fresh chain each time, as from an attacker: only the leaf's bytes differ.
            let mismatch = PinMismatch(
                host: Harness.host,
                verifiedChain: [],
                expectedPins: self.pins.pins,
                verifiedCertificates: [],
                enforced: true
            )
            var report = PinFailureReport(mismatch: mismatch, port: 443 + index % 1000, pattern: nil)
            report.hostname = "h\(index).bulwark.test"
            reporter.submit(report)
        }
        #expect(reporter.rememberedReportCount <= PinFailureReporter.rememberedReportLimit)
        #expect(reporter.reportsInFlight <= PinFailureReporter.maximumReportsInFlight)
        let dropped = monitor.events.filter { $0.kind == .pinFailureReportDropped }
        #expect(dropped.count >= submitted - PinFailureReporter.maximumReportsInFlight)
        #expect(dropped.first?.host == Harness.host || dropped.first?.host?.hasSuffix(".bulwark.test") == true)
        await reporter.shutdown()
        try await collector.shutdown()
    }

    /// Defect 7: `TLSStream.connect` skipped the allowlist: a host the client may not reach was connected to.
    @Test func aTLSStreamToAHostOutsideTheAllowlistIsRefusedBeforeConnecting() async throws {
        let server = try await Harness.server(self.genuine, alpn: ["http/1.1"])
        let monitor = RecordingEventMonitor()
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [
                (try HostPattern(Harness.host), .default(roots: .custom([self.genuine.root.certificate])))
            ])
        )
        configuration.resolveOverrides[.init(host: Harness.host, port: server.port)] = "127.0.0.1"
        configuration.allowlist = try HostAllowlist(patterns: ["elsewhere.bulwark.test"])
        configuration.eventMonitor = monitor
        await Harness.expectError(.hostNotAllowed) {
            _ = try await TLSStream.connect(host: Harness.host, port: server.port, configuration: configuration)
        }
        #expect(server.acceptedConnections == 0)
        #expect(monitor.events.contains { $0.kind == .requestRefusedByAllowlist && $0.host == Harness.host })
        // Allowed, the same stream connects.
        configuration.allowlist = try HostAllowlist(patterns: [Harness.host])
        let stream = try await TLSStream.connect(host: Harness.host, port: server.port, configuration: configuration)
        try await stream.close()
        try await server.shutdown()
    }

    /// Defect 7: `TLSStream.connect` built its connector without the pin-failure reporter.
    @Test func aTLSStreamReportsPinFailures() async throws {
        let collectorChain = try TestChain.make(host: Self.collectorHost)
        let collector = try await Harness.server(collectorChain)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [
                (
                    try HostPattern(Harness.host),
                    PublicKeysTrustEvaluator(
                        pinSet: self.pins,
                        roots: .custom([self.genuine.root.certificate, interceptor.forgedRoot!])
                    )
                )
            ])
        )
        configuration.resolveOverrides[.init(host: Harness.host, port: interceptor.port)] = "127.0.0.1"
        configuration.resolveOverrides[.init(host: Self.collectorHost, port: collector.port)] = "127.0.0.1"
        configuration.pinFailureReporting = try self.reporting(
            collectorPort: collector.port,
            collectorRoot: collectorChain.root.certificate
        )
        await Harness.expectError(.trustRefused) {
            _ = try await TLSStream.connect(host: Harness.host, port: interceptor.port, configuration: configuration)
        }
        // The report is sent in the background after the refusal: wait for it (up to 30 s, for a loaded machine; the
        // wait ends as soon as it has arrived).
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while collector.requests.isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(collector.requests.count == 1)
        #expect(collector.requests.first?.path == "/report")
        try await collector.shutdown()
        try await interceptor.shutdown()
    }
}
