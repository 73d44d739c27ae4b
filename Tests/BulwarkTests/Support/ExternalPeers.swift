import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Real third-party peers for interop tests: nginx, `openssl s_server` and mitmproxy, each run as a child process
// on 127.0.0.1 with its files in a temporary directory. `scripts/test` installs the tools; a missing tool is an
// error, never a skip, because these tests are required.

/// Why an external peer could not be used.
struct ExternalPeerError: Error, CustomStringConvertible {
    let description: String
}

enum ExternalPeers {
    /// How long a peer may take to accept connections (mitmproxy's first start generates its CA).
    static let startTimeout: Duration = .seconds(15)

    /// The package root, found from this file's path.
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // BulwarkTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// `scripts/peers`: the nginx configuration writer and the mitmproxy flow-log addon.
    static let scriptsDirectory: URL = repositoryRoot.appending(path: "scripts/peers")

    /// The error for a tool that is not installed. Tests fail with it; they are never skipped.
    static func toolMissing(_ tool: String, looked: [String]) -> ExternalPeerError {
        ExternalPeerError(
            description: "\(tool) is not installed (looked in \(looked.joined(separator: ", "))); "
                + "run scripts/test, which installs the interop peers"
        )
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago, for a peer program to listen on.
    ///
    /// Chosen below the kernel's ephemeral range (32768–60999 here), never twice in one test process: a port the
    /// kernel picks for `bind(port 0)` was once handed out by this function a moment after it closed its probe, and
    /// before nginx could bind it an in-process test server of another suite (which binds port 0) took it, so the
    /// client met that server's certificate ("valid for server.bulwark.test") instead of nginx's.
    static func freePort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_000)
            let fresh = Self.handedOutPorts.withLock { $0.insert(port).inserted }
            guard fresh, Self.canBind(port) else { continue }
            return port
        }
        throw ExternalPeerError(description: "no free port below the ephemeral range after 200 tries")
    }

    private static let handedOutPorts = SharedBox<Set<Int>>([])

    /// Whether 127.0.0.1:`port` can be bound right now (the probe socket is closed again).
    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopbackAddress(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    /// A port on 127.0.0.1 where nothing listens, for as long as the value lives: a socket bound to it and never
    /// listening keeps any other server of the test process (or another) from taking it, and a connection to it is
    /// refused. (A port from ``freePort()`` that is only assumed to stay closed was once taken by another suite's
    /// server while the redirect tests ran in parallel: the request met that server instead of a refusal.)
    final class ClosedPort: @unchecked Sendable {
        let port: Int
        private let fd: Int32

        init() throws {
            let fd = socket(AF_INET, ExternalPeers.streamSocketType, 0)
            guard fd >= 0 else { throw ExternalPeerError(description: "socket() failed: errno \(errno)") }
            var address = ExternalPeers.loopbackAddress(port: 0)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard bound == 0, named == 0 else {
                close(fd)
                throw ExternalPeerError(description: "bind(127.0.0.1:0) failed: errno \(errno)")
            }
            self.fd = fd
            self.port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(self.fd) }
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func isAccepting(port: Int) -> Bool {
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Self.connectSocket(fd, port: port)
    }

    /// Connects the socket `fd` to 127.0.0.1:`port`; whether that succeeded.
    private static func connectSocket(_ fd: Int32, port: Int) -> Bool {
        var address = loopbackAddress(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    /// Sends `request` to 127.0.0.1:`port` over a new connection and reads until the server closes it (at most
    /// `timeout` seconds per read); the bytes read, or nil when no connection could be made.
    @discardableResult
    static func exchange(port: Int, request: String, timeout: Int = 5) -> [UInt8]? {
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard Self.connectSocket(fd, port: port) else { return nil }
        let bytes = Array(request.utf8)
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else { return nil }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            answer += buffer[..<count]
        }
        return answer
    }

    #if os(Linux)
    private static let streamSocketType = Int32(SOCK_STREAM.rawValue)
    #else
    private static let streamSocketType = SOCK_STREAM
    #endif

    private static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// The executable for `name`: the first of `candidates` that exists, then `PATH`.
    static func findTool(_ name: String, candidates: [String] = []) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let searched =
            candidates + path.split(separator: ":").map { "\($0)/\(name)" }
            + ["/usr/sbin/\(name)", "/usr/local/sbin/\(name)"]
        for candidate in searched where FileManager.default.isExecutableFile(atPath: candidate) {
            return URL(fileURLWithPath: candidate)
        }
        throw toolMissing(name, looked: candidates + ["PATH", "/usr/sbin", "/usr/local/sbin"])
    }

    /// A fresh directory for one peer's files (or a command's output).
    static func makeDirectory(_ prefix: String) throws -> URL {
        _ = staleRunsCleaned
        let directory = FileManager.default.temporaryDirectory
            .appending(path: "bulwark-\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Peers left running by an earlier test process that crashed (its `defer`s never ran), stopped once per
    /// process. A peer's directory holds `owner`: "<test process pid> <peer pid>"; the peer is signalled only if
    /// its test process is gone and its command line still names that directory (so a reused pid is left alone).
    static let staleRunsCleaned: Void = {
        let temporary = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix("bulwark-") {
            let directory = temporary.appending(path: name)
            guard let owner = try? String(contentsOf: directory.appending(path: "owner"), encoding: .utf8) else {
                continue
            }
            let pids = owner.split(whereSeparator: \.isWhitespace).compactMap { pid_t($0) }
            guard pids.count == 2, pids[0] != getpid(), kill(pids[0], 0) != 0, errno == ESRCH else { continue }
            let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pids[1])/cmdline"))) ?? Data()
            if String(decoding: commandLine, as: UTF8.self).contains(directory.path) {
                kill(pids[1], SIGTERM)
                for _ in 0..<100 where isAlive(pids[1]) { usleep(20_000) }
                if isAlive(pids[1]) { kill(pids[1], SIGKILL) }
            }
            try? FileManager.default.removeItem(at: directory)
        }
    }()

    /// Whether `pid` is running: it exists and is not a zombie (an orphan's zombie may never be reaped here).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let end = stat.lastIndex(of: ")") else { return true }
        return !stat[end...].hasPrefix(") Z")
    }

    /// Writes the chain a server presents (`cert.pem`: leaf first), its key (`key.pem`), the certificates after
    /// the leaf (`chain.pem`, when any) and the root (`root.pem`) into `directory`.
    static func writeServerFiles(_ chain: TestChain, to directory: URL) throws {
        let presented = try chain.presentedChain.map { try $0.serializeAsPEM().pemString + "\n" }
        try presented.joined().write(to: directory.appending(path: "cert.pem"), atomically: true, encoding: .utf8)
        try (presented.first ?? "").write(to: directory.appending(path: "leaf.pem"), atomically: true, encoding: .utf8)
        if presented.count > 1 {
            try presented.dropFirst().joined()
                .write(to: directory.appending(path: "chain.pem"), atomically: true, encoding: .utf8)
        }
        try (chain.leaf.privateKeyPEM + "\n")
            .write(to: directory.appending(path: "key.pem"), atomically: true, encoding: .utf8)
        try (chain.root.certificatePEM + "\n")
            .write(to: directory.appending(path: "root.pem"), atomically: true, encoding: .utf8)
    }

    /// Runs a command to completion (through the tests' one process runner). A command still running after
    /// `timeout` is killed.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        timeout: Duration = .seconds(60)
    ) async throws -> ProcessRunner.Result {
        try await ProcessRunner.run(executable, arguments, timeout: timeout)
    }

    /// Runs `curl` with `arguments`.
    static func curl(_ arguments: [String]) async throws -> ProcessRunner.Result {
        try await run(try findTool("curl"), ["--silent", "--show-error", "--max-time", "20"] + arguments)
    }
}

