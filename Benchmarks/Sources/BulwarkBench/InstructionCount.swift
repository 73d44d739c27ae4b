import Bulwark
import BulwarkTestSupport
import Foundation
import NIOPosix
import X509

/// Instruction counts per handshake, for `valgrind --tool=callgrind` (see `scripts/profile-newconn --instructions`).
///
/// - `--instructions-server DIR`: starts the benchmark's TLS server (a fresh test chain, HTTP/1.1) on one event
///   loop, writes `port`, `root.pem`, `intermediate.pem` and `leaf.pem` into DIR, and serves until its standard input closes.
///   It runs in a process of its own, so that the counted process holds the client alone.
/// - `--instructions CLIENT --handshakes N --server DIR`: makes 20 warm-up requests, then N requests on new
///   connections (`connection: close`: a TCP connection and a full TLS handshake each), between two marker
///   functions. `callgrind --dump-before=bulwark_bench_instructions_start
///   --dump-before=bulwark_bench_instructions_stop` writes exactly those N in the second dump. CLIENT: `bulwark`, `bulwark-pinned`,
///   `bulwark-cached`, `bulwark-pinned-cached`, `ahc`, or `evaluate-pinned` / `evaluate` (N calls of
///   `ServerTrustManager.evaluate` on the presented chain, no connection).
enum InstructionCount {
    /// Runs an instruction-counting mode to its end and exits, if the arguments ask for one; returns otherwise.
    ///
    /// The mode runs in a detached task while the main thread waits on a semaphore, and the process exits from
    /// here: an async main parks the main thread in `dispatch_main`, whose `sigsuspend` valgrind 3.19 cannot run
    /// ("VALGRIND INTERNAL ERROR: Valgrind received a signal 11", in every tool, for any Swift program that
    /// suspends its async main).
    static func runIfRequested(_ arguments: [String]) {
        guard arguments.contains("--instructions") || arguments.contains("--instructions-server") else { return }
        let status = LockedStatus()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                let options = try Options.parse(Array(arguments.dropFirst()))
                if let directory = options.instructionsServer {
                    try await Self.serve(directory: directory)
                } else if let client = options.instructionsClient {
                    try await Self.run(
                        client: client,
                        handshakes: options.handshakes,
                        directory: options.instructionsDirectory ?? "."
                    )
                }
            } catch {
                FileHandle.standardError.write(Data("BulwarkBench: \(error)\n".utf8))
                status.set(1)
            }
            done.signal()
        }
        done.wait()
        exit(status.get())
    }

    private final class LockedStatus: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Int32 = 0
        func set(_ value: Int32) { self.lock.withLock { self.value = value } }
        func get() -> Int32 { self.lock.withLock { self.value } }
    }

    static func serve(directory: String) async throws {
        let chain = try BenchTransparency.chain()
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await TestHTTPSServer.start(
            configuration: .init(chain: chain, alpn: ["http/1.1"]),
            eventLoopGroup: loops
        )
        try chain.root.certificatePEM.write(toFile: directory + "/root.pem", atomically: true, encoding: .utf8)
        try chain.intermediate!.certificatePEM.write(
            toFile: directory + "/intermediate.pem",
            atomically: true,
            encoding: .utf8
        )
        try chain.leaf.certificatePEM.write(toFile: directory + "/leaf.pem", atomically: true, encoding: .utf8)
        // Written last: the script waits for it.
        try "\(server.port)\n".write(toFile: directory + "/port", atomically: true, encoding: .utf8)
        // Until the script closes our standard input (a blocking read, off the cooperative pool).
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                _ = FileHandle.standardInput.readDataToEndOfFile()
                continuation.resume()
            }
        }
        try await server.shutdown()
        try await loops.shutdownGracefully()
    }

    static func run(client label: String, handshakes: Int, directory: String) async throws {
        guard let portText = try? String(contentsOfFile: directory + "/port", encoding: .utf8),
            let port = Int(portText.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw BenchError("--instructions: no server in \(directory) (start --instructions-server first)") }
        let rootPEM = try String(contentsOfFile: directory + "/root.pem", encoding: .utf8)
        let root = try Certificate(pemEncoded: rootPEM)
        let intermediate = try Certificate(
            pemEncoded: try String(contentsOfFile: directory + "/intermediate.pem", encoding: .utf8)
        )
        let target = Target(port: port)
        // The benchmark's evaluators: full validation against the root, or SPKI pins on the intermediate with the
        // root's key as the backup pin.
        let plain: any ServerTrustEvaluating = .default(roots: .custom([root]))
        let pinned: any ServerTrustEvaluating = .publicKeys(
            try PinSet([Pin.publicKey(of: intermediate), Pin.publicKey(of: root)]),
            roots: .custom([root])
        )
        if label.hasPrefix("evaluate") {
            let leaf = try Certificate(pemEncoded: try String(contentsOfFile: directory + "/leaf.pem", encoding: .utf8))
            let presented = [leaf, intermediate]
            try await Self.evaluations(label == "evaluate-pinned" ? pinned : plain, handshakes, presented)
            return
        }
        let client: any BenchClient
        switch label {
        case "ahc":
            client = try AHCBenchClient(target: target, rootPEM: rootPEM, maximumConnections: 1)
        case "bulwark", "bulwark-pinned", "bulwark-cached", "bulwark-pinned-cached", "bulwark-pinned-ct":
            let evaluator = label.hasPrefix("bulwark-pinned") ? pinned : plain
            client = try BulwarkBenchClient(
                label: label,
                target: target,
                evaluator: label.hasSuffix("-ct") ? BenchTransparency.enforcing(evaluator) : evaluator,
                maximumConnections: 1,
                decisionCache: label.hasSuffix("-cached")
            )
        default:
            throw BenchError("--instructions: unknown client \(label)")
        }
        for _ in 0..<20 {
            _ = try await client.get("/bytes/1024", close: true)
        }
        var sink = instructionsStart(handshakes)
        for _ in 0..<handshakes {
            sink &+= try await client.get("/bytes/1024", close: true)
        }
        sink = instructionsStop(sink)
        blackHole(sink)
        try await client.shutdown()
        log("instructions \(label): \(handshakes) handshakes counted")
    }

    /// N calls of `ServerTrustManager.evaluate` on the server's presented chain, parsed once.
    private static func evaluations(
        _ evaluator: any ServerTrustEvaluating,
        _ count: Int,
        _ chain: [Certificate]
    ) async throws {
        let manager = try ServerTrustManager(evaluators: ["localhost": evaluator])
        var sink = 0
        for _ in 0..<20 {
            sink &+= await manager.evaluate(chain, forHost: "localhost").isTrusted ? 1 : 0
        }
        sink = instructionsStart(sink)
        for _ in 0..<count {
            sink &+= await manager.evaluate(chain, forHost: "localhost").isTrusted ? 1 : 0
        }
        sink = instructionsStop(sink)
        guard sink == count + 20 else { throw BenchError("--instructions: a chain was refused") }
        log("instructions evaluate: \(count) evaluations counted")
    }
}

/// Marks the start of the counted window (callgrind `--dump-before`).
@_silgen_name("bulwark_bench_instructions_start")
@inline(never)
@_optimize(none)
func instructionsStart(_ value: Int) -> Int { value &+ 1 }

/// Marks the end of the counted window (callgrind `--dump-before`).
@_silgen_name("bulwark_bench_instructions_stop")
@inline(never)
@_optimize(none)
func instructionsStop(_ value: Int) -> Int { value &- 1 }
