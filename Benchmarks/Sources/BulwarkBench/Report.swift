import Foundation
import NIOCore

/// A JSON value that keeps object keys in the order given.
indirect enum JSON: Sendable {
    case number(Double)
    case int(Int)
    case string(String)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    static func optional(_ value: Double?) -> JSON { value.map { .number($0) } ?? .null }

    func render(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent)
        let inner = String(repeating: "  ", count: indent + 1)
        switch self {
        case .number(let value):
            guard value.isFinite else { return "null" }
            return value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(format: "%.6g", value)
        case .int(let value): return String(value)
        case .string(let text): return Self.quote(text)
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .array(let items):
            if items.isEmpty { return "[]" }
            if items.allSatisfy({ if case .object = $0 { return false } else { return true } }) {
                return "[" + items.map { $0.render() }.joined(separator: ", ") + "]"
            }
            return "[\n" + items.map { inner + $0.render(indent: indent + 1) }.joined(separator: ",\n") + "\n" + pad
                + "]"
        case .object(let fields):
            if fields.isEmpty { return "{}" }
            return "{\n"
                + fields.map { inner + Self.quote($0.0) + ": " + $0.1.render(indent: indent + 1) }.joined(
                    separator: ",\n"
                )
                + "\n" + pad + "}"
        }
    }

    private static func quote(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default:
                if scalar.value < 0x20 {
                    result += String(format: "\\u%04x", scalar.value)
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}

/// One row of the report.
struct BenchResult: Sendable {
    var name: String
    var unit: String
    var bulwark: Double?
    var ahc: Double?
    /// Bulwark / AsyncHTTPClient where both apply.
    var ratio: Double? {
        guard let bulwark, let ahc, ahc != 0 else { return nil }
        return bulwark / ahc
    }
    var higherIsBetter = true
    /// The issue's goal, in words, and whether this run met it (nil when there is no goal).
    var goal: String?
    var met: Bool?
    /// Short human-readable details for the Markdown table.
    var details: String = ""
    /// Extra JSON fields (latencies, RSS, per-round values, ...).
    var extra: [(String, JSON)] = []
    var error: String?

    var json: JSON {
        var fields: [(String, JSON)] = [
            ("name", .string(self.name)),
            ("unit", .string(self.unit)),
            ("bulwark", .optional(self.bulwark)),
            ("ahc", .optional(self.ahc)),
            ("ratio", .optional(self.ratio)),
            ("higher_is_better", .bool(self.higherIsBetter)),
        ]
        fields += self.extra
        if let goal { fields.append(("goal", .string(goal))) }
        if let met { fields.append(("goal_met", .bool(met))) }
        if let error { fields.append(("error", .string(error))) }
        return .object(fields)
    }
}

struct Machine: Sendable {
    let cores: Int
    let memoryGiB: Double
    let cpu: String
    /// The CPU features that change the measured code paths: AES and SHA instructions (TLS record and handshake
    /// hashing in BoringSSL), AVX2 and AVX-512 (BoringSSL's P-256 and AES-GCM paths, Bulwark's vector encoders).
    let cpuFlags: String
    let kernel: String
    let swiftVersion: String
    let loadAverageAtStart: String
    var loadAverageAtEnd: String = ""
    let date: String
    let mode: String
    let rounds: Int
    let legSeconds: Double
    let eventLoops: String

    static func current(options: Options) -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let cpu =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "" }
            ?? "unknown"
        let present = Set(
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("flags") }
                .map { $0.split(separator: " ").map(String.init) } ?? []
        )
        let named: [(flag: String, label: String)] = [
            ("aes", "AES-NI"), ("vaes", "VAES"), ("sha_ni", "SHA-NI"), ("avx2", "AVX2"), ("bmi2", "BMI2"),
            ("adx", "ADX"), ("avx512f", "AVX-512F"), ("avx512bw", "AVX-512BW"), ("avx512vbmi", "AVX-512 VBMI"),
            ("avx512_vbmi2", "AVX-512 VBMI2"),
        ]
        let flags = named.filter { present.contains($0.flag) }.map(\.label)
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let formatter = ISO8601DateFormatter()
        return Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryGiB: Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30),
            cpu: cpu,
            cpuFlags: flags.isEmpty ? "none of AES-NI, SHA-NI, AVX2, AVX-512" : flags.joined(separator: ", "),
            kernel: "Linux \(kernel)",
            swiftVersion: options.swiftVersion ?? "unknown",
            loadAverageAtStart: Self.loadAverage(),
            date: formatter.string(from: Date()),
            mode: options.quick ? "quick" : "full",
            rounds: options.rounds,
            legSeconds: options.legSeconds,
            eventLoops: options.sharedEventLoops
                ? "shared: server and all clients on NIO's singleton group"
                : "separate: server and each client on its own \(System.coreCount)-thread group"
        )
    }

    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    var json: JSON {
        .object([
            ("cores", .int(self.cores)),
            ("memory_gib", .number((self.memoryGiB * 10).rounded() / 10)),
            ("cpu", .string(self.cpu)),
            ("cpu_flags", .string(self.cpuFlags)),
            ("os", .string(self.kernel)),
            ("swift_version", .string(self.swiftVersion)),
            ("load_average_start", .string(self.loadAverageAtStart)),
            ("load_average_end", .string(self.loadAverageAtEnd)),
            ("date", .string(self.date)),
            ("mode", .string(self.mode)),
            ("rounds", .int(self.rounds)),
            ("leg_seconds", .number(self.legSeconds)),
            ("event_loops", .string(self.eventLoops)),
        ])
    }
}

func renderMarkdown(machine: Machine, results: [BenchResult], notes: [String]) -> String {
    var lines: [String] = []
    lines.append(
        "Machine: \(machine.cores) cores (\(machine.cpu); \(machine.cpuFlags)), \(format(machine.memoryGiB, digits: 1)) GiB, \(machine.kernel), "
            + "\(machine.swiftVersion). Mode: \(machine.mode), \(machine.rounds) alternating rounds, "
            + "\(format(machine.legSeconds, digits: 1)) s legs. Event loops \(machine.eventLoops). Load average: \(machine.loadAverageAtStart) at start, "
            + "\(machine.loadAverageAtEnd) at end. \(machine.date)."
    )
    lines.append("")
    lines.append("| benchmark | unit | Bulwark | AsyncHTTPClient | ratio | goal | met | details |")
    lines.append("|---|---|---:|---:|---:|---|---|---|")
    for result in results {
        let met = result.met.map { $0 ? "yes" : "**no**" } ?? "—"
        lines.append(
            "| \(result.name) | \(result.unit) | \(cell(result.bulwark)) | \(cell(result.ahc)) | "
                + "\(result.ratio.map { format($0, digits: 2) } ?? "—") | \(result.goal ?? "—") | \(met) | "
                + "\(result.error.map { "ERROR: \($0)" } ?? result.details) |"
        )
    }
    if !notes.isEmpty {
        lines.append("")
        lines += notes.map { "- \($0)" }
    }
    return lines.joined(separator: "\n")
}

private func cell(_ value: Double?) -> String {
    guard let value, value.isFinite else { return "—" }
    if value >= 100 { return format(value, digits: 0) }
    if value >= 10 { return format(value, digits: 1) }
    return format(value, digits: 2)
}
