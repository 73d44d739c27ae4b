import Foundation

/// Passes events to another monitor on a background thread of its own, in order, so that a monitor that does I/O
/// (a file, a socket, a slow log handler) never holds up the thread where the event happened, often an event loop.
///
/// ``record(_:)`` only appends the event to a bounded queue and returns; one thread delivers the queue to `base`, one
/// event at a time, in the order they were recorded. When `base` falls behind and ``capacity`` events wait, further
/// events are dropped, not queued and never waited for: they are counted (``droppedCount``), and when there is room
/// again one ``SecurityEvent/Kind/eventsDropped`` event (reason `queue_full`, detail ``SecurityEvent/DetailKey/dropped``
/// with the count) is delivered to `base` in their place, before the next event, so the gap shows where it happened.
///
/// ``flush()`` waits until every event recorded before it was delivered; ``close()`` does that and stops the thread.
/// Events recorded after ``close()`` are not delivered and are counted as dropped.
///
/// ```swift
/// let queued = QueuedEventMonitor(LoggingEventMonitor(logger: logger))
/// configuration.eventMonitor = queued
/// …
/// try await client.shutdown()
/// queued.close()
/// ```
///
/// Why dropping and not blocking: swift-log's `StreamLogHandler` writes with `fwrite` and `fflush` on the caller's
/// thread, so a stalled disk or pipe stalls every logging thread; on an event loop that stalls every connection of
/// the loop. Apple's unified logging (OSLog) never blocks the caller either, and keeps messages in ring buffers whose
/// oldest entries are overwritten. Here the newest events are dropped instead, so that what was delivered is an
/// unbroken prefix in order and the `events_dropped` event marks the one place where events are missing.
public final class QueuedEventMonitor: EventMonitor, @unchecked Sendable {
    // @unchecked Sendable: all mutable state is in `mailbox`, behind its lock.

    /// How many events wait at most by default.
    public static let defaultCapacity = 4096

    /// The monitor that receives the events, on the queue's thread.
    public let base: any EventMonitor
    /// How many events wait at most (events being delivered included); more are dropped.
    public let capacity: Int

    private let mailbox: Mailbox

    /// A monitor that delivers to `base` on a thread of its own, with at most `capacity` events waiting (at least 1).
    public init(_ base: any EventMonitor, capacity: Int = QueuedEventMonitor.defaultCapacity) {
        self.base = base
        self.capacity = max(1, capacity)
        self.mailbox = Mailbox(capacity: self.capacity)
        let mailbox = self.mailbox
        let thread = Thread {
            // Named from inside: on Linux, Foundation does not apply a name set before `start()`.
            Thread.current.name = "bulwark.events"
            mailbox.deliver(to: base)
        }
        mailbox.thread = thread
        thread.start()
    }

    deinit {
        // The thread holds the mailbox, not this object: let it deliver what is queued and end.
        self.mailbox.stop(waiting: false)
    }

    /// Queues `event` for `base` and returns at once; drops it (counted) when the queue is full or closed.
    public func record(_ event: SecurityEvent) {
        self.mailbox.enqueue(event)
    }

    /// Waits until every event recorded before this call was delivered to `base` (the `events_dropped` event for
    /// earlier drops included). Returns at once when called from `base` itself, on the queue's thread.
    public func flush() {
        self.mailbox.flush()
    }

    /// Delivers every event recorded before this call, then stops the thread. Later events are dropped and counted.
    /// Closing again does nothing.
    public func close() {
        self.mailbox.stop(waiting: true)
    }

