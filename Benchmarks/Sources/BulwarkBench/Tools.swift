import Foundation

/// The x509-limbo suite end to end through the release `bulwark limbo` CLI (BulwarkLimbo is not a library
/// product of the root package, so it cannot be imported here): wall-clock seconds from launch to exit.
struct LimboRun: Sendable {
    let wallSeconds: Double
    /// The CLI's own "elapsed: X s" (evaluation, without process start and JSON loading), if printed.
    let reportedSeconds: Double?
    let summary: [String]
    let status: Int32
}

func runLimbo(binary: String, limboPath: String) throws -> LimboRun {
    let outputPath = NSTemporaryDirectory() + "bulwark-bench-limbo-\(getpid()).json"
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    let output = try runProcess(executable: binary, arguments: ["limbo", limboPath, "--output", outputPath])
    // Exit status 1 means some case expected to fail was accepted: still a timing, reported as a note.
    guard output.status == 0 || output.status == 1 else {
        throw BenchError("bulwark limbo exited with \(output.status): \(output.stderr.suffix(2000))")
    }
    let lines = output.stdout.split(separator: "\n").map(String.init)
    var reported: Double?
    for line in lines where line.hasPrefix("elapsed:") {
        reported = Double(
            line.dropFirst("elapsed:".count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? ""
        )
    }
    return LimboRun(
        wallSeconds: output.seconds,
        reportedSeconds: reported,
        summary: lines.filter { !$0.hasPrefix("elapsed:") },
        status: output.status
    )
}

/// wrk against the same server and path: the ceiling for the request benchmarks (C, no certificate checks).
struct WrkRun: Sendable {
    let requestsPerSecond: Double
    let p50Milliseconds: Double?
    let p99Milliseconds: Double?
}

func findExecutable(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

func runWrk(_ wrk: String, port: Int, connections: Int, seconds: Double) throws -> WrkRun {
    let threads = min(connections, ProcessInfo.processInfo.activeProcessorCount)
    let output = try runProcess(
        executable: wrk,
        arguments: [
            "-t\(threads)", "-c\(connections)", "-d\(max(1, Int(seconds.rounded())))s", "--latency",
            "https://127.0.0.1:\(port)/bytes/1024",
        ]
    )
    guard output.status == 0 else { throw BenchError("wrk exited with \(output.status): \(output.stderr)") }
    var rate: Double?
    var p50: Double?
    var p99: Double?
    for line in output.stdout.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        if line.contains("Requests/sec:"), let last = fields.last { rate = Double(last) }
        if fields.count == 2, fields[0] == "50%" { p50 = wrkMilliseconds(fields[1]) }
        if fields.count == 2, fields[0] == "99%" { p99 = wrkMilliseconds(fields[1]) }
    }
    guard let rate else { throw BenchError("wrk printed no Requests/sec: \(output.stdout)") }
    return WrkRun(requestsPerSecond: rate, p50Milliseconds: p50, p99Milliseconds: p99)
}

/// wrk latencies: "812.00us", "1.23ms", "2.01s".
private func wrkMilliseconds(_ text: Substring) -> Double? {
    if text.hasSuffix("us"), let v = Double(text.dropLast(2)) { return v / 1000 }
    if text.hasSuffix("ms"), let v = Double(text.dropLast(2)) { return v }
    if text.hasSuffix("s"), let v = Double(text.dropLast(1)) { return v * 1000 }
    return nil
}