/// A peer process: started, watched until its port accepts connections, stopped with SIGTERM (then SIGKILL).
final class PeerProcess: @unchecked Sendable {
    let name: String
    let process: Process
    let logURL: URL
    private let lock = NSLock()
    private var stopped = false

    /// Starts `executable` with its output in `logURL`.
    init(name: String, executable: URL, arguments: [String], logURL: URL) throws {
        self.name = name
        self.logURL = logURL
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        let process = Process()
        // Foundation's Process passes on the spawning thread's signal mask, and the test runner's threads block
        // SIGTERM: without `env --default-signal` (which also unblocks) the peer would ignore `stop()`'s SIGTERM.
        process.executableURL = try ExternalPeers.findTool("env", candidates: ["/usr/bin/env"])
        process.arguments = ["--default-signal", executable.path] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        do {
            try process.run()
        } catch {
            throw ExternalPeerError(description: "\(name) could not be started (\(executable.path)): \(error)")
        }
        try? log.close()
        self.process = process
        let owner = "\(getpid()) \(process.processIdentifier)\n"
        let ownerURL = logURL.deletingLastPathComponent().appending(path: "owner")
        try? owner.write(to: ownerURL, atomically: true, encoding: .utf8)
    }

    /// The end of the process's output, for error messages.
    var logTail: String {
        let text = (try? String(contentsOf: self.logURL, encoding: .utf8)) ?? ""
        return String(text.suffix(2000))
    }