    /// How many events were dropped since the monitor was made: because the queue was full, or after ``close()``.
    public var droppedCount: Int {
        self.mailbox.droppedCount
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool {
        self.mailbox.isClosed
    }

    /// The queue, its counters and the delivering thread's loop.
    private final class Mailbox: @unchecked Sendable {
        private enum Item {
            case event(SecurityEvent)
            case dropped(Int)
        }

        private let condition = NSCondition()
        private let capacity: Int
        // Guarded by `condition`:
        private var queue: [Item] = []
        private var head = 0
        /// Events accepted and not yet delivered, the one being delivered included.
        private var undelivered = 0
        /// Items queued so far, and delivered so far: `flush` waits for the second to reach the first.
        private var queuedItems = 0
        private var deliveredItems = 0
        /// Events dropped since the last `events_dropped` item was queued.
        private var unreportedDrops = 0
        private var totalDrops = 0
        private var closed = false
        private var finished = false
        /// The delivering thread; set before it starts.
        var thread: Thread?

        init(capacity: Int) {
            self.capacity = capacity
        }

        func enqueue(_ event: SecurityEvent) {
            self.condition.lock()
            defer { self.condition.unlock() }
            guard !self.closed, self.undelivered < self.capacity else {
                self.unreportedDrops += self.closed ? 0 : 1
                self.totalDrops += 1
                return
            }
            self.queueDropReportIfNeeded()
            self.append(.event(event))
            self.undelivered += 1
        }

        /// Queues the `events_dropped` item for the drops since the last one. Called with the lock held.
        private func queueDropReportIfNeeded() {
            if self.unreportedDrops > 0 {
                self.append(.dropped(self.unreportedDrops))
                self.unreportedDrops = 0
            }
        }

        private func append(_ item: Item) {
            self.queue.append(item)
            self.queuedItems += 1
            self.condition.broadcast()
        }

        func flush() {
            guard Thread.current !== self.thread else { return }
            self.condition.lock()
            defer { self.condition.unlock() }
            if !self.closed { self.queueDropReportIfNeeded() }
            let target = self.queuedItems
            while self.deliveredItems < target && !self.finished {
                self.condition.wait()
            }
        }

        func stop(waiting: Bool) {
            self.condition.lock()
            defer { self.condition.unlock() }
            if !self.closed {
                self.queueDropReportIfNeeded()
                self.closed = true
                self.condition.broadcast()
            }
            guard waiting, Thread.current !== self.thread else { return }
            while !self.finished {
                self.condition.wait()
            }
        }

        var droppedCount: Int {
            self.condition.lock()
            defer { self.condition.unlock() }
            return self.totalDrops
        }

        var isClosed: Bool {
            self.condition.lock()
            defer { self.condition.unlock() }
            return self.closed
        }

        /// The thread's loop: delivers items in order until closed and empty.
        func deliver(to base: any EventMonitor) {
            let capacity = self.capacity
            while let item = self.next() {
                switch item {
                case .event(let event):
                    base.record(event)
                case .dropped(let count):
                    base.record(
                        SecurityEvent(
                            kind: .eventsDropped,
                            reason: "queue_full",
                            message:
                                "\(count) security events were dropped: \(capacity) were waiting for a slow monitor",
                            details: [.dropped: .number(count), .capacity: .number(capacity)]
                        )
                    )
                }
                self.condition.lock()
                self.deliveredItems += 1
                if case .event = item { self.undelivered -= 1 }
                self.condition.broadcast()
                self.condition.unlock()
            }
        }

        /// The next item, waiting for one; nil when closed and everything was delivered (the thread then ends).
        private func next() -> Item? {
            self.condition.lock()
            defer { self.condition.unlock() }
            while self.head == self.queue.count {
                if self.closed {
                    self.finished = true
                    self.queue = []
                    self.head = 0
                    self.condition.broadcast()
                    return nil
                }
                self.condition.wait()
            }
            let item = self.queue[self.head]
            self.head += 1
            if self.head == self.queue.count {
                self.queue.removeAll(keepingCapacity: true)
                self.head = 0
            } else if self.head >= 1024 && self.head * 2 >= self.queue.count {
                self.queue.removeFirst(self.head)
                self.head = 0
            }
            return item
        }
    }
}
