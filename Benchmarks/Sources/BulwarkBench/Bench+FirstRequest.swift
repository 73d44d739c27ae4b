import AsyncHTTPClient
import Bulwark
import BulwarkTestSupport
import Foundation
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// The costs a user meets first (issue 43): the first request of a new client that trusts the system roots (plus the
/// benchmark's CA), each in a process of its own, so that the roots are parsed as in a fresh program; and the
/// `bulwark fetch` process as a whole against `curl` on the same server.
enum FirstRequest {
    /// Child side: one client trusting the system roots and the benchmark's CA, one request; milliseconds from just
    /// before the client is made to the end of the body, JSON on standard output.
    static func runChild(_ options: Options) async throws {
        guard let which = options.childFirstRequest, let rootPath = options.childRootPEM else {
            throw BenchError("--child-first-request needs --child-root and --child-port")
        }
        let pem = try String(contentsOfFile: rootPath, encoding: .utf8)
        let target = Target(port: options.childPort)
        let start = nowNanos()
        let client = try childClient(
            which,
            pem: pem,
            rootPath: rootPath,
            target: target,
            maximumConnections: 1,
            systemRoots: true
        )
        let count = try await client.get("/hello", close: false)
        let milliseconds = Double(nowNanos() - start) / 1e6
        try await client.shutdown()
        guard count == 5 else { throw BenchError("\(which): the first request's body had \(count) bytes") }
        print("{\"ms\":\(milliseconds)}")
    }

    /// Parent side: one child, its milliseconds.
    static func spawn(client: String, port: Int, rootPEMPath: String) throws -> Double {
        let output = try runProcess(
            executable: selfExecutablePath(),
            arguments: ["--child-first-request", client, "--child-port", "\(port)", "--child-root", rootPEMPath]
        )
        guard output.status == 0, let line = output.stdout.split(separator: "\n").last,
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let milliseconds = object["ms"] as? Double
        else {
            throw BenchError("first-request child (\(client)) exited with \(output.status): \(output.stderr)")
        }
        return milliseconds
    }
}

/// A process run to its end with standard output and error to /dev/null: its wall time and peak RSS. The process is
/// started by GNU time (`/usr/bin/time -f %M`), which reports the peak: a process started straight from this one
/// would count this process's own RSS in its peak (`ru_maxrss` keeps the pages shared until `exec`), and both tools
/// pay time's start alike.
struct MeasuredRun {
    let status: Int32
    let milliseconds: Double
    let peakKiB: Int

    static func run(_ executable: String, _ arguments: [String]) throws -> MeasuredRun {
        let report = NSTemporaryDirectory() + "bulwark-bench-time-\(getpid()).txt"
        defer { try? FileManager.default.removeItem(atPath: report) }
        let run = try Self.spawn("/usr/bin/time", ["-f", "%M", "-o", report, executable] + arguments)
        let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        let peak = text.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        return MeasuredRun(status: run.status, milliseconds: run.milliseconds, peakKiB: peak)
    }

    private static func spawn(_ executable: String, _ arguments: [String]) throws -> MeasuredRun {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let start = nowNanos()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchError("cannot start \(executable): error \(spawned)") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4 for \(executable) failed") }
        }
        let milliseconds = Double(nowNanos() - start) / 1e6
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return MeasuredRun(status: exitStatus, milliseconds: milliseconds, peakKiB: Int(usage.ru_maxrss))
    }
}

extension Bench {
    // MARK: - First request of a new client

    /// `first-request`: a fresh process per sample, the clients alternating, 30 samples each (10 with --quick); p50
    /// and p90 of the milliseconds from making the client to the end of the first response.
    mutating func firstRequest() throws {
        let samples = self.options.quick ? 10 : 30
        var runs: [String: [Double]] = [:]
        for index in 0..<samples {
            for label in index % 2 == 0 ? ["bulwark", "ahc"] : ["ahc", "bulwark"] {
                runs[label, default: []].append(
                    try FirstRequest.spawn(client: label, port: self.server.port, rootPEMPath: self.rootPEMPath)
                )
            }
        }
        let p50 = { (label: String) in median(runs[label]!) }
        let p90 = { (label: String) -> Double in
            let sorted = runs[label]!.sorted()
            return sorted[min(sorted.count - 1, Int((0.9 * Double(sorted.count)).rounded(.up)) - 1)]
        }
        var result = BenchResult(name: "first-request", unit: "ms", bulwark: p50("bulwark"), ahc: p50("ahc"))
        result.higherIsBetter = false
        result.goal = "p50 ≤ AHC's"
        result.met = p50("bulwark") <= p50("ahc")
        result.extra = [
            ("bulwark_p90_ms", .number(p90("bulwark"))),
            ("ahc_p90_ms", .number(p90("ahc"))),
            ("bulwark_samples", .array(runs["bulwark"]!.map { .number($0) })),
            ("ahc_samples", .array(runs["ahc"]!.map { .number($0) })),
        ]
        result.details =
            "system roots + the benchmark CA, a process per sample (\(samples) each); p50 "
            + "\(format(p50("bulwark"), digits: 1)) / \(format(p50("ahc"), digits: 1)) ms, p90 "
            + "\(format(p90("bulwark"), digits: 1)) / \(format(p90("ahc"), digits: 1)) ms (Bulwark / AHC)"
        log("  first-request: \(result.details)")
        self.results.append(result)
    }

