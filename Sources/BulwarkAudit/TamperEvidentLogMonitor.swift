import BulwarkPolicy
import Foundation

/// Appends every event to a ``TamperEvidentLog``, off the caller's thread.
///
/// ``record(_:)`` queues the event and returns at once: a ``QueuedEventMonitor`` writes it on a thread of its own,
/// in order, so that the `write(2)` of each record never runs on an event loop. When the writer falls behind by
/// `capacity` events, further events are dropped rather than waited for, and an `events_dropped` record with their
/// count is written in their place (see ``QueuedEventMonitor``). A failed write is reported to `onError` (standard
/// error by default), never thrown into the code that caused the event.
///
/// Call ``close()`` when the client is shut down: it writes what is queued, then closes the log with its close
/// checkpoint. ``flush()`` waits for what is queued without closing, for a reader of the file.
public struct TamperEvidentLogMonitor: EventMonitor {
    /// The log the events are appended to.
    public let log: TamperEvidentLog
    private let queue: QueuedEventMonitor
    private let onError: @Sendable (any Error) -> Void

    /// A monitor that appends to `log` through a queue of at most `capacity` events.
    public init(
        log: TamperEvidentLog,
        capacity: Int = QueuedEventMonitor.defaultCapacity,
        onError: @escaping @Sendable (any Error) -> Void = { error in
            FileHandle.standardError.write(Data("bulwark: event log: \(error)\n".utf8))
        }
    ) {
        self.log = log
        self.onError = onError
        self.queue = QueuedEventMonitor(Writer(log: log, onError: onError), capacity: capacity)
    }

    /// Queues `event` for the log and returns at once. After ``close()``, reports the closed log to `onError`.
    public func record(_ event: SecurityEvent) {
        if self.queue.isClosed {
            self.onError(TamperEvidentLogError(.closed, line: nil, detail: "\(self.log.path) was closed"))
            return
        }
        self.queue.record(event)
    }

    /// Waits until every event recorded before this call is in the file.
    public func flush() {
        self.queue.flush()
    }

    /// Writes every event recorded before this call, stops the queue's thread and closes the log (writing its close
    /// checkpoint). Closing again does nothing.
    ///
    /// - Throws: ``TamperEvidentLogError`` when the close checkpoint cannot be written.
    public func close() throws {
        self.queue.close()
        try self.log.close()
    }

    /// Events dropped because the queue was full; each run of them is recorded in the log as one `events_dropped`
    /// record.
    public var droppedCount: Int {
        self.queue.droppedCount
    }

    /// Appends each event on the queue's thread.
    private struct Writer: EventMonitor {
        let log: TamperEvidentLog
        let onError: @Sendable (any Error) -> Void

        func record(_ event: SecurityEvent) {
            do {
                try self.log.append(event)
            } catch {
                self.onError(error)
            }
        }
    }
}