    /// Waits until 127.0.0.1:`port` accepts connections and `ready()` holds; throws if the process exits first or
    /// the time runs out.
    func waitUntilAccepting(
        port: Int,
        timeout: Duration = ExternalPeers.startTimeout,
        ready: () -> Bool = { true }
    ) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if !self.process.isRunning {
                throw ExternalPeerError(
                    description: "\(self.name) exited with status \(self.process.terminationStatus) before "
                        + "accepting connections on 127.0.0.1:\(port); its output:\n\(self.logTail)"
                )
            }
            if ExternalPeers.isAccepting(port: port) && ready() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        self.stop()
        throw ExternalPeerError(
            description: "\(self.name) did not accept connections on 127.0.0.1:\(port) within \(timeout); "
                + "its output:\n\(self.logTail)"
        )
    }

    /// Stops the process: SIGTERM, then SIGKILL after 5 s. Safe to call more than once.
    ///
    /// It waits on the kernel's view of the process (gone, or a zombie: its sockets are closed), not on
    /// `Process.isRunning`: that flag changes only when Foundation's exit handler has run, which took up to 5 s under
    /// load, and this wait holds a thread of the cooperative pool (two of them on a 2-core machine) all that time: a
    /// CI run's every async test stalled for 10 s and a 1 s OCSP timeout was measured as 10.5 s.
    func stop() {
        let alreadyStopped = self.lock.withLock {
            defer { self.stopped = true }
            return self.stopped
        }
        let pid = self.process.processIdentifier
        guard !alreadyStopped, ExternalPeers.isAlive(pid) else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while ExternalPeers.isAlive(pid) && Date() < deadline { usleep(5_000) }
        if ExternalPeers.isAlive(pid) {
            kill(pid, SIGKILL)
            // Reaped here, not by `waitUntilExit()`: that spins on this (cooperative) thread until Foundation's exit
            // handler runs, and with two cores the handler's turn may never come (a run hung for 25 min in
            // `squid.stop()`, the squid a zombie).
            let killDeadline = Date().addingTimeInterval(5)
            while ExternalPeers.isAlive(pid) && Date() < killDeadline {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid { break }
                usleep(5_000)
            }
        }
    }

    deinit { self.stop() }
}

/// nginx serving HTTPS on 127.0.0.1 with the configuration of `scripts/peers/nginx-conf`.
final class NginxServer: Sendable {
    enum Variant: String, Sendable {
        /// TLS 1.2 and 1.3, HTTP/2 and HTTP/1.1.
        case modern = "modern"
        /// TLS 1.2 and 1.3, HTTP/1.1 only.
        case modernHTTP1 = "modern-http1"
        /// TLS 1.0 and 1.1 only.
        case legacyTLS = "legacy-tls"
    }

    /// One access-log line: `$connection $connection_requests "$request" $status $server_protocol`.
    struct AccessLogEntry: Sendable, Equatable {
        var connection: Int
        var requestOnConnection: Int
        var request: String
        var status: Int
        var protocolVersion: String
    }

    let port: Int
    let directory: URL
    let variant: Variant
    let peer: PeerProcess

    /// The CA root that issued the server's chain.
    var rootPEMPath: String { self.directory.appending(path: "root.pem").path }
    /// The file served at `/big` (1 MiB).
    var bigFile: URL { self.directory.appending(path: "html/big.bin") }
    /// The file served at `/gzip` (gzip-encoded when the client accepts it).
    var gzipFile: URL { self.directory.appending(path: "html/gzip.txt") }
    /// The file served at `/chunked` (through SSI, so without a content length).
    var chunkedFile: URL { self.directory.appending(path: "html/chunked.txt") }
    var accessLogPath: String { self.directory.appending(path: "access.log").path }

    private init(port: Int, directory: URL, variant: Variant, peer: PeerProcess) {
        self.port = port
        self.directory = directory
        self.variant = variant
        self.peer = peer
    }

