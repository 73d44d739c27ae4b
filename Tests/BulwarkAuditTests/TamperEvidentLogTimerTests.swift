import BulwarkPolicy
import BulwarkTestHelpers
import Crypto
import Foundation
import Testing

@testable import BulwarkAudit

/// The interval checkpoint's timer (a Dispatch timer). It waits on real time, so scripts/test runs it in the timing
/// process, apart from CPU-heavy suites that can hold Dispatch's threads for many seconds.
@Suite("Tamper-evident log: the interval checkpoint timer", .tags(.timing))
struct TamperEvidentLogTimerTests {
    let key = try! TamperEvidentLog.Key(bytes: Array("0123456789abcdef0123456789abcdef".utf8))

    @Test func aTimedCheckpointFollowsNewRecordsAndNothingIsWrittenWhileIdle() async throws {
        let path = TamperEvidentLogCheckpointTests.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let policy = TamperEvidentLog.CheckpointPolicy(everyRecords: nil, every: .milliseconds(100))
        let log = try TamperEvidentLog(path: path, key: key, checkpoints: policy)
        try log.append(TamperEvidentLogTests.event(1))
        try log.append(TamperEvidentLogTests.event(2))
        // Wait for a checkpoint after both records (under load the timer may also fire between the two appends).
        let deadline = ContinuousClock.now + .seconds(20)
        var lines = try TamperEvidentLogTests.lines(path)
        while ContinuousClock.now < deadline {
            lines = try TamperEvidentLogTests.lines(path)
            if lines.count >= 3, lines.last?.hasPrefix("{\"checkpoint\"") == true { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(lines.filter { $0.hasPrefix("{\"details\"") }.count == 2)
        #expect(lines.last?.hasPrefix("{\"checkpoint\":\"interval\",\"count\":\(lines.count - 1),") == true)
        let written = lines.count
        try await Task.sleep(for: .milliseconds(500))
        let idle = try TamperEvidentLogTests.lines(path).count
        #expect(idle == written, "an idle log wrote a checkpoint with nothing new")
        try log.close()
        #expect(try TamperEvidentLogVerifier.verify(path: path, key: key).ending == .closed)
        #expect(throws: TamperEvidentLogError.self) { try log.append(TamperEvidentLogTests.event(3)) }
    }
}
