import BulwarkPolicy
import Foundation
import Testing

@testable import BulwarkAudit

@Suite("Tamper-evident event log")
struct TamperEvidentLogTests {
    static func event(_ index: Int) -> SecurityEvent {
        SecurityEvent(
            kind: index.isMultiple(of: 2) ? .trustEvaluated : .redirectRefused,
            host: "h\(index).bulwark.test",
            requestID: UInt64(index),
            reason: index.isMultiple(of: 2) ? nil : "scheme_downgrade",
            message: "event number \(index)",
            details: [.from: .text("https://a.test/\(index)"), .to: "http://b.test/"]
        )
    }

    static func makeLog(records: Int, key: TamperEvidentLog.Key? = nil) throws -> String {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-log-\(UUID()).jsonl").path
        let log = try TamperEvidentLog(path: path, key: key)
        for index in 1...records { try log.append(Self.event(index)) }
        return path
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    static func write(_ lines: [String], to path: String, trailingNewline: Bool = true) throws {
        try (lines.joined(separator: "\n") + (trailingNewline ? "\n" : "")).write(
            toFile: path,
            atomically: true,
            encoding: .utf8
        )
    }

    static func failure(_ path: String, key: TamperEvidentLog.Key? = nil) -> TamperEvidentLogError? {
        do {
            _ = try TamperEvidentLogVerifier.verify(path: path, key: key)
            return nil
        } catch let error as TamperEvidentLogError {
            return error
        } catch {
            return nil
        }
    }

    let key = try! TamperEvidentLog.Key(bytes: Array("0123456789abcdef0123456789abcdef".utf8))

    @Test func intactLogVerifies() throws {
        let path = try Self.makeLog(records: 20, key: key)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let keyed = try TamperEvidentLogVerifier.verify(path: path, key: key)
        #expect(keyed.records == 20)
        #expect(keyed.authenticated)
        #expect(keyed.count == 20)
        let unkeyed = try TamperEvidentLogVerifier.verify(path: path)
        #expect(unkeyed.records == 20)
        #expect(!unkeyed.authenticated)
        #expect(unkeyed.head == keyed.head)
        let first = try Self.lines(path)[0]
        #expect(first.contains("\"prev\":\"\(String(repeating: "0", count: 64))\""))
        #expect(first.contains("\"hmac\":\""))
    }

    @Test(arguments: [1, 7, 20])
    func editedByteIsFoundAtItsLine(line: Int) throws {
        let path = try Self.makeLog(records: 20)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var lines = try Self.lines(path)
        lines[line - 1] = lines[line - 1].replacingOccurrences(of: "event number", with: "event numbeR")
        try Self.write(lines, to: path)
        let error = try #require(Self.failure(path))
        #expect(error.code == .editedRecord)
        #expect(error.line == line)
    }

    @Test func deletedLineIsFoundWhereTheGapIs() throws {
        let path = try Self.makeLog(records: 20)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var lines = try Self.lines(path)
        lines.remove(at: 9)
        try Self.write(lines, to: path)
        let error = try #require(Self.failure(path))
        #expect(error.code == .missingRecords)
        #expect(error.line == 10)
    }

    @Test func swappedLinesAreFoundAsReordered() throws {
        let path = try Self.makeLog(records: 20)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var lines = try Self.lines(path)
        lines.swapAt(4, 5)
        try Self.write(lines, to: path)
        let error = try #require(Self.failure(path))
        #expect(error.code == .reorderedRecords)
        #expect(error.line == 5)
    }

    @Test func truncationMidLineIsATornLastLine() throws {
        let path = try Self.makeLog(records: 20)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var lines = try Self.lines(path)
        lines[19] = String(lines[19].prefix(40))
        try Self.write(lines, to: path, trailingNewline: false)
        let error = try #require(Self.failure(path))
        #expect(error.code == .tornLastLine)
        #expect(error.line == 20)
    }

    @Test func wrongKeyIsFoundAtTheFirstRecord() throws {
        let path = try Self.makeLog(records: 5, key: key)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let wrong = try TamperEvidentLog.Key(bytes: Array("another key, also 32 bytes long!".utf8))
        let error = try #require(Self.failure(path, key: wrong))
        #expect(error.code == .badHMAC)
        #expect(error.line == 1)
        let unsigned = try Self.makeLog(records: 2)
        defer { try? FileManager.default.removeItem(atPath: unsigned) }
        #expect(Self.failure(unsigned, key: key)?.code == .missingHMAC)
    }

    @Test func consistentRewriteWithoutTheKeyIsCaughtByTheHMAC() throws {
        let path = try Self.makeLog(records: 3, key: key)
        defer { try? FileManager.default.removeItem(atPath: path) }
        // An attacker without the key rewrites the whole log consistently (valid hashes and chain, no HMAC).
        let forgedPath = try Self.makeLog(records: 3)
        defer { try? FileManager.default.removeItem(atPath: forgedPath) }
        #expect(try TamperEvidentLogVerifier.verify(path: forgedPath).records == 3)
        #expect(Self.failure(forgedPath, key: key)?.code == .missingHMAC)
    }

    @Test func reopeningAfterACrashChainsOnAndTheTornLineIsReported() throws {
        let path = try Self.makeLog(records: 3)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var lines = try Self.lines(path)
        lines.append("{\"seq\":4,\"time\":")  // a crash in the middle of writing record 4
        try Self.write(lines, to: path, trailingNewline: false)
        let reopened = try TamperEvidentLog(path: path)
        try reopened.append(Self.event(4))
        let error = try #require(Self.failure(path))
        #expect(error.code == .malformed)
        #expect(error.line == 4)
        var repaired = try Self.lines(path)
        repaired.remove(at: 3)
        try Self.write(repaired, to: path)
        #expect(try TamperEvidentLogVerifier.verify(path: path).records == 4)
    }

    @Test func eightConcurrentWritersProduceALogThatVerifies() async throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-log-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try TamperEvidentLog(path: path, key: key)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for index in 0..<10_000 {
                        try log.append(Self.event(writer * 10_000 + index))
                        // Yield now and then: eight never-suspending tasks would starve the cooperative pool that
                        // the other suites of this test process run on.
                        if index.isMultiple(of: 50) { await Task.yield() }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try TamperEvidentLogVerifier.verify(path: path, key: key).records == 80_000)
    }

    @Test func keyNeverPrintsItsBytes() {
        #expect("\(key)" == "<redacted>")
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.contains("0123456789abcdef"))
    }

    @Test func shortKeysAreRefused() {
        #expect(throws: TamperEvidentLogError.self) { try TamperEvidentLog.Key(bytes: Array("short".utf8)) }
    }
}
