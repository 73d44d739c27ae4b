/// Receives security events.
///
/// ``record(_:)`` has no default implementation on purpose: with one, a monitor whose method name or signature is
/// misspelt would compile and silently drop every event. A monitor that wants nothing writes an empty method.
///
/// Monitors are called synchronously on the thread where the event happened (often an event loop): do not block.
/// Wrap a monitor that does I/O (files, network, a slow log handler) in a ``QueuedEventMonitor``, which delivers on a
/// thread of its own, in order, and drops rather than waits when it falls behind.
public protocol EventMonitor: Sendable {
    /// Called for every event.
    func record(_ event: SecurityEvent)
}

/// Sends every event to each of its monitors, in order.
public struct CompositeEventMonitor: EventMonitor {
    /// The monitors each event goes to, in order.
    public let monitors: [any EventMonitor]

    /// A monitor that gives each event to every one of `monitors`, in order.
    public init(_ monitors: [any EventMonitor]) {
        self.monitors = monitors
    }

    public func record(_ event: SecurityEvent) {
        for monitor in self.monitors {
            monitor.record(event)
        }
    }
}

/// Keeps every event in memory, for tests and for tools that print them afterwards.
public final class RecordingEventMonitor: EventMonitor {
    private let storage = LockedValue<[SecurityEvent]>([])

    /// An empty recording.
    public init() {}

    public func record(_ event: SecurityEvent) {
        self.storage.withLock { $0.append(event) }
    }

    /// The events so far, oldest first.
    public var events: [SecurityEvent] { self.storage.current }
}
