import BulwarkPolicy
import CoreMetrics
import NIOConcurrencyHelpers

/// Counts security events with swift-metrics: one counter `bulwark_security_events_total` with the dimensions
/// `kind` and `reason` (both bounded labels, never host names or other values).
public final class MetricsEventMonitor: EventMonitor, Sendable {
    /// The counter's label: `bulwark_security_events_total`.
    public static let label = "bulwark_security_events_total"
    private let factory: any MetricsFactory
    private let counters = NIOLockedValueBox<[String: Counter]>([:])

    /// Counts into `factory` (the bootstrapped `MetricsSystem.factory` by default).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// Increments the counter for the event's kind and reason.
    public func record(_ event: SecurityEvent) {
        let reason = event.reason ?? "none"
        let key = event.kind.name + "\u{0}" + reason
        let counter = self.counters.withLockedValue { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: Self.label,
                dimensions: [("kind", event.kind.name), ("reason", reason)],
                factory: self.factory
            )
            counters[key] = counter
            return counter
        }
        counter.increment()
    }
}
