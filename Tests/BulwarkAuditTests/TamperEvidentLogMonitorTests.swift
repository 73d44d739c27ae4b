import BulwarkPolicy
import Foundation
import Testing

@testable import BulwarkAudit

/// Issue 17: the log monitor writes off the caller's thread, in order, and records what it had to drop.
@Suite("Tamper-evident log monitor")
struct TamperEvidentLogMonitorTests {
    static func path() -> String {
        FileManager.default.temporaryDirectory.appending(path: "bulwark-log-\(UUID()).jsonl").path
    }

    /// The defect: `record` did the `write(2)` on the caller's thread, an event loop in the client. A failed write
    /// is reported to `onError` from the thread that wrote, which shows where the write happened.
    @Test("the log is written on the queue's thread, never on the thread that recorded the event")
    func writesOffTheCallersThread() throws {
        let path = Self.path()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try TamperEvidentLog(path: path)
        let threads = LockedList<String?>()
        let monitor = TamperEvidentLogMonitor(log: log) { _ in threads.append(Thread.current.name) }
        // A closed log makes the write fail, so that `onError` runs on the thread that tried it.
        try log.close()
        monitor.record(TamperEvidentLogTests.event(1))
        monitor.flush()
        #expect(threads.values == ["bulwark.events"])
    }

    @Test("flush makes every recorded event readable; close ends the log with its close checkpoint")
    func flushAndClose() throws {
        let path = Self.path()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let key = try TamperEvidentLog.Key(bytes: Array(repeating: 3, count: 32))
        let monitor = TamperEvidentLogMonitor(log: try TamperEvidentLog(path: path, key: key))
        for index in 1...200 { monitor.record(TamperEvidentLogTests.event(index)) }
        monitor.flush()
        let flushed = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(flushed.records == 200)
        #expect(flushed.ending == .open)
        let messages = try TamperEvidentLogTests.lines(path).compactMap { line -> String? in
            guard let range = line.range(of: #""message":"event number "#) else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        #expect(messages == (1...200).map(String.init), "in the order recorded")
        try monitor.close()
        let closed = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(closed.ending == .closed)
        #expect(closed.records == 200)
        try monitor.close()
    }

    @Test("after close, an event is reported to onError as a closed log, not written")
    func recordAfterClose() throws {
        let path = Self.path()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let errors = LockedList<any Error>()
        let monitor = TamperEvidentLogMonitor(log: try TamperEvidentLog(path: path)) { errors.append($0) }
        monitor.record(TamperEvidentLogTests.event(1))
        try monitor.close()
        monitor.record(TamperEvidentLogTests.event(2))
        let codes = errors.values.compactMap { ($0 as? TamperEvidentLogError)?.code }
        #expect(codes == [.closed])
        #expect(try TamperEvidentLogVerifier.verify(path: path).records == 1)
    }

    /// Events dropped while the writer was stuck leave one `events_dropped` record in the chain, where they were
    /// lost, and the log still verifies.
    @Test("dropped events leave an events_dropped record in the log")
    func dropsAreRecorded() throws {
        let path = Self.path()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try TamperEvidentLog(path: path)
        let writer = GatedAppender(log: log)
        let queued = QueuedEventMonitor(writer, capacity: 2)
        for index in 1...5 { queued.record(TamperEvidentLogTests.event(index)) }
        writer.waitUntilBlocked()
        #expect(queued.droppedCount == 3)
        writer.open(3)
        queued.close()
        try log.close()
        #expect(try TamperEvidentLogVerifier.verify(path: path).records == 3)
        let lines = try TamperEvidentLogTests.lines(path)
        #expect(lines[2].contains(#""details":{"capacity":"2","dropped":"3"}"#), "\(lines[2])")
        #expect(lines[2].contains(#""kind":"events_dropped""#))
    }
}

/// Appends to a log once the test lets it: a writer stuck on a slow disk.
final class GatedAppender: EventMonitor, @unchecked Sendable {
    let log: TamperEvidentLog
    private let gate = DispatchSemaphore(value: 0)
    private let entered = DispatchSemaphore(value: 0)

    init(log: TamperEvidentLog) { self.log = log }

    func record(_ event: SecurityEvent) {
        self.entered.signal()
        self.gate.wait()
        try? self.log.append(event)
    }

    func waitUntilBlocked() { self.entered.wait() }

    func open(_ count: Int) {
        for _ in 0..<count { self.gate.signal() }
    }
}

/// A list that threads append to.
final class LockedList<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Value] = []

    func append(_ value: Value) { self.lock.withLock { self.list.append(value) } }

    var values: [Value] { self.lock.withLock { self.list } }
}
