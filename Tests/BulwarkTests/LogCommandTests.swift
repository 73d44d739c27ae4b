import Bulwark
import Foundation
import Testing

/// `bulwark log verify` against logs that `bulwark demo --event-log` wrote. These tests spawn the `bulwark` binary,
/// so they live in the `CLITests` suite, which `scripts/test` runs in its process for external programs.
extension CLITests {
    static func logLines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    static func writeLog(_ lines: [String], to path: String) throws {
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func hashField(of line: String) throws -> String {
        let marker = try #require(line.range(of: ",\"hash\":\"", options: .backwards))
        return String(line[marker.upperBound...].prefix(64))
    }

    /// The review's forgery: record 2 deleted, `"seq"` and `"prev"` appended after the trailer of every later line.
    @Test func logVerifyRefusesADeletionHiddenByKeysAfterTheTrailer() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-log-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appending(path: "events.jsonl").path
        let keyPath = directory.appending(path: "key").path
        try Data("a key of at least sixteen bytes".utf8).write(to: URL(fileURLWithPath: keyPath))
        let demo = try await CLI.run(["demo", "--event-log", path, "--event-log-key", keyPath])
        #expect(demo.status == 0, "\(demo.stdout)\(demo.stderr)")
        var lines = try Self.logLines(path)
        #expect(lines.count >= 6)
        let intact = try await CLI.run(["log", "verify", path, "--key-file", keyPath])
        #expect(intact.status == 0, "\(intact.stdout)")

        lines.remove(at: 1)
        for index in 1..<lines.count {
            let previousHash = try Self.hashField(of: lines[index - 1])
            lines[index] = String(lines[index].dropLast()) + ",\"seq\":\(index + 1),\"prev\":\"\(previousHash)\"}"
        }
        try Self.writeLog(lines, to: path)
        let forged = try await CLI.run(["log", "verify", path, "--key-file", keyPath])
        #expect(forged.status == 1, "\(forged.stdout)")
        #expect(forged.stdout.contains("line 2: non_canonical_record"), "\(forged.stdout)")
    }
}

extension CLITests {
    /// `head -n -3` of a log that `bulwark demo` closed: only the head printed before, kept elsewhere, shows it.
    @Test func logVerifyDetectsACutEndWithTheHeadKeptElsewhere() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-log-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appending(path: "events.jsonl").path
        let keyPath = directory.appending(path: "key").path
        try Data("a key of at least sixteen bytes".utf8).write(to: URL(fileURLWithPath: keyPath))
        let demo = try await CLI.run(["demo", "--event-log", path, "--event-log-key", keyPath])
        #expect(demo.status == 0, "\(demo.stdout)\(demo.stderr)")
        let lines = try Self.logLines(path)
        #expect(lines.last?.hasPrefix("{\"checkpoint\":\"close\",\"count\":\(lines.count - 1),") == true)

        let intact = try await CLI.run(["log", "verify", path, "--key-file", keyPath, "--require-close"])
        #expect(intact.status == 0, "\(intact.stdout)")
        let headLine = try #require(intact.stdout.split(separator: "\n").first { $0.hasPrefix("head: ") })
        let anchor = headLine.dropFirst("head: ".count).split(separator: " ").map(String.init)
        #expect(anchor.count == 4 && anchor[0] == "--expect-count" && anchor[1] == "\(lines.count)")
        #expect(intact.stdout.contains("end: a close checkpoint (line \(lines.count))"))

        try Self.writeLog(Array(lines.dropLast(3)), to: path)
        let unanchored = try await CLI.run(["log", "verify", path, "--key-file", keyPath])
        #expect(unanchored.status == 0, "\(unanchored.stdout)")
        #expect(unanchored.stdout.contains("end: no close checkpoint"), "\(unanchored.stdout)")
        let notClosed = try await CLI.run(["log", "verify", path, "--key-file", keyPath, "--require-close"])
        #expect(notClosed.status == 1)
        #expect(notClosed.stdout.contains("not_closed"), "\(notClosed.stdout)")
        let anchored = try await CLI.run(["log", "verify", path, "--key-file", keyPath] + anchor)
        #expect(anchored.status == 1)
        #expect(anchored.stdout.contains(": truncated: the log holds \(lines.count - 3) entries"), "\(anchored.stdout)")
        let headOnly = try await CLI.run(["log", "verify", path, "--key-file", keyPath] + anchor.suffix(2))
        #expect(headOnly.status == 1)
        #expect(headOnly.stdout.contains("anchor_mismatch"), "\(headOnly.stdout)")
    }
}

extension CLITests {
    /// Issue 38, item 8 (a) and (b) on the command line: a cut end followed by a new session is marked and warned
    /// about (and fails `--require-close`); a forged last line numbered 2^63 - 1 is refused with a sentence, never a
    /// trap (before the fix, the second `demo` died of an arithmetic overflow, exit 132).
    @Test func logCutThenReopenedIsWarnedAndAForgedLastSequenceIsRefused() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-log-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appending(path: "events.jsonl").path
        let first = try await CLI.run(["demo", "--event-log", path])
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let lines = try Self.logLines(path)
        try Self.writeLog(Array(lines.dropLast(3)), to: path)
        let second = try await CLI.run(["demo", "--event-log", path])
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let warned = try await CLI.run(["log", "verify", path])
        #expect(warned.status == 0, "\(warned.stdout)\(warned.stderr)")
        #expect(warned.stdout.contains("previous_session_unclosed"), "\(warned.stdout)")
        let strict = try await CLI.run(["log", "verify", path, "--require-close"])
        #expect(strict.status == 1, "\(strict.stdout)")

        var forged = try Self.logLines(path)
        let last = try #require(forged.last)
        let seq = try #require(last.range(of: #""seq":[0-9]+"#, options: .regularExpression))
        forged.append(last.replacingCharacters(in: seq, with: #""seq":9223372036854775807"#))
        try Self.writeLog(forged, to: path)
        let refused = try await CLI.run(["demo", "--event-log", path])
        #expect(refused.status != 0 && refused.status != 132, "\(refused.status): \(refused.stderr)")
        #expect(
            (refused.stdout + refused.stderr).contains("cannot append to"),
            "\(refused.stdout)\(refused.stderr)"
        )
    }
}
