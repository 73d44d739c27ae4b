import Bulwark
import BulwarkTestSupport
import Foundation
import NIOCore

/// The streamed download (and the streamed upload) runs in a fresh child process per client and round, so each
/// client's peak RSS (VmHWM) is its own; the server stays in the parent and is not counted.
struct DownloadResult: Sendable {
    let bytes: Int
    let seconds: Double
    /// VmRSS just before the download (after one warm-up request on the same connection), KiB.
    let rssBeforeKiB: Int
    /// VmHWM after the download: the child's peak RSS over its whole life, KiB.
    let peakKiB: Int
    /// The child's CPU time (user + system, all threads) during the download alone, seconds: the client's own cost,
    /// apart from the server's, which bounds the rate on two cores.
    let cpuSeconds: Double

    var megabytesPerSecond: Double { Double(self.bytes) / self.seconds / 1e6 }
    var peakMiB: Double { Double(self.peakKiB) / 1024 }
    /// How far the peak rose above the RSS before the download, MiB.
    var growthMiB: Double { Double(self.peakKiB - self.rssBeforeKiB) / 1024 }
    /// Client CPU per MiB received, microseconds.
    var cpuMicrosecondsPerMiB: Double { self.cpuSeconds * 1e6 / (Double(self.bytes) / 1_048_576) }
}

enum ChildDownload {
    /// Child side: one client, one warm-up request, one streamed download (or, with `--child-upload`,
    /// `--upload-transfers` streamed uploads one after another on the same connection: POSTs of `--upload-bytes`
    /// bytes, 64 KiB buffers produced as the connection takes them); JSON on standard output, `bytes` the total.
    static func run(_ options: Options) async throws {
        let isUpload = options.childUpload != nil
        guard let which = options.childUpload ?? options.childDownload, let rootPath = options.childRootPEM else {
            throw BenchError("--child-download and --child-upload need --child-root and --child-port")
        }
        let pem = try String(contentsOfFile: rootPath, encoding: .utf8)
        let target = Target(port: options.childPort)
        let client = try childClient(which, pem: pem, rootPath: rootPath, target: target, maximumConnections: 1)
        _ = try await client.get("/hello", close: false)
        let rssBefore = procStatusKiB("VmRSS") ?? 0
        let start = nowNanos()
        let cpuStart = processCPUSeconds()
        let count: Int
        if isUpload {
            let chunk = ByteBuffer(bytes: TestHTTPSServer.bytesBody(count: 64 * 1024))
            for _ in 0..<options.uploadTransfers {
                let answer = try await client.upload("/hello", bytes: options.uploadBytes, chunk: chunk)
                guard answer == 5 else {
                    throw BenchError("\(which): the upload's answer had \(answer) bytes, not 5")
                }
            }
            count = options.uploadBytes * options.uploadTransfers
        } else {
            count = try await client.get("/bytes/\(options.downloadBytes)", close: false)
        }
        let cpu = processCPUSeconds() - cpuStart
        let seconds = Double(nowNanos() - start) / 1e9
        let peak = procStatusKiB("VmHWM") ?? 0
        try await client.shutdown()
        guard isUpload || count == options.downloadBytes else {
            throw BenchError("\(which): downloaded \(count) bytes, expected \(options.downloadBytes)")
        }
        print(
            "{\"bytes\":\(count),\"seconds\":\(seconds),\"cpu_seconds\":\(cpu),\"rss_before_kib\":\(rssBefore),"
                + "\"peak_kib\":\(peak)}"
        )
    }

    /// Parent side: runs one child and parses its line. `upload`: the child uploads `bytes`, `uploadTransfers` times,
    /// instead.
    static func spawn(
        client: String,
        port: Int,
        rootPEMPath: String,
        bytes: Int,
        upload: Bool = false,
        uploadTransfers: Int = 1
    ) throws -> DownloadResult {
        let what = upload ? "upload" : "download"
        let output = try runProcess(
            executable: selfExecutablePath(),
            arguments: [
                "--child-\(what)", client, "--child-port", "\(port)", "--child-root", rootPEMPath,
                "--\(what)-bytes", "\(bytes)",
            ] + (upload ? ["--upload-transfers", "\(uploadTransfers)"] : [])
        )
        guard output.status == 0 else {
            throw BenchError("\(what) child (\(client)) exited with \(output.status): \(output.stderr)")
        }
        guard let line = output.stdout.split(separator: "\n").last,
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let count = object["bytes"] as? Int, let seconds = object["seconds"] as? Double,
            let before = object["rss_before_kib"] as? Int, let peak = object["peak_kib"] as? Int,
            let cpu = object["cpu_seconds"] as? Double
        else {
            throw BenchError("\(what) child (\(client)) printed no result: \(output.stdout)")
        }
        return DownloadResult(bytes: count, seconds: seconds, rssBeforeKiB: before, peakKiB: peak, cpuSeconds: cpu)
    }
}

func selfExecutablePath() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
}

struct ProcessOutput {
    let status: Int32
    let stdout: String
    let stderr: String
    let seconds: Double
}

/// Runs a process to completion, capturing its output; `seconds` is the wall-clock time from launch to exit.
func runProcess(executable: String, arguments: [String]) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let start = nowNanos()
    try process.run()
    // Read both pipes while the child runs, so neither fills up and blocks it.
    final class Box: @unchecked Sendable { var data = Data() }
    let errBox = Box()
    let done = DispatchGroup()
    let errHandle = err.fileHandleForReading
    DispatchQueue.global().async(group: done) { errBox.data = errHandle.readDataToEndOfFile() }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let seconds = Double(nowNanos() - start) / 1e9
    done.wait()
    let errData = errBox.data
    return ProcessOutput(
        status: process.terminationStatus,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self),
        seconds: seconds
    )
}
