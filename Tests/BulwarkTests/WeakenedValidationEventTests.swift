import Bulwark
import BulwarkTestSupport
import Foundation
import Testing

/// Options that weaken what a handshake proves (`validateHost: false`, `performDefaultValidation: false`) are
/// reported as `insecure_option_used` on every handshake they decide, as `.disabled` already was.
@Suite("Weakened validation is reported on every handshake")
struct WeakenedValidationEventTests {
    func insecureEvents(
        evaluator: any ServerTrustEvaluating,
        chain: TestChain,
        requests: Int = 2
    ) async throws
        -> [SecurityEvent]
    {
        let server = try await Harness.server(chain)
        let monitor = RecordingEventMonitor()
        let client = try Harness.client(for: server, evaluator: evaluator) { configuration in
            configuration.eventMonitor = monitor
            configuration.pool.maximumConnectionsPerHost = 1
        }
        for _ in 0..<requests {
            // A new connection each time: the server closes it.
            let (response, _) = try await Harness.get(client, Harness.url(server, "/close"))
            #expect(response.status == .ok)
        }
        await client.shutdown()
        try await server.shutdown()
        return monitor.events.filter { $0.kind == .insecureOptionUsed }
    }

    @Test func skippingTheHostNameCheckIsReportedEachTime() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let events = try await self.insecureEvents(
            evaluator: DefaultTrustEvaluator(roots: .custom([chain.root.certificate]), validateHost: false),
            chain: chain
        )
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.reason == "host_not_validated" && $0.host == Harness.host })
    }

    @Test func skippingDefaultValidationIsReportedEachTime() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let pins = try PinSet([
            Pin.publicKey(of: chain.intermediate!.certificate), Pin.publicKey(of: chain.root.certificate),
        ])
        let events = try await self.insecureEvents(
            evaluator: .publicKeys(pins, roots: .custom([]), performDefaultValidation: false),
            chain: chain
        )
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.reason == "default_validation_skipped" })
        let certificateEvents = try await self.insecureEvents(
            evaluator: .pinnedCertificates(
                [chain.intermediate!.certificate],
                roots: .custom([]),
                performDefaultValidation: false
            ),
            chain: chain
        )
        #expect(certificateEvents.map(\.reason) == ["default_validation_skipped", "default_validation_skipped"])
    }

    @Test func theSecureDefaultsReportNothing() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let events = try await self.insecureEvents(
            evaluator: .default(roots: .custom([chain.root.certificate])),
            chain: chain
        )
        #expect(events.isEmpty)
    }
}
