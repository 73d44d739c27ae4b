import BulwarkPolicy
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

extension BulwarkClient {
    /// Where and how pin-validation failures are reported (TrustKit's `reportURIs`).
    public struct PinFailureReporting: Sendable {
        /// Collectors that receive each report as a JSON POST.
        public var reportURIs: [URL]
        /// The trust policy for the collectors. Default validation against the system roots for any host.
        public var collectorTrust: ServerTrustManager
        /// A report identical to one sent within this interval is not sent again (TrustKit: 24 hours).
        public var deduplicationInterval: TimeInterval = 86_400
        /// How long one report may take before it is abandoned.
        public var timeout: TimeAmount = .seconds(10)

        public init(
            reportURIs: [URL],
            collectorTrust: ServerTrustManager = ServerTrustManager(allHostsMustBeEvaluated: false, patterns: [])
        ) {
            self.reportURIs = reportURIs
            self.collectorTrust = collectorTrust
        }
    }
}

/// Sends pin-failure reports in the background: a report never delays or fails the request that caused it.
final class PinFailureReporter: Sendable {
    let configuration: BulwarkClient.PinFailureReporting
    private let client: BulwarkClient
    private let sent = NIOLockedValueBox<[String: Date]>([:])

    init(configuration: BulwarkClient.PinFailureReporting, resolveOverrides: [String: String]) throws {
        self.configuration = configuration
        var clientConfiguration = BulwarkClient.Configuration(trust: configuration.collectorTrust)
        clientConfiguration.resolveOverrides = resolveOverrides
        self.client = try BulwarkClient(configuration: clientConfiguration)
    }

    /// Queues `report` unless an identical one went out within the deduplication interval.
    func submit(_ report: PinFailureReport) {
        let key = report.deduplicationKey
        let now = Date()
        let interval = self.configuration.deduplicationInterval
        let fresh = self.sent.withLockedValue { sent -> Bool in
            if let last = sent[key], now.timeIntervalSince(last) < interval { return false }
            sent[key] = now
            return true
        }
        guard fresh, let body = try? report.json() else { return }
        let client = self.client
        let timeout = self.configuration.timeout
        for uri in self.configuration.reportURIs {
            Task.detached {
                let request = BulwarkRequest(
                    url: uri,
                    method: .POST,
                    headers: ["content-type": "application/json"],
                    body: .bytes(body)
                )
                if let response = try? await client.execute(request, timeout: timeout) {
                    _ = try? await response.body.collect(upTo: 64 * 1024)
                }
            }
        }
    }

    func shutdown() async {
        try? await self.client.shutdown()
    }
}
