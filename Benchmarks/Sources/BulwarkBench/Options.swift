import Foundation

/// Command-line options. `scripts/bench` passes most of them; run with `--help` for the list.
struct Options: Sendable {
    /// Short legs and 3 rounds (finishes well inside 3 minutes).
    var quick = false
    /// Alternating rounds per client comparison (median reported).
    var rounds = 5
    /// Seconds per measured leg of a request benchmark.
    var legSeconds = 5.0
    /// Seconds of warm-up per client before the first round.
    var warmupSeconds = 1.0
    /// Bytes of the streamed download.
    var downloadBytes = 256 * 1024 * 1024
    /// Where to write the JSON result.
    var jsonPath: String?
    /// Where to write the Markdown table (it is printed to standard output in any case).
    var markdownPath: String?
    /// The release `bulwark` CLI, for the limbo benchmark.
    var bulwarkBinary: String?
    /// The x509-limbo `limbo.json`.
    var limboPath: String?
    /// Only these benchmarks (names or prefixes, comma separated); nil for all.
    var only: [String]?
    /// `swift --version` text, for the machine description.
    var swiftVersion: String?
    /// Skip wrk even when it is installed.
    var noWrk = false
    /// Run the server and every client on NIO's singleton event loop group instead of one group each.
    var sharedEventLoops = false

    /// Child-process mode: one streamed download with one client, result as JSON on standard output.
    var childDownload: String?
    /// Child-process mode: a new client trusting the system roots, one request (see ``FirstRequest``).
    var childFirstRequest: String?
    var childPort = 0
    var childRootPEM: String?
    /// Child-process mode: one streamed upload with one client (see ``ChildDownload``).
    var childUpload: String?
    /// Bytes of the streamed upload.
    var uploadBytes = 256 * 1024 * 1024
    /// Uploads of `uploadBytes` one after another on the same connection in each child process (one round's
    /// sample): one 256 MiB upload takes about 75 ms here, too short a sample to decide a goal of 1.0 ×.
    var uploadTransfers = 4
    /// Child-process mode: the memory of idle pooled connections and in-flight requests (see ``MemoryChild``).
    var childMemory: String?
    /// Connections (and concurrent requests) of the memory benchmark.
    var memoryConnections = 1000
    /// How long the server holds each request of the memory benchmark (`/slow/MS`), milliseconds.
    var memorySlowMilliseconds = 8000

    /// Profiling mode (see `TrustProfile`): one piece of the trust path, `profileIterations` times.
    var profileTrust: String?
    var profileIterations = 1000
    /// Profiling mode: only this client's new-connection legs (`bulwark`, `bulwark-pinned`, `ahc`, ...), no result.
    var profileNewConnections: String?
    /// Instruction counting (see `InstructionCount`): the server's directory, and the client to count.
    var instructionsServer: String?
    var instructionsClient: String?
    var instructionsDirectory: String?
    var handshakes = 200

    func selected(_ name: String) -> Bool {
        guard let only = self.only else { return true }
        return only.contains { name == $0 || name.hasPrefix($0) }
    }

