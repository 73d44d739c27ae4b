import Bulwark
import BulwarkTestSupport
import Foundation
import NIOPosix
import X509

/// Counts per keep-alive request, for `scripts/profile-keepalive`: instructions (callgrind) and system calls
/// (`strace -c`) of a client sending requests on connections it already holds, and of the server answering them.
///
/// - `--keepalive-server DIR --protocol h1|h2 [--window START,COUNT]`: starts a server on one event loop in a process
///   of its own and writes `port` and `root.pem` into DIR; serves until its standard input closes. `h1` is the
///   benchmark's test server (HTTP/1.1, `/bytes/1024`); `h2` is ``BenchHTTP2Server`` (the h2 rows' server: NIOHTTP2's
///   defaults but the RST_STREAM limit). With `--window`, the h2 server calls the marker functions when its
///   START-th request has been answered and again COUNT requests later, so that callgrind's `--dump-before` counts
///   exactly what the server spent on those COUNT requests.
/// - `--keepalive-instructions CLIENT --requests N --concurrency C --protocol h1|h2 --server DIR`: CLIENT
///   (`bulwark` or `ahc`) sends 20 × C warm-up requests (GET `/bytes/1024`), then N requests from C tasks, between
///   the two marker functions. For h1 each task has a connection of its own (C connections, as the keep-alive rows);
///   for h2 every request is a stream of one connection (as the h2 rows).
enum KeepAliveInstructionCount {
    /// Runs a keep-alive counting mode to its end and exits, if the arguments ask for one; returns otherwise. As in
    /// ``InstructionCount``, the main thread blocks on a semaphore (valgrind cannot run a suspended async main).
    static func runIfRequested(_ arguments: [String]) {
        guard arguments.contains("--keepalive-instructions") || arguments.contains("--keepalive-server") else {
            return
        }
        let failed = NIOLockedFlag()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                let options = try Arguments(Array(arguments.dropFirst()))
                if let directory = options.serverDirectory {
                    try await Self.serve(directory: directory, options: options)
                } else {
                    try await Self.run(options)
                }
            } catch {
                FileHandle.standardError.write(Data("BulwarkBench: \(error)\n".utf8))
                failed.set()
            }
            done.signal()
        }
        done.wait()
        exit(failed.get() ? 1 : 0)
    }

    struct Arguments {
        var serverDirectory: String?
        var client: String?
        var directory = "."
        var http2 = false
        var requests = 2000
        var concurrency = 1
        var window: (start: Int, count: Int)?

        init(_ arguments: [String]) throws {
            var iterator = arguments.makeIterator()
            func value(_ name: String) throws -> String {
                guard let value = iterator.next() else { throw BenchError("\(name) needs a value") }
                return value
            }
            func number(_ name: String) throws -> Int {
                guard let number = Int(try value(name)), number > 0 else {
                    throw BenchError("\(name) needs a positive number")
                }
                return number
            }
            while let argument = iterator.next() {
                switch argument {
                case "--keepalive-server": self.serverDirectory = try value(argument)
                case "--keepalive-instructions": self.client = try value(argument)
                case "--server": self.directory = try value(argument)
                case "--requests": self.requests = try number(argument)
                case "--concurrency": self.concurrency = try number(argument)
                case "--protocol":
                    switch try value(argument) {
                    case "h1": self.http2 = false
                    case "h2": self.http2 = true
                    default: throw BenchError("--protocol: h1 or h2")
                    }
                case "--window":
                    let parts = try value(argument).split(separator: ",").compactMap { Int($0) }
                    guard parts.count == 2 else { throw BenchError("--window START,COUNT") }
                    self.window = (parts[0], parts[1])
                default: throw BenchError("unknown argument \(argument)")
                }
            }
        }
    }

    static func serve(directory: String, options: Arguments) async throws {
        let chain = try TestChain.make(host: "localhost")
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let port: Int
        let shutdown: @Sendable () async throws -> Void
        if options.http2 {
            let server = try await BenchHTTP2Server.start(
                chain: chain,
                group: loops,
                raisedLimits: ["reset"],
                markerWindow: options.window
            )
            port = server.port
            shutdown = { try await server.shutdown() }
        } else {
            let server = try await TestHTTPSServer.start(
                configuration: .init(chain: chain, alpn: ["http/1.1"]),
                eventLoopGroup: loops
            )
            port = server.port
            shutdown = { try await server.shutdown() }
        }
        try chain.root.certificatePEM.write(toFile: directory + "/root.pem", atomically: true, encoding: .utf8)
        // Written last: the script waits for it.
        try "\(port)\n".write(toFile: directory + "/port", atomically: true, encoding: .utf8)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                _ = FileHandle.standardInput.readDataToEndOfFile()
                continuation.resume()
            }
        }
        try await shutdown()
        try await loops.shutdownGracefully()
    }

    static func run(_ options: Arguments) async throws {
        let directory = options.directory
        guard let portText = try? String(contentsOfFile: directory + "/port", encoding: .utf8),
            let port = Int(portText.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw BenchError("--keepalive-instructions: no server in \(directory)") }
        let rootPEM = try String(contentsOfFile: directory + "/root.pem", encoding: .utf8)
        let root = try Certificate(pemEncoded: rootPEM)
        let target = Target(port: port)
        let concurrency = options.concurrency
        let connections = options.http2 ? 32 : concurrency
        let client: any BenchClient
        switch options.client {
        case "ahc":
            client = try AHCBenchClient(
                target: target,
                rootPEM: rootPEM,
                maximumConnections: connections,
                httpVersion: options.http2 ? .automatic : .http1Only
            )
        case "bulwark":
            client = try BulwarkBenchClient(
                label: "bulwark",
                target: target,
                evaluator: .default(roots: .custom([root])),
                maximumConnections: connections,
                applicationProtocols: options.http2 ? ["h2", "http/1.1"] : ["http/1.1"]
            )
        default:
            throw BenchError("--keepalive-instructions: bulwark or ahc")
        }
        try await Self.requests(client, count: 20 * concurrency, concurrency: concurrency)
        let expected = options.http2 ? "HTTP/2.0" : "HTTP/1.1"
        guard client.lastResponseVersion() == expected else {
            throw BenchError("--keepalive-instructions: \(client.label) read \(client.lastResponseVersion())")
        }
        var sink = instructionsStart(options.requests)
        try await Self.requests(client, count: options.requests, concurrency: concurrency)
        sink = instructionsStop(sink)
        blackHole(sink)
        try await client.shutdown()
        log("keep-alive \(client.label): \(options.requests) requests counted at concurrency \(concurrency)")
    }

    /// `count` GETs of `/bytes/1024` from `concurrency` tasks (the first tasks take one more when it does not divide).
    private static func requests(_ client: any BenchClient, count: Int, concurrency: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<concurrency {
                let share = count / concurrency + (task < count % concurrency ? 1 : 0)
                group.addTask {
                    for _ in 0..<share {
                        let bytes = try await client.get("/bytes/1024", close: false)
                        guard bytes == 1024 else { throw BenchError("\(client.label): \(bytes) bytes") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}

/// A flag set from one thread and read from another.
final class NIOLockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { self.lock.withLock { self.value = true } }
    func get() -> Bool { self.lock.withLock { self.value } }
}
