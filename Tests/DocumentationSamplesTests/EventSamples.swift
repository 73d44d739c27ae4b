import Bulwark
import BulwarkAudit
import Foundation
import Logging

/// The Swift code blocks of the "Security events and the tamper-evident log" article
/// (Bulwark.docc/SecurityEvents.md).
enum EventSamples {
    // docs:begin events-monitor
    /// Counts refused handshakes per host. `record` is called on the client's event loops: it must not block.
    final class RefusalCounter: EventMonitor, @unchecked Sendable {
        static let refusals: Set<SecurityEvent.Kind> = [.trustRefused, .pinFailed, .certificateRevoked]
        private let lock = NSLock()
        private var counts: [String: Int] = [:]

        func record(_ event: SecurityEvent) {
            guard Self.refusals.contains(event.kind), let host = event.host else { return }
            self.lock.withLock { self.counts[host, default: 0] += 1 }
        }

        var snapshot: [String: Int] { self.lock.withLock { self.counts } }
    }
    // docs:end

    /// Installing monitors. Compile-only.
    static func install(configuration: inout BulwarkClient.Configuration, counter: RefusalCounter) {
        // docs:begin events-install
        configuration.eventMonitor = CompositeEventMonitor([
            LoggingEventMonitor(logger: Logger(label: "security")),  // refusals at `warning`
            MetricsEventMonitor(),  // bulwark_security_events_total{kind, reason}
            counter,
        ])
        // docs:end
    }

    /// Reading an event's details. Runs in `SampleRunTests` on the events of a local request.
    static func details(monitor: RecordingEventMonitor) -> [String] {
        var lines: [String] = []
        // docs:begin events-details
        for event in monitor.events {
            print(event.shortDescription)  // `trust_evaluated`, `pin_failed:pin_mismatch`: bounded, value-free
            print(event.description)  // one sentence, URLs without query, fragment or user information
            if let verified = event.details[.verified]?.list {
                print("verified chain:", verified)  // `sha256/…: subject` lines, leaf first
            }
            if event.details[.cached]?.flag == true {
                print("decided from the trust-decision cache")
            }
        }
        // docs:end
        for event in monitor.events { lines.append(event.shortDescription) }
        return lines
    }

    /// Queued and path-redacting monitors. Compile-only.
    static func queued(configuration: inout BulwarkClient.Configuration, collector: some EventMonitor) {
        // docs:begin events-queued
        // `collector` sends events to another machine: queue it (one background thread, in order, never blocking
        // the event loop) and take URL paths out of what leaves the process.
        configuration.eventMonitor = QueuedEventMonitor(PathRedactingEventMonitor(collector), capacity: 10_000)
        // docs:end
    }

    /// Writing and verifying a keyed tamper-evident log. Runs in `SampleRunTests` in a temporary directory.
    static func tamperEvidentLog(
        configuration: inout BulwarkClient.Configuration,
        path: String,
        keyPath: String
    ) throws -> TamperEvidentLogVerifier.Summary {
        // docs:begin events-log-write
        let key = try TamperEvidentLog.Key(contentsOfFile: keyPath)  // at least 16 bytes, kept in locked memory
        let log = try TamperEvidentLog(path: path, key: key)
        let monitor = TamperEvidentLogMonitor(log: log)  // appends off the caller's thread
        configuration.eventMonitor = monitor
        // … requests …
        try monitor.close()  // delivers the queue, then writes the close checkpoint
        // docs:end
        // docs:begin events-log-verify
        let summary = try TamperEvidentLogVerifier.verify(
            path: path,
            key: try TamperEvidentLog.Key(contentsOfFile: keyPath),
            expecting: .init(closed: true)
        )
        print(summary.records, "records; keep elsewhere:", summary.count, summary.head)
        // docs:end
        return summary
    }

    /// Checking a log against a head kept elsewhere. Compile-only.
    static func anchored(path: String, key: TamperEvidentLog.Key, keptCount: Int, keptHead: String) throws {
        // docs:begin events-log-anchor
        do {
            _ = try TamperEvidentLogVerifier.verify(
                path: path,
                key: key,
                expecting: .init(count: keptCount, head: keptHead)
            )
        } catch let error as TamperEvidentLogError {
            print(error)  // names the first broken line: edited, removed, reordered, `truncated`, `anchor_mismatch`
        }
        // docs:end
    }
}
