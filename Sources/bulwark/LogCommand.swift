import ArgumentParser
import BulwarkAudit
import BulwarkPolicy
import Foundation

struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Work with tamper-evident event logs.",
        subcommands: [VerifyCommand.self]
    )

    struct VerifyCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check that an event log is complete and unaltered.",
            discussion: """
                Every line carries a sequence number, the SHA-256 of the line before it, its own SHA-256 and, \
                when the log was written with a key, an HMAC; a line is accepted only if it is exactly its signed \
                content followed by that trailer. This command reports the first line that was edited, removed, \
                inserted, reordered or torn, by line number, and exits 1; a log that verifies exits 0 and prints \
                its head: the number of entries (records and checkpoints) and the hash of the last one. \
                Without --key-file only the hash chain is checked: whoever can write the file can rewrite it \
                consistently, which only the HMAC key prevents.

                Cutting entries off the end, checkpoints included, cannot be told from a crash by the log alone. \
                Keep the printed head somewhere the log's writer cannot change, and check it later with \
                --expect-count and --expect-head: the log must still hold that entry with that hash (it may have \
                grown since). --expect-count alone is weaker: it only says that the log holds that many entries, \
                and a log cut and then grown past the count again (by a later session of the writer, or by anyone \
                when it has no key) passes it.

                A writer that opens a log not ending with a close checkpoint (its last session crashed, or its end \
                was cut off) first writes a previous_session_unclosed checkpoint with the count and head it found. \
                Each is printed as a warning ("warning: line N: previous_session_unclosed: ..."); the exit status \
                stays 0, since a crash leaves the same mark. --require-close fails (exit 1) unless every session \
                was closed: the log ends with a close checkpoint and holds no previous_session_unclosed mark. A cut \
                back to an earlier close checkpoint leaves no mark: only a head kept elsewhere shows it.

                Exit status: 0 verified (warnings included), 1 a line or an expectation failed, 2 the log or the \
                key file cannot be read or used.
                """
        )

        @Argument(help: "The log file (JSON lines).")
        var file: String

        @Option(help: "The HMAC key file the log was written with.")
        var keyFile: String?

        @Option(
            help: """
                An anchor kept elsewhere: the log must hold at least this many entries. Alone, weaker than with \
                --expect-head: a log cut and grown again past the count passes it.
                """
        )
        var expectCount: Int?

        @Option(help: "An anchor kept elsewhere: the hash of entry --expect-count (or of any entry, without it).")
        var expectHead: String?

        @Flag(
            help: """
                Fail unless every session was closed: the log ends with a close checkpoint and holds no \
                previous_session_unclosed mark.
                """
        )
        var requireClose = false

        func validate() throws {
            if let expectCount, expectCount < 0 { throw ValidationError("--expect-count must be 0 or more") }
            if let expectHead {
                let isHex = expectHead.count == 64 && expectHead.lowercased().allSatisfy { $0.isHexDigit }
                guard isHex else { throw ValidationError("--expect-head must be 64 hex digits") }
            }
        }

        func run() throws {
            do {
                let key = try self.keyFile.map { try TamperEvidentLog.Key(contentsOfFile: $0) }
                let expectation = TamperEvidentLogVerifier.Expectation(
                    count: self.expectCount,
                    head: self.expectHead,
                    closed: self.requireClose
                )
                let summary = try TamperEvidentLogVerifier.verify(path: self.file, key: key, expecting: expectation)
                for line in Self.report(summary, file: self.file) { print(line) }
            } catch let error as TamperEvidentLogError {
                print("\(self.file): \(error)")
                throw ExitCode(error.code == .unreadable || error.code == .keyTooShort ? 2 : 1)
            }
        }

        static func report(_ summary: TamperEvidentLogVerifier.Summary, file: String) -> [String] {
            func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
            let mode = summary.authenticated ? "hash chain and HMAC" : "hash chain only (no key given)"
            var lines = [
                "\(file): \(plural(summary.records, "record")) and \(plural(summary.checkpoints, "checkpoint")) "
                    + "verified (\(mode))",
                "head: --expect-count \(summary.count) --expect-head \(summary.head)",
            ]
            let checkpoint = summary.lastCheckpointLine.map { "the last checkpoint is on line \($0)" }
            switch summary.ending {
            case .empty:
                lines.append("end: the log is empty")
            case .closed:
                lines.append("end: a close checkpoint (line \(summary.lastCheckpointLine ?? 0))")
            case .checkpoint, .open:
                lines.append(
                    "end: no close checkpoint (\(checkpoint ?? "no checkpoints")): the writer is still running or "
                        + "crashed, or the end was cut off; only a head kept elsewhere can tell"
                )
            }
            for session in summary.unclosedSessions {
                lines.append("warning: \(session); only a head kept elsewhere can tell")
            }
            return lines
        }
    }
}

/// `--event-log FILE [--event-log-key FILE]`: append the command's security events to a tamper-evident log.
struct EventLogOptions: ParsableArguments {
    @Option(help: "Append the security events to this tamper-evident log (JSON lines; see `bulwark log verify`).")
    var eventLog: String?

    @Option(help: "Sign the event log's records with the HMAC key in this file.")
    var eventLogKey: String?

    /// A monitor for the log, or nil when no log was asked for. The monitor writes what it queued and closes the log
    /// (its close checkpoint written) when the process exits.
    func monitor() throws -> (any EventMonitor)? {
        guard let eventLog else {
            if self.eventLogKey != nil { throw ValidationError("--event-log-key needs --event-log") }
            return nil
        }
        let key = try self.eventLogKey.map { try TamperEvidentLog.Key(contentsOfFile: $0) }
        let monitor = TamperEvidentLogMonitor(log: try TamperEvidentLog(path: eventLog, key: key))
        OpenEventLogs.closeAtExit(monitor)
        return monitor
    }
}

/// The event logs this process opened, closed when it exits, however the command ends (`exit` runs `atexit`
/// handlers, and ArgumentParser ends a failed command with `exit`).
enum OpenEventLogs {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var logs: [TamperEvidentLogMonitor] = []
    nonisolated(unsafe) private static var registered = false

    static func closeAtExit(_ log: TamperEvidentLogMonitor) {
        self.lock.withLock {
            if !self.registered { atexit { OpenEventLogs.closeAll() } }
            self.registered = true
            self.logs.append(log)
        }
    }

    private static func closeAll() {
        let logs = self.lock.withLock {
            defer { self.logs = [] }
            return self.logs
        }
        for log in logs {
            do {
                try log.close()
            } catch {
                FileHandle.standardError.write(Data("bulwark: event log: \(error)\n".utf8))
            }
        }
    }
}
