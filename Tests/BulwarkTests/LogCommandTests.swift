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
