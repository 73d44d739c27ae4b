import Bulwark
import BulwarkTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the process holds at one moment: malloc's bytes in use (every allocator the clients use goes through malloc:
/// Swift, NIO's buffers, BoringSSL), the resident set, and the open sockets.
struct MemorySample: Sendable {
    let mallocInUseBytes: Int
    let rssKiB: Int
    let sockets: Int

    static func now() -> MemorySample {
        MemorySample(
            mallocInUseBytes: currentMallocInUseBytes() ?? -1,
            rssKiB: procStatusKiB("VmRSS") ?? -1,
            sockets: openSockets()
        )
    }

    var json: String { "{\"malloc\":\(self.mallocInUseBytes),\"rss_kib\":\(self.rssKiB),\"sockets\":\(self.sockets)}" }

    init(mallocInUseBytes: Int, rssKiB: Int, sockets: Int) {
        self.mallocInUseBytes = mallocInUseBytes
        self.rssKiB = rssKiB
        self.sockets = sockets
    }

    init?(_ object: Any?) {
        guard let object = object as? [String: Any], let malloc = object["malloc"] as? Int,
            let rss = object["rss_kib"] as? Int, let sockets = object["sockets"] as? Int
        else { return nil }
        self.init(mallocInUseBytes: malloc, rssKiB: rss, sockets: sockets)
    }
}

/// The `memory-idle` benchmark's child process: one client, N requests in flight at once on N connections, then the
/// same N connections idle in the pool; the memory at each stage against the memory before.
///
/// 1. One warm-up request (`/hello`), 200 ms, then the baseline sample.
/// 2. N concurrent `GET /slow/MS`: the server holds each for MS milliseconds, so the pool opens N connections. The
///    parent, which runs the server, watches it receive all N requests and then writes a line to the child's
///    standard input; the child samples (in flight) and checks that no response had arrived yet.
/// 3. When all N responses are read, 500 ms for the connections to go back to the pool, then the idle sample (the
///    open sockets are counted, so a client that closed connections instead of pooling them shows).
enum MemoryChild {
    struct Result: Sendable {
        let connections: Int
        let baseline: MemorySample
        let inFlight: MemorySample
        let idle: MemorySample

        /// Connections the idle stage holds beyond the baseline.
        var pooled: Int { self.idle.sockets - self.baseline.sockets }
        /// malloc bytes per idle pooled connection.
        var idleBytesPerConnection: Double {
            Double(self.idle.mallocInUseBytes - self.baseline.mallocInUseBytes) / Double(max(self.pooled, 1))
        }
        /// malloc bytes per in-flight request, its connection included.
        var inFlightBytesPerRequest: Double {
            Double(self.inFlight.mallocInUseBytes - self.baseline.mallocInUseBytes) / Double(self.connections)
        }
        /// RSS growth per in-flight request, its connection included (RSS is not given back when requests end, so
        /// it is read only for this stage).
        var inFlightRSSBytesPerRequest: Double {
            Double(self.inFlight.rssKiB - self.baseline.rssKiB) * 1024 / Double(self.connections)
        }
    }

