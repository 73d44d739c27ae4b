import Foundation

extension Bench {
    /// `upload`: streamed POSTs of `--upload-bytes` (256 MiB) in a child process per client and round, as `download`
    /// does the other way: both clients send the same 64 KiB buffer again and again from an async sequence with
    /// `content-length`, so neither buffers the body, and the child's peak RSS shows it. A round's sample is
    /// `--upload-transfers` (4) uploads one after another on one connection: a single upload lasts about 75 ms here,
    /// and single ones gave ratios of 0.70–1.97 between full runs. The server (in the parent) counts the body bytes
    /// it received; each run is checked against them.
    mutating func upload() async throws {
        let bytes = self.options.uploadBytes
        let transfers = self.options.uploadTransfers
        var runs: [String: [DownloadResult]] = [:]
        let labels = ["bulwark", "ahc"]
        for round in 0..<self.options.rounds {
            for label in round % 2 == 0 ? labels : labels.reversed() {
                self.server.resetRecording()
                let run = try ChildDownload.spawn(
                    client: label,
                    port: self.server.port,
                    rootPEMPath: self.rootPEMPath,
                    bytes: bytes,
                    upload: true,
                    uploadTransfers: transfers
                )
                let received = self.server.requests.filter { $0.method == "POST" }.map(\.bodyByteCount)
                let expected = Array(repeating: bytes, count: transfers)
                guard received == expected else {
                    throw BenchError(
                        "upload: the server received bodies of \(received) bytes from \(label), not \(expected)"
                    )
                }
                runs[label, default: []].append(run)
                log(
                    "  upload round \(round + 1)/\(self.options.rounds) \(label): \(format(run.megabytesPerSecond, digits: 0)) MB/s, "
                        + "client CPU \(format(run.cpuMicrosecondsPerMiB, digits: 0)) µs/MiB, "
                        + "peak RSS \(format(run.peakMiB, digits: 1)) MiB (+\(format(run.growthMiB, digits: 1)) MiB during the upload)"
                )
            }
        }
        let rate = { (label: String) in median(runs[label]!.map(\.megabytesPerSecond)) }
        let peak = { (label: String) in median(runs[label]!.map(\.peakMiB)) }
        let growth = { (label: String) in median(runs[label]!.map(\.growthMiB)) }
        let cpu = { (label: String) in median(runs[label]!.map(\.cpuMicrosecondsPerMiB)) }
        var result = BenchResult(name: "upload", unit: "MB/s", bulwark: rate("bulwark"), ahc: rate("ahc"))
        result.goal = "ratio ≥ 1.0, peak RSS < 64 MiB"
        result.met = (result.ratio ?? 0) >= 1.0 && peak("bulwark") < 64
        result.extra = [
            ("bytes", .int(bytes)),
            ("transfers_per_round", .int(transfers)),
            ("bulwark_peak_rss_mib", .number((peak("bulwark") * 10).rounded() / 10)),
            ("ahc_peak_rss_mib", .number((peak("ahc") * 10).rounded() / 10)),
            ("bulwark_rss_growth_mib", .number((growth("bulwark") * 10).rounded() / 10)),
            ("ahc_rss_growth_mib", .number((growth("ahc") * 10).rounded() / 10)),
            ("bulwark_client_cpu_us_per_mib", .number(cpu("bulwark").rounded())),
            ("ahc_client_cpu_us_per_mib", .number(cpu("ahc").rounded())),
            ("bulwark_rounds", .array(runs["bulwark"]!.map { .number($0.megabytesPerSecond.rounded()) })),
            ("ahc_rounds", .array(runs["ahc"]!.map { .number($0.megabytesPerSecond.rounded()) })),
        ]
        result.details =
            "\(bytes / (1 << 20)) MiB POST, streamed from an async sequence of one 64 KiB buffer with content-length "
            + "(HTTP/1.1), \(transfers) one after another on one connection in a child process per client and round, "
            + "the server's received byte counts checked; peak RSS "
            + "\(format(peak("bulwark"), digits: 1)) / \(format(peak("ahc"), digits: 1)) MiB, growth during upload "
            + "\(format(growth("bulwark"), digits: 1)) / \(format(growth("ahc"), digits: 1)) MiB (Bulwark / AHC); "
            + "client CPU per MiB \(format(cpu("bulwark"), digits: 0)) / \(format(cpu("ahc"), digits: 0)) µs"
        self.results.append(result)
    }
}
