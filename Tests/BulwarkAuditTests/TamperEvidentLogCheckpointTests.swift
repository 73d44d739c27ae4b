import BulwarkPolicy
import Crypto
import Foundation
import Testing

@testable import BulwarkAudit

/// Checkpoints and outside anchors: how the log commits to its end (issue 16, defect 2), and what it cannot prove
/// without an anchor kept elsewhere.
@Suite("Tamper-evident log: checkpoints and anchors")
struct TamperEvidentLogCheckpointTests {
    let key = try! TamperEvidentLog.Key(bytes: Array("0123456789abcdef0123456789abcdef".utf8))

    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appending(path: "bulwark-log-\(UUID()).jsonl").path
    }

    /// Writes `sessions` sessions of records to one log, each opened and closed as the CLI does.
    static func writeSessions(
        _ sessions: [Int],
        to path: String,
        key: TamperEvidentLog.Key?,
        checkpoints: TamperEvidentLog.CheckpointPolicy = .default
    ) throws {
        var index = 0
        for records in sessions {
            let log = try TamperEvidentLog(path: path, key: key, checkpoints: checkpoints)
            for _ in 0..<records {
                index += 1
                try log.append(TamperEvidentLogTests.event(index))
            }
            try log.close()
        }
    }

    static func verifyError(
        _ path: String,
        key: TamperEvidentLog.Key?,
        expecting expectation: TamperEvidentLogVerifier.Expectation
    ) -> TamperEvidentLogError? {
        do {
            _ = try TamperEvidentLogVerifier.verify(path: path, key: key, expecting: expectation)
            return nil
        } catch {
            return error as? TamperEvidentLogError
        }
    }

    @Test func closeWritesASignedCheckpointOfCountAndHead() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writeSessions([6], to: path, key: key)
        let lines = try TamperEvidentLogTests.lines(path)
        #expect(lines.count == 7)
        let sixth = try TamperEvidentLogFormatTests.hash(of: lines[5])
        let checkpoint = lines[6]
        let expected = "{\"checkpoint\":\"close\",\"count\":6,\"head\":\"\(sixth)\",\"prev\":\"\(sixth)\",\"seq\":7,"
        #expect(checkpoint.hasPrefix(expected))
        #expect(checkpoint.contains("\"hmac\":\""))
        let summary = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(summary.records == 6)
        #expect(summary.checkpoints == 1)
        #expect(summary.count == 7)
        #expect(summary.head == (try TamperEvidentLogFormatTests.hash(of: checkpoint)))
        #expect(summary.ending == .closed)
        #expect(summary.lastCheckpointLine == 7)
        // Closing again writes nothing more; reopening and closing without records neither.
        try TamperEvidentLog(path: path, key: key).close()
        #expect(try TamperEvidentLogTests.lines(path).count == 7)
    }

    /// `head -n -3` of a closed log: the close checkpoint and two records are gone.
    @Test func droppingTheLastRecordsIsCaughtByAnOutsideAnchor() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writeSessions([8], to: path, key: key)
        let anchor = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(anchor.count == 9)
        try TamperEvidentLogTests.write(Array(try TamperEvidentLogTests.lines(path).dropLast(3)), to: path)

        // Without an anchor the cut cannot be told from a crash: the log verifies, and says it was not closed.
        let cut = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(cut.count == 6)
        #expect(cut.ending == .open)
        #expect(Self.verifyError(path, key: key, expecting: .init(closed: true))?.code == .notClosed)

        let byCount = try #require(Self.verifyError(path, key: key, expecting: .init(count: anchor.count)))
        #expect(byCount.code == .truncated)
        #expect(byCount.detail.contains("6 entries"), "\(byCount)")
        let byHead = try #require(Self.verifyError(path, key: key, expecting: .init(head: anchor.head)))
        #expect(byHead.code == .anchorMismatch)
        let byBoth = Self.verifyError(path, key: key, expecting: .init(count: anchor.count, head: anchor.head))
        #expect(byBoth?.code == .truncated)
    }

    /// Each session of the CLI closes its log. Cutting a whole later session leaves a log that ends with the
    /// earlier session's close checkpoint: only an anchor kept elsewhere shows that something is missing.
    @Test func cuttingBackToAnEarlierCloseCheckpointNeedsAnAnchor() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writeSessions([3, 3], to: path, key: key)
        let anchor = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(anchor.count == 8)
        #expect(anchor.checkpoints == 2)
        try TamperEvidentLogTests.write(Array(try TamperEvidentLogTests.lines(path).prefix(4)), to: path)
        let cut = try TamperEvidentLogVerifier.verify(path: path, key: key, expecting: .init(closed: true))
        #expect(cut.ending == .closed)
        #expect(Self.verifyError(path, key: key, expecting: .init(count: 8, head: anchor.head))?.code == .truncated)
    }

    @Test func anAnchorTakenEarlierStillHoldsForTheGrownLogAndCatchesARewrite() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writeSessions([4], to: path, key: key)
        let anchor = try TamperEvidentLogVerifier.verify(path: path, key: key)
        try Self.writeSessions([3], to: path, key: key)
        let grown = try TamperEvidentLogVerifier.verify(
            path: path,
            key: key,
            expecting: .init(count: anchor.count, head: anchor.head)
        )
        #expect(grown.count == anchor.count + 4)
        let byHead = try TamperEvidentLogVerifier.verify(path: path, key: key, expecting: .init(head: anchor.head))
        #expect(byHead.count == 9)
        let other = String(repeating: "ab", count: 32)
        #expect(Self.verifyError(path, key: key, expecting: .init(count: 5, head: other))?.code == .anchorMismatch)
        #expect(Self.verifyError(path, key: key, expecting: .init(head: other))?.code == .anchorMismatch)
    }

    @Test func checkpointsAreWrittenEveryNRecordsAndChained() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writeSessions([10], to: path, key: key, checkpoints: .init(everyRecords: 4, every: nil))
        let lines = try TamperEvidentLogTests.lines(path)
        #expect(lines.count == 13)
        #expect(lines[4].hasPrefix("{\"checkpoint\":\"interval\",\"count\":4,"))
        #expect(lines[9].hasPrefix("{\"checkpoint\":\"interval\",\"count\":9,"))
        #expect(lines[12].hasPrefix("{\"checkpoint\":\"close\",\"count\":12,"))
        let summary = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(summary.records == 10)
        #expect(summary.checkpoints == 3)
        // Deleting a checkpoint in the middle is a gap like any other.
        var deleted = lines
        deleted.remove(at: 4)
        try TamperEvidentLogTests.write(deleted, to: path)
        #expect(TamperEvidentLogTests.failure(path, key: key)?.code == .missingRecords)
    }

    /// What the interval timer calls, called by hand: a checkpoint after new records, nothing while idle. (The timer
    /// itself is tested in ``TamperEvidentLogTimerTests``, which runs in the timing process.)
    @Test func aCheckpointFollowsNewRecordsAndNothingIsWrittenWhileIdle() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let policy = TamperEvidentLog.CheckpointPolicy(everyRecords: nil, every: nil)
        let log = try TamperEvidentLog(path: path, key: key, checkpoints: policy)
        try log.append(TamperEvidentLogTests.event(1))
        try log.append(TamperEvidentLogTests.event(2))
        try log.checkpoint()
        let lines = try TamperEvidentLogTests.lines(path)
        #expect(lines.count == 3)
        #expect(lines[2].hasPrefix("{\"checkpoint\":\"interval\",\"count\":2,"))
        try log.checkpoint()
        #expect(try TamperEvidentLogTests.lines(path).count == 3, "an idle log wrote a checkpoint with nothing new")
        try log.close()
        #expect(try TamperEvidentLogVerifier.verify(path: path, key: key).ending == .closed)
        #expect(throws: TamperEvidentLogError.self) { try log.append(TamperEvidentLogTests.event(3)) }
    }

    /// A checkpoint whose count or head disagrees with the chain is refused, even when correctly signed.
    @Test(arguments: ["count", "head"])
    func checkpointThatMisstatesTheChainIsRefused(field: String) throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writeSessions([3], to: path, key: key)
        var lines = try TamperEvidentLogTests.lines(path)
        var content = try TamperEvidentLogFormatTests.content(of: lines[3])
        if field == "count" {
            content = content.replacingOccurrences(of: "\"count\":3,", with: "\"count\":2,")
        } else {
            content = content.replacingOccurrences(
                of: "\"head\":\"\(try TamperEvidentLogFormatTests.hash(of: lines[2]))\"",
                with: "\"head\":\"\(try TamperEvidentLogFormatTests.hash(of: lines[1]))\""
            )
        }
        lines[3] = TamperEvidentLogFormatTests.sign(content, key: key)
        try TamperEvidentLogTests.write(lines, to: path)
        let error = try #require(TamperEvidentLogTests.failure(path, key: key))
        #expect(error.code == .badCheckpoint)
        #expect(error.line == 4)
    }

    /// A log written before checkpoints existed (no checkpoint lines) verifies as before, and an anchor still works.
    @Test func logWithoutCheckpointsStillVerifies() throws {
        let path = try TamperEvidentLogTests.makeLog(records: 5, key: key)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let summary = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(summary.records == 5)
        #expect(summary.checkpoints == 0)
        #expect(summary.ending == .open)
        #expect(summary.lastCheckpointLine == nil)
        let head = try TamperEvidentLogFormatTests.hash(of: try TamperEvidentLogTests.lines(path)[4])
        let anchored = try TamperEvidentLogVerifier.verify(path: path, key: key, expecting: .init(count: 5, head: head))
        #expect(anchored.count == 5)
        #expect(Self.verifyError(path, key: key, expecting: .init(count: 6))?.code == .truncated)
        #expect(Self.verifyError(path, key: key, expecting: .init(closed: true))?.code == .notClosed)
    }

    @Test func anEmptyLogHasTheZeroHead() throws {
        let summary = try TamperEvidentLogVerifier.verify([])
        #expect(summary.count == 0)
        #expect(summary.head == String(repeating: "0", count: 64))
        #expect(summary.ending == .empty)
    }
}