    static let usage = """
        usage: BulwarkBench [--quick] [--rounds N] [--seconds S] [--json FILE] [--markdown FILE]
                            [--bulwark-bin PATH] [--limbo PATH] [--only a,b,...] [--swift-version TEXT] [--no-wrk]
                            [--shared-event-loops] [--download-bytes N] [--upload-bytes N]
                            [--upload-transfers N]
                            [--memory-connections N] [--memory-slow-ms MS]
        Benchmarks Bulwark against AsyncHTTPClient on one local TLS server (HTTP/1.1), alternating the two
        clients in rounds and reporting medians. Names: keepalive-c1 keepalive-c32 newconn newconn-pinned
        newconn-cached newconn-pinned-cached newconn-revocation newconn-ct trust-eval download hostmatch-10 hostmatch-1000 hostmatch-10000 limbo
        encode-html h2-c1 h2-c32 upload memory-idle proxy-keepalive first-request cli-fetch (the newconn rows run
        together, in the same rounds, then the pinned client, AHC and the pinned client with CT take one
        connection each in turn, in a random order each turn, for three legs' time;
        proxy-keepalive needs squid, and reports that it did not run without it).
        By default the server and each client run on their own event loop group; --shared-event-loops puts them
        all on NIO's singleton group (what an app using the defaults does).
        BulwarkBench --profile-trust KIND [--iterations N] times one piece of the handshake's trust path with no
        server (KIND: all, signatures, convert, evaluate, evaluate-pinned, evaluate-revocation, callback,
        callback-pinned).
        BulwarkBench --only newconn --profile-newconn LABEL runs only that client's new-connection legs (LABEL:
        bulwark, bulwark-pinned, ahc, bulwark-cached, bulwark-pinned-cached), for perf; it reports no result.
        BulwarkBench --instructions-server DIR, then BulwarkBench --instructions CLIENT --handshakes N --server DIR
        under callgrind: N new connections between two marker functions (scripts/profile-newconn --instructions).
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var explicitRounds: Int?
        var explicitSeconds: Double?
        var iterator = arguments.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let next = iterator.next() else { throw BenchError("\(flag) needs a value") }
            return next
        }
        while let argument = iterator.next() {
            switch argument {
            case "--quick": options.quick = true
            case "--rounds":
                guard let n = Int(try value(argument)), n >= 1 else {
                    throw BenchError("--rounds needs a positive integer")
                }
                explicitRounds = n
            case "--seconds":
                guard let s = Double(try value(argument)), s > 0 else {
                    throw BenchError("--seconds needs a positive number")
                }
                explicitSeconds = s
            case "--json": options.jsonPath = try value(argument)
            case "--markdown": options.markdownPath = try value(argument)
            case "--bulwark-bin": options.bulwarkBinary = try value(argument)
            case "--limbo": options.limboPath = try value(argument)
            case "--only": options.only = try value(argument).split(separator: ",").map(String.init)
            case "--swift-version": options.swiftVersion = try value(argument)
            case "--no-wrk": options.noWrk = true
            case "--shared-event-loops": options.sharedEventLoops = true
            case "--download-bytes":
                guard let n = Int(try value(argument)), n > 0 else {
                    throw BenchError("--download-bytes needs a positive integer")
                }
                options.downloadBytes = n
            case "--child-download": options.childDownload = try value(argument)
            case "--child-first-request": options.childFirstRequest = try value(argument)
            case "--child-port": options.childPort = Int(try value(argument)) ?? 0
            case "--child-root": options.childRootPEM = try value(argument)
            case "--child-upload": options.childUpload = try value(argument)
            case "--child-memory": options.childMemory = try value(argument)
            case "--upload-bytes":
                guard let n = Int(try value(argument)), n > 0 else {
                    throw BenchError("--upload-bytes needs a positive integer")
                }
                options.uploadBytes = n
            case "--upload-transfers":
                guard let n = Int(try value(argument)), n > 0 else {
                    throw BenchError("--upload-transfers needs a positive integer")
                }
                options.uploadTransfers = n
            case "--memory-connections":
                guard let n = Int(try value(argument)), n >= 2 else {
                    throw BenchError("--memory-connections needs an integer of at least 2")
                }
                options.memoryConnections = n
            case "--memory-slow-ms":
                guard let n = Int(try value(argument)), n > 0 else {
                    throw BenchError("--memory-slow-ms needs a positive integer")
                }
                options.memorySlowMilliseconds = n
            case "--profile-trust": options.profileTrust = try value(argument)
            case "--profile-newconn": options.profileNewConnections = try value(argument)
            case "--instructions-server": options.instructionsServer = try value(argument)
            case "--instructions": options.instructionsClient = try value(argument)
            case "--server": options.instructionsDirectory = try value(argument)
            case "--handshakes":
                guard let n = Int(try value(argument)), n > 0 else { throw BenchError("--handshakes needs N > 0") }
                options.handshakes = n
            case "--iterations":
                guard let n = Int(try value(argument)), n >= 0 else { throw BenchError("--iterations needs a count") }
                options.profileIterations = n
            case "-h", "--help":
                print(Self.usage)
                exit(0)
            default:
                throw BenchError("unknown argument \(argument)\n\(Self.usage)")
            }
        }
        if options.quick {
            options.rounds = 3
            options.legSeconds = 1.5
            options.warmupSeconds = 0.5
        }
        if let explicitRounds { options.rounds = explicitRounds }
        if let explicitSeconds { options.legSeconds = explicitSeconds }
        return options
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
