import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Monotonic nanoseconds.
@inline(__always)
func nowNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Keeps a value alive so the optimizer cannot drop the work that produced it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty)
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// The q-quantile (0...1) of sorted values, nearest-rank.
func quantile(sorted: [UInt64], _ q: Double) -> UInt64 {
    precondition(!sorted.isEmpty)
    let rank = Int((q * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}

/// Fields of /proc/self/status in KiB (VmRSS, VmHWM, ...).
func procStatusKiB(_ field: String) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        let digits = line.dropFirst(field.count + 1).filter(\.isNumber)
        return Int(digits)
    }
    return nil
}

/// Writes to standard error (progress lines; standard output carries the table).
func log(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

func format(_ value: Double, digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}
