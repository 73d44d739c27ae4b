import ArgumentParser
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
                Every record carries its own SHA-256, the SHA-256 of the record before it and a sequence number, \
                and, when the log was written with a key, an HMAC. This command reports the first record that was \
                edited, removed, reordered or cut off, by line number, and exits 1; a log that verifies exits 0. \
                Without --key-file only the hash chain is checked: whoever can write the file can rewrite it \
                consistently, which only the HMAC key prevents.
                """
        )

        @Argument(help: "The log file (JSON lines).")
        var file: String

        @Option(help: "The HMAC key file the log was written with.")
        var keyFile: String?

        func run() throws {
            do {
                let key = try self.keyFile.map { try TamperEvidentLog.Key(contentsOfFile: $0) }
                let summary = try TamperEvidentLogVerifier.verify(path: self.file, key: key)
                let mode = summary.authenticated ? "hash chain and HMAC" : "hash chain only (no key given)"
                print("\(self.file): \(summary.records) records verified (\(mode))")
            } catch let error as TamperEvidentLogError {
                print("\(self.file): \(error)")
                throw ExitCode(error.code == .unreadable || error.code == .keyTooShort ? 2 : 1)
            }
        }
    }
}

/// `--event-log FILE [--event-log-key FILE]`: append the command's security events to a tamper-evident log.
struct EventLogOptions: ParsableArguments {
    @Option(help: "Append the security events to this tamper-evident log (JSON lines; see `bulwark log verify`).")
    var eventLog: String?

    @Option(help: "Sign the event log's records with the HMAC key in this file.")
    var eventLogKey: String?

    /// A monitor for the log, or nil when no log was asked for.
    func monitor() throws -> (any EventMonitor)? {
        guard let eventLog else {
            if self.eventLogKey != nil { throw ValidationError("--event-log-key needs --event-log") }
            return nil
        }
        let key = try self.eventLogKey.map { try TamperEvidentLog.Key(contentsOfFile: $0) }
        return TamperEvidentLogMonitor(log: try TamperEvidentLog(path: eventLog, key: key))
    }
}