/// The log reads its file with read(2), not Foundation's `FileManager.contents(atPath:)`, which leaked a 4 KiB buffer
/// per log opened (found by the event-log fuzz target under LeakSanitizer; CI's fuzz smoke, scripts/fuzz-smoke, built
/// with AddressSanitizer, guards the leak itself).
@Suite("Tamper-evident log: reading the file it appends to")
struct TamperEvidentLogFileReadingTests {
    @Test func aFileIsReadWholeWhateverItsSize() throws {
        let path = TamperEvidentLogCheckpointTests.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        for size in [0, 1, 65_535, 65_536, 200_001] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let descriptor = try TamperEvidentLogFile.openLog(path, appending: false)
            defer { TamperEvidentLogFile.closeDescriptor(descriptor) }
            #expect(try TamperEvidentLogFile.readAll(descriptor, path: path) == bytes, "size \(size)")
        }
    }

    /// The last complete line and the torn one after it, found in one pass whatever the chunk boundaries, and a line
    /// longer than the limit counted but not kept.
    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 200_001])
    func theTailIsFoundWhereverLinesEnd(padding: Int) throws {
        let path = TamperEvidentLogCheckpointTests.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: padding)
        for (contents, last, torn) in [
            (long + Array("\nab\n".utf8), (2, Array("ab".utf8)), nil),
            (long + Array("\nab\ncd".utf8), (2, Array("ab".utf8)), (3, 2)),
            (long + Array("\n".utf8), (1, padding <= 70_000 ? long : nil), nil),
            (long, nil, padding == 0 ? nil : (1, padding)),
        ] as [([UInt8], (Int, [UInt8]?)?, (Int, Int)?)] {
            try Data(contents).write(to: URL(fileURLWithPath: path))
            let descriptor = try TamperEvidentLogFile.openLog(path, appending: false)
            defer { TamperEvidentLogFile.closeDescriptor(descriptor) }
            let tail = try TamperEvidentLogFile.tail(of: descriptor, path: path, limit: 70_000)
            #expect(tail.lastLine?.number == last?.0)
            #expect(tail.lastLine?.bytes == last?.1)
            #expect(tail.tornLine?.number == torn?.0)
            #expect(tail.tornLine?.length == torn?.1)
        }
    }

    /// A FIFO opened for writing without a reader blocked the writer for good, and `/dev/zero` was read until memory
    /// ran out; a directory is no log either. Each is refused before anything is read or written.
    @Test func onlyARegularFileIsALog() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-log-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [fifo, "/dev/zero", directory] {
            let error = try #require(throws: TamperEvidentLogError.self) { try TamperEvidentLog(path: path) }
            #expect(error.code == .unreadable)
            #expect(error.detail.contains(path), "\(error)")
            #expect(throws: TamperEvidentLogError.self) { try TamperEvidentLogVerifier.verify(path: path) }
        }
    }
}
