import BulwarkPolicy
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

extension BulwarkClient {
    /// Where and how pin-validation failures are reported (TrustKit's `reportURIs`).
    ///
    /// Reports go out under the client's own policy: a collector outside ``Configuration/allowlist`` is never
    /// contacted (a `request_refused_by_allowlist` event says so), the collectors' trust decisions reach
    /// ``Configuration/eventMonitor``, and TLS versions and timeouts are the client's. What a server can make the
    /// reporter do is bounded: at most four reports are on their way at once (a further one is dropped with a
    /// `pin_failure_report_dropped` event), and de-duplication remembers at most 256 reports by a SHA-256 digest.
    public struct PinFailureReporting: Sendable {
        /// Collectors that receive each report as a JSON POST.
        public var reportURIs: [URL]
        /// The trust policy for the collectors. Default validation against the system roots for any host.
        public var collectorTrust: ServerTrustManager
        /// A report identical to one sent within this interval is not sent again (TrustKit: 24 hours).
        public var deduplicationInterval: TimeInterval = 86_400
        /// How long one report may take before it is abandoned.
        public var timeout: TimeAmount = .seconds(10)

        /// Reports to `reportURIs`, reaching them under `collectorTrust` (default validation against the system roots
        /// for any host, unless you give another policy).
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
///
/// A server chooses what it presents, so everything a report costs is bounded: reports in flight
/// (``maximumReportsInFlight``; a further one is dropped with an event, and not remembered, so the same failure
/// can be reported once there is room) and the de-duplication memory (``rememberedReportLimit`` fixed-size digests,
/// the least recently sent forgotten first).
final class PinFailureReporter: Sendable {
    /// The most distinct reports remembered for de-duplication.
    static let rememberedReportLimit = 256
    /// The most reports being sent at once.
    static let maximumReportsInFlight = 4

    let configuration: BulwarkClient.PinFailureReporting
    private let client: BulwarkClient
    private let monitor: any EventMonitor
    private let state: NIOLockedValueBox<State>

    private struct State {
        /// When each remembered report (by digest) was sent.
        var sent = LeastRecentlyUsed<[UInt8], Date>(capacity: PinFailureReporter.rememberedReportLimit)
        /// The reports being sent, by number: a slot is taken when a report is admitted (nil until its task is
        /// made) and given back by the task when it ends.
        var inFlight: [UInt64: Task<Void, Never>?] = [:]
        var nextNumber: UInt64 = 0
    }

    /// A reporter whose collectors are reached under `client`'s policy: its allowlist, event monitor, TLS options,
    /// timeouts, address overrides and proxy choice (``BulwarkClient/Configuration/proxy``, its overrides and
    /// `NO_PROXY`, as for any request of the client: a report sent around the proxy would leak the collector's name
    /// to the local resolver, or be lost where only the proxy reaches out), with
    /// ``BulwarkClient/PinFailureReporting/collectorTrust`` as the trust.
    init(configuration: BulwarkClient.PinFailureReporting, client: BulwarkClient.Configuration) {
        self.configuration = configuration
        self.monitor = client.eventMonitor
        self.state = NIOLockedValueBox(State())
        var collectors = BulwarkClient.Configuration(trust: configuration.collectorTrust)
        collectors.allowlist = client.allowlist
        collectors.eventMonitor = client.eventMonitor
        collectors.tls = client.tls
        collectors.timeouts = client.timeouts
        collectors.resolveOverrides = client.resolveOverrides
        collectors.proxy = client.proxy
        collectors.proxyOverrides = client.proxyOverrides
        self.client = BulwarkClient(configuration: collectors)
    }

    /// The number of reports remembered for de-duplication.
    var rememberedReportCount: Int { self.state.withLockedValue { $0.sent.count } }
    /// The number of reports being sent.
    var reportsInFlight: Int { self.state.withLockedValue { $0.inFlight.count } }

    /// Sends `report` to every collector in the background, unless an identical one went out within the
    /// de-duplication interval, or too many reports are already on their way (then it is dropped with an event).
    func submit(_ report: PinFailureReport) {
        guard !self.configuration.reportURIs.isEmpty, let body = try? report.json() else { return }
        let digest = report.deduplicationDigest
        let now = Date()
        let interval = self.configuration.deduplicationInterval
        enum Admission {
            case duplicate, dropped
            case admitted(UInt64)
        }
        let admission = self.state.withLockedValue { state -> Admission in
            if let last = state.sent.value(forKey: digest), now >= last, now.timeIntervalSince(last) < interval {
                return .duplicate
            }
            guard state.inFlight.count < Self.maximumReportsInFlight else { return .dropped }
            state.sent.insert(now, forKey: digest) { now < $0 || now.timeIntervalSince($0) >= interval }
            state.nextNumber += 1
            state.inFlight.updateValue(nil, forKey: state.nextNumber)
            return .admitted(state.nextNumber)
        }
        switch admission {
        case .duplicate:
            return
        case .dropped:
            self.monitor.record(
                SecurityEvent(
                    kind: .pinFailureReportDropped,
                    host: report.hostname,
                    reason: "too_many_in_flight",
                    message: "pin-failure report for \(report.hostname):\(report.port) not sent: "
                        + "\(Self.maximumReportsInFlight) reports are already on their way to the collectors"
                )
            )
        case .admitted(let number):
            let task = Task.detached { [client, configuration, state] in
                await withTaskGroup(of: Void.self) { group in
                    for uri in configuration.reportURIs {
                        group.addTask {
                            let request = BulwarkRequest(
                                url: uri,
                                method: .POST,
                                headers: ["content-type": "application/json"],
                                body: .bytes(body)
                            )
                            if let response = try? await client.execute(request, timeout: configuration.timeout) {
                                _ = try? await response.body.collect(upTo: 64 * 1024)
                            }
                        }
                    }
                }
                _ = state.withLockedValue { $0.inFlight.removeValue(forKey: number) }
            }
            self.state.withLockedValue { state in
                // Unless the task has already ended and given its slot back.
                if state.inFlight.keys.contains(number) { state.inFlight.updateValue(task, forKey: number) }
            }
        }
    }

    /// Waits for the reports on their way (each bounded by its timeout), then closes the collectors' connections.
    func finishAndShutdown() async {
        let tasks = self.state.withLockedValue { $0.inFlight.values.compactMap { $0 } }
        for task in tasks { await task.value }
        await self.shutdown()
    }

    /// Closes the collectors' connections; reports still on their way fail quietly.
    func shutdown() async {
        await self.client.shutdown()
    }
}
