import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// squid (Debian's package) as a plain CONNECT proxy on 127.0.0.1 for `proxy-keepalive`, started the way the proxy
/// interop tests start it (Tests/BulwarkTests/Support/ProxyPeers.swift): in the foreground (`-N`) with a minimal
/// configuration of its own in a temporary directory, no cache, no authentication (only loopback clients allowed),
/// and a hosts file of its own so `localhost` is 127.0.0.1 alone (the benchmark server does not listen on ::1).
final class SquidProcess {
    let port: Int
    let directory: String
    private let process: Process

    var accessLogPath: String { self.directory + "/access.log" }

    private init(port: Int, directory: String, process: Process) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// The squid binary, or nil when it is not installed.
    static func find() -> String? {
        findExecutable("squid")
            ?? (FileManager.default.isExecutableFile(atPath: "/usr/sbin/squid") ? "/usr/sbin/squid" : nil)
    }

    static func version(_ squid: String) -> String {
        let output = try? runProcess(executable: squid, arguments: ["-v"])
        return output?.stdout.split(separator: "\n").first.map(String.init) ?? "squid"
    }

    static func start(_ squid: String) async throws -> SquidProcess {
        let directory = NSTemporaryDirectory() + "bulwark-bench-squid-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Started as root, squid's workers run as the `proxy` user: they must be able to write here.
        chmod(directory, 0o777)
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try freeTCPPort()
            let conf = directory + "/squid.conf"
            try "127.0.0.1 localhost\n".write(toFile: directory + "/hosts", atomically: true, encoding: .utf8)
            try """
            http_port 127.0.0.1:\(port)
            pid_filename \(directory)/squid.pid
            cache_log \(directory)/cache.log
            access_log stdio:\(directory)/access.log squid
            hosts_file \(directory)/hosts
            cache deny all
            coredump_dir \(directory)
            netdb_filename none
            shutdown_lifetime 0 seconds
            acl loopback src 127.0.0.1/32
            http_access allow loopback
            http_access deny all

            """.write(toFile: conf, atomically: true, encoding: .utf8)
            chmod(conf, 0o644)
            chmod(directory + "/hosts", 0o644)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: squid)
            process.arguments = ["-N", "-f", conf]
            _ = FileManager.default.createFile(atPath: directory + "/squid.out", contents: nil)
            guard let log = FileHandle(forWritingAtPath: directory + "/squid.out") else {
                throw BenchError("cannot write \(directory)/squid.out")
            }
            process.standardOutput = log
            process.standardError = log
            try process.run()
            let start = nowNanos()
            while process.isRunning && nowNanos() - start < 15_000_000_000 {
                if canConnect(port: port) { return SquidProcess(port: port, directory: directory, process: process) }
                try await Task.sleep(for: .milliseconds(50))
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let output = (try? String(contentsOfFile: directory + "/squid.out", encoding: .utf8)) ?? ""
            let cache = (try? String(contentsOfFile: directory + "/cache.log", encoding: .utf8)) ?? ""
            lastError = BenchError(
                "squid did not accept on 127.0.0.1:\(port): \(output.suffix(500)) \(cache.suffix(500))"
            )
        }
        throw lastError ?? BenchError("squid did not start")
    }

    /// Access-log lines so far (squid writes one when a transaction, here a whole tunnel, ends), waiting up to
    /// `seconds` for at least `count`.
    func accessLog(atLeast count: Int, seconds: Double = 5) async -> [String] {
        let start = nowNanos()
        while true {
            let text = (try? String(contentsOfFile: self.accessLogPath, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").map(String.init)
            if lines.count >= count || Double(nowNanos() - start) / 1e9 > seconds { return lines }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// SIGTERM, then SIGKILL after 3 s (squid 5 in the foreground can sit on SIGTERM), as the tests' peers do.
    func stop() {
        if self.process.isRunning {
            let pid = self.process.processIdentifier
            kill(pid, SIGTERM)
            let start = nowNanos()
            while self.process.isRunning && nowNanos() - start < 3_000_000_000 { usleep(20_000) }
            if self.process.isRunning { kill(pid, SIGKILL) }
            self.process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}

/// A TCP port free on 127.0.0.1 just now (bound to port 0, read, closed).
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw BenchError("bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw BenchError("getsockname() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
