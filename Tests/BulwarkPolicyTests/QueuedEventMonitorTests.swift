import Foundation
import Testing

@testable import BulwarkPolicy

/// A monitor that blocks in ``record(_:)`` until the test opens its gate: a writer stuck on a slow disk.
final class GatedEventMonitor: EventMonitor, @unchecked Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let entered = DispatchSemaphore(value: 0)
    let recorder = RecordingEventMonitor()

    func record(_ event: SecurityEvent) {
        self.entered.signal()
        self.gate.wait()
        self.recorder.record(event)
    }

    /// Waits until a delivery is blocked in ``record(_:)``.
    func waitUntilBlocked() {
        self.entered.wait()
    }

    /// Lets `count` deliveries through.
    func open(_ count: Int) {
        for _ in 0..<count { self.gate.signal() }
    }
}

/// Issue 17: a monitor that does I/O never runs on the caller's thread; its queue is bounded, ordered, and reports
/// what it drops.
@Suite("Queued event monitor")
struct QueuedEventMonitorTests {
    static func event(_ number: Int) -> SecurityEvent {
        SecurityEvent(kind: .trustEvaluated, host: "h\(number).test", message: "event \(number)")
    }

    @Test("record returns at once while the writer is blocked")
    func recordDoesNotBlock() {
        let gated = GatedEventMonitor()
        let queued = QueuedEventMonitor(gated, capacity: 100)
        queued.record(Self.event(0))
        gated.waitUntilBlocked()
        // The writer is now stuck in its first event: 50 more must be queued without waiting for it.
        let start = ContinuousClock.now
        for number in 1...50 { queued.record(Self.event(number)) }
        let elapsed = ContinuousClock.now - start
        // A record that waited for the writer would never return (the gate opens later, on this thread): the bound
        // only catches one that is slow, and on two loaded cores a descheduled thread can lose more than 1 s.
        #expect(elapsed < .seconds(30), "\(elapsed)")
        #expect(gated.recorder.events.isEmpty, "nothing was delivered while the writer was blocked")
        gated.open(51)
        queued.close()
        #expect(gated.recorder.events.map(\.message) == (0...50).map { "event \($0)" })
        #expect(queued.droppedCount == 0)
    }

    @Test("events reach the monitor in the order they were recorded, from any number of threads each in order")
    func orderPreserved() async {
        let recorder = RecordingEventMonitor()
        let queued = QueuedEventMonitor(recorder, capacity: 100_000)
        for number in 0..<5000 { queued.record(Self.event(number)) }
        queued.flush()
        #expect(recorder.events.map(\.message) == (0..<5000).map { "event \($0)" })

        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for number in 0..<1000 {
                        queued.record(SecurityEvent(kind: .signOut, host: "t\(thread)", message: "\(number)"))
                    }
                }
            }
        }
        queued.close()
        let events = recorder.events.dropFirst(5000)
        #expect(events.count == 4000)
        for thread in 0..<4 {
            let numbers = events.filter { $0.host == "t\(thread)" }.map(\.message)
            #expect(numbers == (0..<1000).map(String.init), "thread \(thread)")
        }
    }

    @Test("a full queue drops new events, counts them and reports them in their place; it never blocks")
    func dropsWhenFull() throws {
        let gated = GatedEventMonitor()
        let queued = QueuedEventMonitor(gated, capacity: 4)
        // Four events fill the queue (the one being delivered counts): the next six are dropped.
        for number in 0..<10 { queued.record(Self.event(number)) }
        gated.waitUntilBlocked()
        #expect(queued.droppedCount == 6)
        gated.open(4)
        let deadline = ContinuousClock.now + .seconds(10)
        while gated.recorder.events.count < 4 && ContinuousClock.now < deadline { usleep(1000) }
        #expect(gated.recorder.events.map(\.message) == (0..<4).map { "event \($0)" })
        // There is room again: the drop report goes before the next event.
        queued.record(Self.event(10))
        gated.open(2)
        queued.close()
        let events = gated.recorder.events
        #expect(events.map(\.kind) == Array(repeating: .trustEvaluated, count: 4) + [.eventsDropped, .trustEvaluated])
        let report = try #require(events.first { $0.kind == .eventsDropped })
        #expect(report.reason == "queue_full")
        #expect(report.details[.dropped]?.number == 6)
        #expect(report.details[.capacity]?.number == 4)
        #expect(events.last?.message == "event 10")
        #expect(queued.droppedCount == 6)
    }

    @Test("flush reports drops that nothing followed; events after close are dropped and counted")
    func flushReportsTrailingDrops() {
        let gated = GatedEventMonitor()
        let queued = QueuedEventMonitor(gated, capacity: 1)
        queued.record(Self.event(0))
        queued.record(Self.event(1))
        gated.waitUntilBlocked()
        gated.open(2)
        queued.flush()
        #expect(gated.recorder.events.map(\.kind) == [.trustEvaluated, .eventsDropped])
        queued.close()
        #expect(queued.isClosed)
        queued.record(Self.event(2))
        #expect(queued.droppedCount == 2)
        #expect(gated.recorder.events.count == 2)
        queued.close()
    }

    @Test("close delivers everything recorded before it, from a slow writer")
    func closeDeliversEverything() {
        final class SlowMonitor: EventMonitor, @unchecked Sendable {
            let recorder = RecordingEventMonitor()
            func record(_ event: SecurityEvent) {
                usleep(200)
                self.recorder.record(event)
            }
        }
        let slow = SlowMonitor()
        let queued = QueuedEventMonitor(slow)
        for number in 0..<500 { queued.record(Self.event(number)) }
        queued.close()
        #expect(slow.recorder.events.count == 500)
        #expect(slow.recorder.events.last?.message == "event 499")
    }

    @Test("flush and close called by the monitor itself, on the queue's thread, do not wait for themselves")
    func reentrantCalls() {
        final class Reentrant: EventMonitor, @unchecked Sendable {
            // Set once, before the first event.
            var queued: QueuedEventMonitor?
            let recorder = RecordingEventMonitor()
            func record(_ event: SecurityEvent) {
                self.queued?.flush()
                if event.message == "event 2" { self.queued?.record(SecurityEvent(kind: .signOut, message: "again")) }
                self.recorder.record(event)
            }
        }
        let base = Reentrant()
        let queued = QueuedEventMonitor(base)
        base.queued = queued
        for number in 0..<3 { queued.record(Self.event(number)) }
        queued.flush()
        queued.close()
        #expect(base.recorder.events.map(\.message) == ["event 0", "event 1", "event 2", "again"])
    }

    @Test("a monitor that is released delivers what it queued")
    func releaseDelivers() async throws {
        let recorder = RecordingEventMonitor()
        do {
            let queued = QueuedEventMonitor(recorder)
            for number in 0..<10 { queued.record(Self.event(number)) }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while recorder.events.count < 10 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(recorder.events.count == 10)
    }
}
