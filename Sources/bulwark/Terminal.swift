import BulwarkPolicy
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Text for a terminal: each line with its control characters, bidirectional overrides and other invisible
/// characters written as `\u{HEX}`. Certificate subjects, header fields and the errors that quote them come from the
/// peer, and an escape sequence in one must not reach the terminal, where it could retitle it, clear it or hide a
/// refusal. The line breaks Bulwark's own messages hold are kept.
func terminalSafe(_ text: String) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).map { ControlCharacters.escaped($0) }
        .joined(separator: "\n")
}

/// A line on standard error, terminal-safe. A standard error that is closed is not an error of the command.
func printError(_ message: String) {
    try? FileHandle.standardError.write(contentsOf: Data((terminalSafe(message) + "\n").utf8))
}

/// A line on standard output, terminal-safe (the reports of `inspect` and `audit`, which quote the peer).
func printOut(_ message: String) {
    print(terminalSafe(message))
}

/// Writing the output failed: its reader went away (a closed pipe) or the disk refused. curl's exit status for it is
/// 23 (CURLE_WRITE_ERROR).
struct OutputWriteError: Error, CustomStringConvertible {
    static let exitStatus: Int32 = 23
    let destination: String

    var description: String { "cannot write to \(self.destination): its reader went away or the write failed" }

    /// Writes `data` to `handle`, or throws this error naming `destination`.
    static func write(_ data: Data, to handle: FileHandle, destination: String) throws {
        do {
            try handle.write(contentsOf: data)
        } catch {
            throw OutputWriteError(destination: destination)
        }
    }

    /// A closed pipe is then an error of `write`, not a signal that ends the process.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