    // MARK: - bulwark fetch against curl

    /// `cli-fetch`: the release `bulwark fetch` process against `curl`, the same pinned request to the benchmark
    /// server (`--cacert` replacing the roots, `--pinnedpubkey` with the leaf's and the intermediate's keys, body to
    /// /dev/null), 30 paired runs in alternating order (10 with --quick), medians. Also `bulwark fetch --ca` (the
    /// system roots plus the CA, so the system bundle is parsed) and the process's start alone (`fetch -k`, refused
    /// when the options are read), for the split.
    mutating func cliFetch() throws {
        guard let bulwark = self.options.bulwarkBinary else {
            throw BenchError("cli-fetch needs --bulwark-bin (the release bulwark)")
        }
        guard let curl = ["/usr/bin/curl", "/bin/curl"].first(where: FileManager.default.isExecutableFile) else {
            throw BenchError("cli-fetch needs curl")
        }
        let port = self.server.port
        let url = "https://localhost:\(port)/hello"
        let pins = [self.chain.leaf.certificate, self.chain.intermediate!.certificate].map {
            "sha256//" + Pin.publicKey(of: $0).description.dropFirst("sha256/".count)
        }.joined(separator: ";")
        let resolve = ["--resolve", "localhost:\(port):127.0.0.1"]
        let common = [url, "--pinnedpubkey", pins, "-s", "-o", "/dev/null"] + resolve
        let commands: [(label: String, executable: String, arguments: [String])] = [
            ("curl", curl, ["--cacert", self.rootPEMPath] + common),
            ("bulwark", bulwark, ["fetch", "--cacert", self.rootPEMPath] + common),
            ("bulwark-system-roots", bulwark, ["fetch", "--ca", self.rootPEMPath] + common),
            ("bulwark-start", bulwark, ["fetch", url, "-k"]),
            ("curl-start", curl, ["--version"]),
        ]
        let samples = self.options.quick ? 10 : 30
        var runs: [String: [MeasuredRun]] = [:]
        for index in 0..<samples {
            let order = index % 2 == 0 ? commands : commands.reversed()
            for command in order {
                let run = try MeasuredRun.run(command.executable, command.arguments)
                let expected: Int32 = command.label == "bulwark-start" ? 64 : 0
                guard run.status == expected else {
                    throw BenchError("cli-fetch: \(command.label) exited with \(run.status)")
                }
                runs[command.label, default: []].append(run)
            }
        }
        let wall = { (label: String) in median(runs[label]!.map(\.milliseconds)) }
        let peak = { (label: String) in median(runs[label]!.map { Double($0.peakKiB) / 1024 }) }
        var result = BenchResult(name: "cli-fetch", unit: "ms", bulwark: wall("bulwark"), ahc: wall("curl"))
        result.higherIsBetter = false
        result.goal = "bulwark fetch ≤ 1.5 × curl's wall time (the ratio column is Bulwark / curl here)"
        result.met = wall("bulwark") <= 1.5 * wall("curl")
        for label in ["bulwark", "bulwark-system-roots", "bulwark-start", "curl", "curl-start"] {
            let key = label.replacingOccurrences(of: "-", with: "_")
            result.extra.append(("\(key)_ms", .number(wall(label))))
            result.extra.append(("\(key)_peak_rss_mib", .number((peak(label) * 10).rounded() / 10)))
        }
        result.details =
            "\(samples) paired runs, medians: bulwark fetch --cacert \(format(wall("bulwark"), digits: 1)) ms "
            + "(\(format(peak("bulwark"), digits: 1)) MiB), --ca (system roots parsed) "
            + "\(format(wall("bulwark-system-roots"), digits: 1)) ms, process start and options alone "
            + "\(format(wall("bulwark-start"), digits: 1)) ms; curl \(format(wall("curl"), digits: 1)) ms "
            + "(\(format(peak("curl"), digits: 1)) MiB), curl --version \(format(wall("curl-start"), digits: 1)) ms"
        log("  cli-fetch: \(result.details)")
        self.results.append(result)
    }
}
