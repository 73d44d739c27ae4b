import Bulwark
import BulwarkAudit
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import Testing

@Suite("Security events from real client runs")
struct EventMonitorTests {
    let chain: TestChain
    let pins: PinSet

    init() throws {
        self.chain = try TestChain.make(host: Harness.host)
        self.pins = try PinSet([
            Pin.publicKey(of: chain.intermediate!.certificate), Pin.publicKey(of: chain.root.certificate),
        ])
    }

    /// One trusted request and one refused request (an interceptor whose CA is trusted but whose keys are not
    /// pinned), with `monitor` installed.
    func run(monitor: any EventMonitor, evaluator: (TrustRoots) -> any ServerTrustEvaluating) async throws {
        let server = try await Harness.server(chain)
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let roots = TrustRoots.custom([chain.root.certificate, interceptor.forgedRoot!])
        let client = try Harness.client(for: server, evaluator: evaluator(roots)) { configuration in
            configuration.eventMonitor = monitor
            configuration.resolveOverrides[.init(host: Harness.host, port: interceptor.port)] = "127.0.0.1"
        }
        _ = try await Harness.get(client, Harness.url(server, "/hello"))
        do {
            _ = try await Harness.get(client, Harness.url(interceptor, "/hello"))
        } catch let error as BulwarkError where error.code == .trustRefused {}
        await client.shutdown()
        try await server.shutdown()
        try await interceptor.shutdown()
    }

    @Test func swiftLogMonitorWritesStructuredMetadata() async throws {
        let handler = InMemoryLogHandler()
        let logger = Logger(label: "test") { _ in handler }
        try await run(monitor: LoggingEventMonitor(logger: logger)) { .publicKeys(pins, roots: $0) }
        let entries = handler.entries
        #expect(entries.map(\.level) == [.info, .info, .warning])
        #expect(
            entries.map { $0.metadata["bulwark.event"]?.description } == [
                "trust_evaluated", "pin_matched", "pin_failed",
            ]
        )
        #expect(entries.last?.metadata["bulwark.host"]?.description == Harness.host)
        #expect(entries.last?.metadata["bulwark.reason"]?.description == "pin_mismatch")
        #expect(entries.first?.metadata["bulwark.detail.verified"]?.description.contains("CN=\(Harness.host)") == true)
    }

    @Test func metricsMonitorCountsPerKindAndReason() async throws {
        let metrics = TestMetrics()
        try await run(monitor: MetricsEventMonitor(factory: metrics)) { .publicKeys(pins, roots: $0) }
        let evaluated = try metrics.expectCounter(
            MetricsEventMonitor.label,
            [("kind", "trust_evaluated"), ("reason", "none")]
        )
        let failed = try metrics.expectCounter(
            MetricsEventMonitor.label,
            [("kind", "pin_failed"), ("reason", "pin_mismatch")]
        )
        let matched = try metrics.expectCounter(
            MetricsEventMonitor.label,
            [("kind", "pin_matched"), ("reason", "pin_matched")]
        )
        #expect(evaluated.totalValue == 1)
        #expect(matched.totalValue == 1)
        #expect(failed.totalValue == 1)
        #expect(metrics.counters.count == 3)
    }

    @Test func reportOnlyViolationProceedsAndIsReported() async throws {
        let monitor = RecordingEventMonitor()
        let reportOnly = try PinSet(pins.pins, enforcement: .reportOnly)
        let server = try await TestHTTPSServer.startInterceptor(forging: Harness.host)
        let client = try Harness.client(
            for: server,
            evaluator: .publicKeys(reportOnly, roots: .custom([chain.root.certificate, server.forgedRoot!]))
        ) { $0.eventMonitor = monitor }
        let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        #expect(monitor.events.map(\.kind) == [.trustEvaluated, .reportOnlyViolation])
        #expect(monitor.events.last?.message.contains("Report-only pin violation") == true)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test func chainDumpMonitorPrintsBothChains() async throws {
        let dumps = RecordingEventMonitor()
        let collected = SharedBox<[String]>([])
        let dump = ChainDumpMonitor { collected.append($0) }
        try await run(monitor: CompositeEventMonitor([dump, dumps])) { .publicKeys(pins, roots: $0) }
        let texts = collected.value
        #expect(texts.count == 2)
        #expect(texts[0].contains("presented chain:"))
        #expect(texts[0].contains("verified chain:"))
        #expect(texts[0].contains("\(Pin.publicKey(of: chain.leaf.certificate)): CN=\(Harness.host)"))
        #expect(texts[1].contains("(pin_failed:pin_mismatch)"))
        #expect(dumps.events.count == 3)
    }

    @Test func tamperEvidentLogRecordsClientEvents() async throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-events-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let key = try TamperEvidentLog.Key(bytes: Array(repeating: 7, count: 32))
        let monitor = TamperEvidentLogMonitor(log: try TamperEvidentLog(path: path, key: key))
        try await run(monitor: monitor) { .publicKeys(pins, roots: $0) }
        monitor.flush()
        #expect(try TamperEvidentLogVerifier.verify(path: path, key: key).records == 3)
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\"kind\":\"pin_failed\""))
    }
}