    /// Writes the chain and the configuration into a temporary directory and starts nginx in the foreground. With a
    /// `clientCA`, nginx requires a client certificate issued by it (`ssl_verify_client on`) and echoes the client's
    /// subject DN in the `X-Client-DN` header. A connection serves `keepaliveRequests` requests (nginx's
    /// `keepalive_requests`; on HTTP/2 it sends GOAWAY with the last of them).
    static func start(
        chain: TestChain,
        variant: Variant = .modern,
        clientCA: Certificate? = nil,
        keepaliveRequests: Int = 1000
    ) async throws -> NginxServer {
        let nginx = try ExternalPeers.findTool("nginx", candidates: ["/usr/sbin/nginx"])
        let bash = try ExternalPeers.findTool("bash")
        let directory = try ExternalPeers.makeDirectory("nginx")
        do {
            try ExternalPeers.writeServerFiles(chain, to: directory)
            if let clientCA {
                try (clientCA.serializeAsPEM().pemString + "\n")
                    .write(to: directory.appending(path: "client-ca.pem"), atomically: true, encoding: .utf8)
            }
            var lastError: Error?
            // The free port can be taken between freePort() and nginx's bind: try a few.
            for _ in 0..<3 {
                let port = try ExternalPeers.freePort()
                let script = ExternalPeers.scriptsDirectory.appending(path: "nginx-conf").path
                let written = try await ExternalPeers.run(
                    bash,
                    [script, directory.path, "\(port)", variant.rawValue, "\(keepaliveRequests)"]
                )
                guard written.status == 0 else {
                    throw ExternalPeerError(description: "nginx-conf failed (\(written.status)): \(written.stderr)")
                }
                let peer = try PeerProcess(
                    name: "nginx",
                    executable: nginx,
                    arguments: [
                        "-p", directory.path, "-c", directory.appending(path: "nginx.conf").path,
                        "-e", directory.appending(path: "error.log").path,
                    ],
                    logURL: directory.appending(path: "nginx.out")
                )
                do {
                    try await peer.waitUntilAccepting(port: port)
                    return NginxServer(port: port, directory: directory, variant: variant, peer: peer)
                } catch {
                    peer.stop()
                    lastError = error
                    let errorLog = (try? String(contentsOf: directory.appending(path: "error.log"), encoding: .utf8))
                    guard (errorLog ?? "").contains("Address already in use") else { break }
                }
            }
            let errorLog = (try? String(contentsOf: directory.appending(path: "error.log"), encoding: .utf8)) ?? ""
            throw ExternalPeerError(
                description: "\(lastError.map { "\($0)" } ?? "nginx did not start")\n"
                    + "error.log:\n\(errorLog.suffix(2000))"
            )
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// The access log so far.
    func accessLog() -> [AccessLogEntry] {
        let text = (try? String(contentsOfFile: self.accessLogPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            // 3 1 "GET /hello HTTP/1.1" 200 HTTP/1.1
            let parts = line.split(separator: "\"")
            guard parts.count == 3 else { return nil }
            let head = parts[0].split(separator: " ")
            let tail = parts[2].split(separator: " ")
            guard head.count == 2, tail.count == 2,
                let connection = Int(head[0]), let requests = Int(head[1]), let status = Int(tail[0])
            else { return nil }
            return AccessLogEntry(
                connection: connection,
                requestOnConnection: requests,
                request: String(parts[1]),
                status: status,
                protocolVersion: String(tail[1])
            )
        }
    }

    /// The access log once it holds at least `count` entries (nginx writes a line after sending the response).
    func accessLog(atLeast count: Int, timeout: Duration = .seconds(5)) async throws -> [AccessLogEntry] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var entries = self.accessLog()
        while entries.count < count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            entries = self.accessLog()
        }
        return entries
    }

    /// Stops nginx and removes its directory.
    func stop() {
        self.peer.stop()
        try? FileManager.default.removeItem(at: self.directory)
    }
}

/// `openssl s_server -www`: answers any GET with an HTML status page over HTTP/1.0, then closes.
final class OpenSSLServer: Sendable {
    let port: Int
    let directory: URL
    let peer: PeerProcess

    var rootPEMPath: String { self.directory.appending(path: "root.pem").path }

    private init(port: Int, directory: URL, peer: PeerProcess) {
        self.port = port
        self.directory = directory
        self.peer = peer
    }