    static func run(_ options: Options) async throws {
        guard let which = options.childMemory, let rootPath = options.childRootPEM else {
            throw BenchError("--child-memory needs --child-root and --child-port")
        }
        let pem = try String(contentsOfFile: rootPath, encoding: .utf8)
        let target = Target(port: options.childPort)
        let n = options.memoryConnections
        // The library's defaults (trust-decision cache on), but for the pool's size.
        let client = try childClient(
            which,
            pem: pem,
            rootPath: rootPath,
            target: target,
            maximumConnections: n,
            decisionCache: true
        )
        _ = try await client.get("/hello", close: false)
        try await Task.sleep(for: .milliseconds(200))
        let baseline = MemorySample.now()
        let path = "/slow/\(options.memorySlowMilliseconds)"
        let inFlight = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for _ in 0..<n {
                group.addTask {
                    let count = try await client.get(path, close: false)
                    guard count == 4 else { throw BenchError("\(which): \(path) returned \(count) bytes, not 4") }
                    return nowNanos()
                }
            }
            guard await readStandardInputLine() != nil else { throw BenchError("the parent closed standard input") }
            let sample = MemorySample.now()
            let sampledAt = nowNanos()
            var first = UInt64.max
            for try await done in group { first = min(first, done) }
            guard first > sampledAt else {
                throw BenchError("\(which): a response arrived before the in-flight sample; raise --memory-slow-ms")
            }
            return sample
        }
        try await Task.sleep(for: .milliseconds(500))
        let idle = MemorySample.now()
        try await client.shutdown()
        print(
            "{\"connections\":\(n),\"baseline\":\(baseline.json),\"in_flight\":\(inFlight.json),\"idle\":\(idle.json)}"
        )
    }

    /// Parent side: runs one child, tells it to sample once `server` has received all its requests, and parses its
    /// result.
    static func spawn(
        client: String,
        server: TestHTTPSServer,
        rootPEMPath: String,
        connections: Int,
        slowMilliseconds: Int
    ) async throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: selfExecutablePath())
        process.arguments = [
            "--child-memory", client, "--child-port", "\(server.port)", "--child-root", rootPEMPath,
            "--memory-connections", "\(connections)", "--memory-slow-ms", "\(slowMilliseconds)",
        ]
        let input = Pipe()
        let out = Pipe()
        let err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        final class Box: @unchecked Sendable { var data = Data() }
        let outBox = Box()
        let errBox = Box()
        let done = DispatchGroup()
        let outHandle = out.fileHandleForReading
        let errHandle = err.fileHandleForReading
        server.resetRecording()
        try process.run()
        DispatchQueue.global().async(group: done) { outBox.data = outHandle.readDataToEndOfFile() }
        DispatchQueue.global().async(group: done) { errBox.data = errHandle.readDataToEndOfFile() }
        let start = nowNanos()
        var arrived = 0
        while process.isRunning && nowNanos() - start < 120_000_000_000 {
            arrived = server.requests.filter { $0.path.hasPrefix("/slow/") }.count
            if arrived >= connections { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        // A child that died between the check and the write must not take the parent with it.
        signal(SIGPIPE, SIG_IGN)
        if arrived >= connections && process.isRunning {
            try? input.fileHandleForWriting.write(contentsOf: Data("sample\n".utf8))
        } else if process.isRunning {
            process.terminate()
        }
        try? input.fileHandleForWriting.close()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                process.waitUntilExit()
                done.wait()
                continuation.resume()
            }
        }
        let stdout = String(decoding: outBox.data, as: UTF8.self)
        let stderr = String(decoding: errBox.data, as: UTF8.self)
        guard arrived >= connections else {
            throw BenchError("memory child (\(client)): the server received \(arrived) of \(connections) requests")
        }
        guard process.terminationStatus == 0 else {
            throw BenchError("memory child (\(client)) exited with \(process.terminationStatus): \(stderr)")
        }
        guard let line = stdout.split(separator: "\n").last,
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let count = object["connections"] as? Int, let baseline = MemorySample(object["baseline"]),
            let inFlight = MemorySample(object["in_flight"]), let idle = MemorySample(object["idle"])
        else {
            throw BenchError("memory child (\(client)) printed no result: \(stdout)")
        }
        return Result(connections: count, baseline: baseline, inFlight: inFlight, idle: idle)
    }
}

/// One line of standard input, read off the cooperative pool (a blocking read there would hold one of its threads).
func readStandardInputLine() async -> String? {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: readLine()) }
    }
}

/// malloc's bytes in use, from glibc's `malloc_info` (its totals over every arena): the memory malloc holds from the
/// system, less what is free in its bins (the top chunk included), plus the chunks it mapped on their own. `nil`
/// where glibc's `malloc_info` is missing. (`mallinfo2` would say the same but returns a C structure by value.)
func currentMallocInUseBytes() -> Int? {
    typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
    guard let symbol = dlsym(nil, "malloc_info") else { return nil }
    let mallocInfo = unsafeBitCast(symbol, to: MallocInfo.self)
    var buffer: UnsafeMutablePointer<CChar>?
    var size = 0
    guard let stream = open_memstream(&buffer, &size) else { return nil }
    let status = mallocInfo(0, stream)
    fclose(stream)
    guard let buffer else { return nil }
    defer { free(buffer) }
    guard status == 0 else { return nil }
    let xml = String(cString: buffer)
    // The totals over all arenas follow the last `</heap>`.
    guard let range = xml.range(of: "</heap>", options: .backwards) else { return nil }
    var fast = 0
    var rest = 0
    var mmap = 0
    var current = 0
    for line in xml[range.upperBound...].split(separator: "\n") {
        guard let sizeRange = line.range(of: "size=\"") else { continue }
        let value = Int(line[sizeRange.upperBound...].prefix { $0.isNumber }) ?? 0
        if line.hasPrefix("<total type=\"fast\"") { fast = value }
        if line.hasPrefix("<total type=\"rest\"") { rest = value }
        if line.hasPrefix("<total type=\"mmap\"") { mmap = value }
        if line.hasPrefix("<system type=\"current\"") { current = value }
    }
    return current - fast - rest + mmap
}

/// The sockets among this process's open file descriptors.
func openSockets() -> Int {
    let directory = "/proc/self/fd"
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return -1 }
    return entries.reduce(0) { count, entry in
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)")) ?? ""
        return count + (target.hasPrefix("socket:") ? 1 : 0)
    }
}
