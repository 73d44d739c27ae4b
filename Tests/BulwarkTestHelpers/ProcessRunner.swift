import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way the tests start another program (curl, openssl, nginx's helpers, the bulwark executable).
///
/// The program runs in a fresh temporary directory holding the input `files`; its standard output and error go to
/// files, so a large output cannot stall it on a full pipe, and the files it writes there are returned. Waiting
/// never blocks a concurrency thread, and a program still running after `timeout` is killed.
///
/// A test that starts a program must carry the `.externalPeers` tag (so scripts/test runs it apart from the
/// in-process client tests); otherwise the run records an issue naming the test.
public enum ProcessRunner {
    /// What a finished program left behind.
    public struct Result: Sendable {
        /// The exit status (or the signal number, for a program ended by a signal).
        public var status: Int32
        /// Everything written to standard output.
        public var stdout: [UInt8]
        /// Everything written to standard error, as text.
        public var stderr: String
        /// The files the program wrote into its working directory, by name.
        public var files: [String: [UInt8]]

        /// Standard output as text.
        public var output: String { String(decoding: self.stdout, as: UTF8.self) }
    }

    /// Why a program could not be run.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String

        /// A failure described by `description`.
        public init(description: String) {
            self.description = description
        }
    }

    /// Runs `executable` with `arguments` to its end.
    ///
    /// - Parameters:
    ///   - environment: variables added to (or replacing) the test process's own environment.
    ///   - files: input files written into the working directory first.
    ///   - timeout: how long the program may run before it is killed.
    public static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String] = [:],
        files: [String: [UInt8]] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> Result {
        Self.checkTag(executable)
        let manager = FileManager.default
        let directory = manager.temporaryDirectory.appending(path: "bulwark-run-\(UUID().uuidString.prefix(12))")
        try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? manager.removeItem(at: directory) }
        for (name, bytes) in files {
            try Data(bytes).write(to: directory.appending(path: name))
        }
        let outURL = directory.appending(path: ".stdout")
        let errURL = directory.appending(path: ".stderr")
        _ = manager.createFile(atPath: outURL.path, contents: nil)
        _ = manager.createFile(atPath: errURL.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outHandle
        process.standardError = errHandle
        var variables = ProcessInfo.processInfo.environment
        variables["SWIFT_BACKTRACE"] = "enable=no"
        variables.merge(environment) { $1 }
        process.environment = variables
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(
                    throwing: Failure(description: "\(executable.path) could not be started: \(error)")
                )
                return
            }
            let watched = UncheckedBox(process)
            let milliseconds = Int(timeout / .milliseconds(1))
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
                // Still running means not yet reaped, so the pid is still this child's.
                if watched.value.isRunning { kill(watched.value.processIdentifier, SIGKILL) }
            }
        }
        try outHandle.close()
        try errHandle.close()
        var written: [String: [UInt8]] = [:]
        for name in try manager.contentsOfDirectory(atPath: directory.path) where !name.hasPrefix(".") {
            var isDirectory: ObjCBool = false
            let path = directory.appending(path: name).path
            guard manager.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            written[name] = Array(try Data(contentsOf: directory.appending(path: name)))
        }
        return Result(
            status: status,
            stdout: Array((try? Data(contentsOf: outURL)) ?? Data()),
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "",
            files: written
        )
    }

    /// Runs `/bin/sh -c line`.
    public static func shell(
        _ line: String,
        files: [String: [UInt8]] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> Result {
        try await Self.run(URL(fileURLWithPath: "/bin/sh"), ["-c", line], files: files, timeout: timeout)
    }

    /// Runs a bash pipeline (`set -o pipefail`) and returns its trimmed standard output; a non-zero exit throws.
    public static func pipeline(_ command: String) async throws -> String {
        let result = try await Self.run(URL(fileURLWithPath: "/bin/bash"), ["-c", "set -o pipefail; " + command])
        guard result.status == 0 else {
            throw Failure(description: "`\(command)` exited with \(result.status): \(result.stderr)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func checkTag(_ executable: URL) {
        guard let test = Test.current, !test.tags.contains(.externalPeers) else { return }
        let message =
            "\(test.name) starts \(executable.lastPathComponent) but its suite is not tagged .externalPeers, "
            + "so scripts/test would run it among the in-process client tests"
        Issue.record(Comment(rawValue: message))
    }
}