    /// Starts `openssl s_server` with `chain`; `extraArguments` are appended (for example `["-tls1_3"]`).
    static func start(chain: TestChain, extraArguments: [String] = []) async throws -> OpenSSLServer {
        let directory = try ExternalPeers.makeDirectory("s_server")
        do {
            try ExternalPeers.writeServerFiles(chain, to: directory)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return try await Self.start(
            directory: directory,
            chainFile: chain.presentedChain.count > 1,
            extraArguments: extraArguments
        )
    }

    /// Starts `openssl s_server` with files already written into `directory` (which it then owns): `leaf.pem`,
    /// `key.pem`, and `chain.pem` when `chainFile` is true. For certificates the factory cannot make (weak keys,
    /// SHA-1 signatures), which the tests issue with the `openssl` command.
    static func start(directory: URL, chainFile: Bool, extraArguments: [String] = []) async throws -> OpenSSLServer {
        let openssl = try ExternalPeers.findTool("openssl")
        do {
            let port = try ExternalPeers.freePort()
            var arguments = [
                "s_server", "-accept", "127.0.0.1:\(port)",
                "-cert", directory.appending(path: "leaf.pem").path,
                "-key", directory.appending(path: "key.pem").path,
                "-www",
            ]
            if chainFile {
                arguments += ["-cert_chain", directory.appending(path: "chain.pem").path]
            }
            let peer = try PeerProcess(
                name: "openssl s_server",
                executable: openssl,
                arguments: arguments + extraArguments,
                logURL: directory.appending(path: "s_server.out")
            )
            try await peer.waitUntilAccepting(port: port)
            return OpenSSLServer(port: port, directory: directory, peer: peer)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    func stop() {
        self.peer.stop()
        try? FileManager.default.removeItem(at: self.directory)
    }
}

/// mitmproxy (`mitmdump`), as a reverse proxy in front of an HTTPS upstream or as a forward proxy (its regular mode:
/// clients send it `CONNECT`): it presents certificates issued by its own CA, which no test trusts unless it adds that
/// CA on purpose. Its flow log, and the flow file it saves, show what reached it.
final class MitmproxyServer: Sendable {
    /// How mitmproxy is reached.
    enum Mode: Sendable {
        /// `--mode reverse:https://127.0.0.1:upstreamPort`: clients connect to mitmproxy as if it were the server.
        case reverse(upstreamPort: Int)
        /// `--mode regular`: an HTTP proxy; clients ask it for a `CONNECT` tunnel, and it intercepts the TLS inside.
        case regular
    }

    let port: Int
    let directory: URL
    let peer: PeerProcess
    let executable: URL

    /// mitmproxy's CA certificate (PEM), generated on its first start.
    var caCertificatePEMPath: String { self.directory.appending(path: "mitmproxy-ca-cert.pem").path }
    /// One line per request received from a client: `METHOD URL` (URL as forwarded upstream).
    var flowLogPath: String { self.directory.appending(path: "flows.log").path }
    /// One line per client TLS handshake event: `clienthello SNI`, `established SNI`, `failed SNI: error`.
    var tlsLogPath: String { self.directory.appending(path: "tls.log").path }
    /// mitmproxy's own record of every flow (`--save-stream-file`): requests with their paths, headers and bodies.
    var flowFilePath: String { self.directory.appending(path: "flows.mitm").path }

    private init(port: Int, directory: URL, peer: PeerProcess, executable: URL) {
        self.port = port
        self.directory = directory
        self.peer = peer
        self.executable = executable
    }

    /// The flows mitmproxy saved, as `mitmdump --no-server --rfile FILE --flow-detail 2` prints them: one line per
    /// request (`client: METHOD URL HTTP/1.1`, or `… HTTP/2.0`), its headers, then the response's status line.
    /// Empty when no request reached mitmproxy. Stops mitmproxy first: it writes its flow file through a buffer that
    /// is flushed when it exits.
    func savedFlows() async throws -> String {
        self.peer.stop()
        let size = (try? FileManager.default.attributesOfItem(atPath: self.flowFilePath)[.size] as? Int) ?? 0
        guard size > 0 else { return "" }
        let result = try await ExternalPeers.run(
            self.executable,
            [
                "--no-server", "--rfile", self.flowFilePath, "--flow-detail", "2", "--set",
                "confdir=\(self.directory.path)",
            ]
        )
        guard result.status == 0 else {
            throw ExternalPeerError(description: "mitmdump --rfile: \(result.stderr)")
        }
        return result.output
    }

    /// The requests mitmproxy received, `METHOD URL` each.
    var requestsSeen: [String] { Self.lines(self.flowLogPath) }
    /// The client TLS handshake events.
    var tlsEvents: [String] { Self.lines(self.tlsLogPath) }

    /// The TLS events once one matches `predicate`, or all of them when `timeout` passes.
    func tlsEvents(until predicate: (String) -> Bool, timeout: Duration = .seconds(5)) async throws -> [String] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var events = self.tlsEvents
        while !events.contains(where: predicate) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            events = self.tlsEvents
        }
        return events
    }

    /// mitmproxy's CA certificate.
    func caCertificate() throws -> Certificate {
        try Certificate(pemEncoded: String(contentsOfFile: self.caCertificatePEMPath, encoding: .utf8))
    }

    private static func lines(_ path: String) -> [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Starts `mitmdump --mode reverse:https://127.0.0.1:upstreamPort` on a free port. The upstream's certificate is
    /// not checked (`--ssl-insecure`): the proxy is the attacker here.
    ///
    /// - Parameter certificateAuthority: the CA mitmproxy issues its certificates from; `nil` lets mitmproxy generate
    ///   its own (RSA, with an extended key usage of serverAuth on the CA itself).
    static func start(upstreamPort: Int, certificateAuthority: TestIdentity? = nil) async throws -> MitmproxyServer {
        try await Self.start(mode: .reverse(upstreamPort: upstreamPort), certificateAuthority: certificateAuthority)
    }

    /// Starts `mitmdump` in `mode` on a free port of 127.0.0.1. The upstream's certificate is not checked
    /// (`--ssl-insecure`): the proxy is the attacker here. Every flow is saved to ``flowFilePath``.
    ///
    /// - Parameters:
    ///   - mode: A reverse proxy in front of one upstream, or a forward proxy (regular mode).
    ///   - certificateAuthority: the CA mitmproxy issues its certificates from; `nil` lets mitmproxy generate its own
    ///     (RSA, with an extended key usage of serverAuth on the CA itself).
    static func start(mode: Mode, certificateAuthority: TestIdentity? = nil) async throws -> MitmproxyServer {
        let venv = ExternalPeers.repositoryRoot.appending(path: ".venv/bin/mitmdump").path
        var candidates = [venv]
        if let override = ProcessInfo.processInfo.environment["BULWARK_MITMDUMP"] { candidates.insert(override, at: 0) }
        let mitmdump = try ExternalPeers.findTool("mitmdump", candidates: candidates)
        let directory = try ExternalPeers.makeDirectory("mitmproxy")
        let modeArgument =
            switch mode {
            case .reverse(let upstreamPort): "reverse:https://127.0.0.1:\(upstreamPort)"
            case .regular: "regular"
            }
        do {
            let port = try ExternalPeers.freePort()
            if let certificateAuthority {
                // mitmproxy loads `mitmproxy-ca.pem` (key and certificate) from its confdir instead of generating one.
                let ca = certificateAuthority.privateKeyPEM + "\n" + certificateAuthority.certificatePEM + "\n"
                try ca.write(to: directory.appending(path: "mitmproxy-ca.pem"), atomically: true, encoding: .utf8)
                try (certificateAuthority.certificatePEM + "\n")
                    .write(to: directory.appending(path: "mitmproxy-ca-cert.pem"), atomically: true, encoding: .utf8)
            }
            let flowLog = directory.appending(path: "flows.log").path
            let tlsLog = directory.appending(path: "tls.log").path
            _ = FileManager.default.createFile(atPath: flowLog, contents: nil)
            _ = FileManager.default.createFile(atPath: tlsLog, contents: nil)
            let peer = try PeerProcess(
                name: "mitmdump",
                executable: mitmdump,
                arguments: [
                    "--mode", modeArgument,
                    "--listen-host", "127.0.0.1", "--listen-port", "\(port)",
                    "--set", "confdir=\(directory.path)",
                    "--ssl-insecure",
                    "-s", ExternalPeers.scriptsDirectory.appending(path: "mitm_flowlog.py").path,
                    "--set", "flowlog=\(flowLog)",
                    "--set", "tlslog=\(tlsLog)",
                    "--save-stream-file", directory.appending(path: "flows.mitm").path,
                    "--quiet",
                ],
                logURL: directory.appending(path: "mitmdump.out")
            )
            let caPath = directory.appending(path: "mitmproxy-ca-cert.pem").path
            try await peer.waitUntilAccepting(port: port) { FileManager.default.fileExists(atPath: caPath) }
            return MitmproxyServer(port: port, directory: directory, peer: peer, executable: mitmdump)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    func stop() {
        self.peer.stop()
        try? FileManager.default.removeItem(at: self.directory)
    }
}
