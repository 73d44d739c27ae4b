import BulwarkTestSupport
import Foundation
import NIOCore

/// What a leg reads from the server it runs against: the test server, or the h2 rows' own server.
protocol LegServer: Sendable {
    func resetRecording()
    var acceptedConnections: Int { get }
    var completedHandshakes: Int { get }
    /// Requests received completely since the last reset.
    var receivedRequestCount: Int { get }
    /// The connections those requests came on, when the server records them.
    var requestConnectionCount: Int? { get }
}

extension LegServer {
    var requestConnectionCount: Int? { nil }
}

extension TestHTTPSServer: LegServer {
    var receivedRequestCount: Int { self.requests.count }
    var requestConnectionCount: Int? { Set(self.requests.map(\.connectionID)).count }
}

/// What one measured leg (one client, one round) did.
struct LegResult: Sendable {
    let requests: Int
    let seconds: Double
    /// Per-request latencies in nanoseconds, sorted.
    let latencies: [UInt64]
    /// TCP connections the server accepted during the leg.
    let connectionsAccepted: Int
    /// TLS handshakes the server completed during the leg.
    let handshakes: Int
    /// Requests the server received completely during the leg.
    let serverRequests: Int
    /// CPU time (user + system) of the whole process during the leg: the client's and the server's, which serves
    /// every client alike, so the difference between clients is the clients' own. Less sensitive to other load on
    /// the machine than the rate, which also counts the time spent waiting for a core.
    let cpuSeconds: Double
    /// CPU time of the server's event-loop threads during the leg (`nil` with `--shared-event-loops`, where the
    /// server and the clients share threads). The process's CPU less this is the client's own: its event loops and
    /// its tasks.
    let serverCPUSeconds: Double?

    /// Process CPU per request, in microseconds.
    var cpuMicrosecondsPerRequest: Double { self.cpuSeconds * 1e6 / Double(self.requests) }
    /// The client's CPU per request (process less server threads), in microseconds.
    var clientCPUMicrosecondsPerRequest: Double? {
        self.serverCPUSeconds.map { (self.cpuSeconds - $0) * 1e6 / Double(self.requests) }
    }

    var rate: Double { Double(self.requests) / self.seconds }
    var p50Milliseconds: Double { Double(quantile(sorted: self.latencies, 0.50)) / 1e6 }
    var p99Milliseconds: Double { Double(quantile(sorted: self.latencies, 0.99)) / 1e6 }
}

/// Runs `concurrency` tasks, each sending GETs back to back until `seconds` have passed; checks every body length.
/// `serverClocks`: the server's threads, whose CPU the leg reports apart (see ``LegResult/serverCPUSeconds``).
func runLeg(
    client: any BenchClient,
    server: any LegServer,
    serverClocks: ThreadCPUClocks? = nil,
    path: String,
    expectedBytes: Int,
    concurrency: Int,
    seconds: Double,
    close: Bool
) async throws -> LegResult {
    server.resetRecording()
    let cpuStart = processCPUSeconds()
    let serverCPUStart = serverClocks?.seconds() ?? 0
    let start = nowNanos()
    let deadline = start + UInt64(seconds * 1e9)
    let perTask = try await withThrowingTaskGroup(of: [UInt64].self) { group in
        for _ in 0..<concurrency {
            group.addTask {
                var latencies: [UInt64] = []
                latencies.reserveCapacity(1 << 16)
                while nowNanos() < deadline {
                    latencies.append(try await timedGet(client, path, expectedBytes: expectedBytes, close: close))
                }
                return latencies
            }
        }
        var all: [[UInt64]] = []
        for try await latencies in group { all.append(latencies) }
        return all
    }
    let elapsed = Double(nowNanos() - start) / 1e9
    let cpu = processCPUSeconds() - cpuStart
    let serverCPU = serverClocks.map { $0.seconds() - serverCPUStart }
    let latencies = perTask.flatMap { $0 }.sorted()
    guard !latencies.isEmpty else { throw BenchError("\(client.label): no request completed in \(seconds) s") }
    return LegResult(
        requests: latencies.count,
        seconds: elapsed,
        latencies: latencies,
        connectionsAccepted: server.acceptedConnections,
        handshakes: server.completedHandshakes,
        serverRequests: server.receivedRequestCount,
        cpuSeconds: cpu,
        serverCPUSeconds: serverCPU
    )
}

/// One GET of `path` by `client`, checked to return `expectedBytes`: its latency in nanoseconds.
func timedGet(_ client: any BenchClient, _ path: String, expectedBytes: Int, close: Bool) async throws -> UInt64 {
    let t0 = nowNanos()
    let count = try await client.get(path, close: close)
    let t1 = nowNanos()
    guard count == expectedBytes else {
        throw BenchError("\(client.label): \(path) returned \(count) bytes, expected \(expectedBytes)")
    }
    return t1 - t0
}

/// The CPU-time clocks of a set of threads of this process (`pthread_getcpuclockid`), read from any thread.
struct ThreadCPUClocks: Sendable {
    let clocks: [clockid_t]

    /// The clocks of every thread of `group` (each reads its own on its event loop).
    static func of(_ group: any EventLoopGroup) async throws -> ThreadCPUClocks {
        var clocks: [clockid_t] = []
        for loop in group.makeIterator() {
            clocks.append(
                try await loop.submit {
                    var clock = clockid_t()
                    guard pthread_getcpuclockid(pthread_self(), &clock) == 0 else {
                        throw BenchError("pthread_getcpuclockid failed on a server event loop")
                    }
                    return clock
                }.get()
            )
        }
        return ThreadCPUClocks(clocks: clocks)
    }

    /// The threads' CPU time so far, summed, in seconds.
    func seconds() -> Double {
        self.clocks.reduce(0) { total, clock in
            var time = timespec()
            clock_gettime(clock, &time)
            return total + Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
    }
}

/// User + system CPU time this process has used, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Per-client results of an alternating comparison, one entry per round.
struct RoundSeries: Sendable {
    var legs: [String: [LegResult]] = [:]

    func rates(_ label: String) -> [Double] { (self.legs[label] ?? []).map(\.rate) }
    func medianRate(_ label: String) -> Double { median(self.rates(label)) }
    func medianP50(_ label: String) -> Double { median((self.legs[label] ?? []).map(\.p50Milliseconds)) }
    func medianP99(_ label: String) -> Double { median((self.legs[label] ?? []).map(\.p99Milliseconds)) }
    func medianCPUPerRequest(_ label: String) -> Double {
        median((self.legs[label] ?? []).map(\.cpuMicrosecondsPerRequest))
    }
    /// `nil` when the server's threads were not measured apart.
    func medianClientCPUPerRequest(_ label: String) -> Double? {
        let values = (self.legs[label] ?? []).compactMap(\.clientCPUMicrosecondsPerRequest)
        return values.isEmpty ? nil : median(values)
    }
    /// Median over rounds of (label's rate / reference's rate in the same round): robust against drift in load.
    func medianRoundRatio(_ label: String, over reference: String) -> Double {
        let a = self.rates(label)
        let b = self.rates(reference)
        return median(zip(a, b).map { $0 / $1 })
    }
}

/// Runs `rounds` rounds; each round runs every client once, in an order that changes every round (A B, B A, ... for
/// two clients; a rotation by one for more), so that no client always runs in the same position.
func alternate(
    _ name: String,
    clients: [any BenchClient],
    rounds: Int,
    leg: (any BenchClient) async throws -> LegResult
) async throws -> RoundSeries {
    var series = RoundSeries()
    for round in 0..<rounds {
        // Two clients: A B, B A, ... More: the order rotates by one each round, so that over as many rounds as there
        // are clients each client runs once in each position (reversing would keep the middle one in the middle).
        let order: [any BenchClient]
        if clients.count <= 2 {
            order = round % 2 == 0 ? clients : clients.reversed()
        } else {
            let shift = round % clients.count
            order = Array(clients[shift...] + clients[..<shift])
        }
        for client in order {
            let result = try await leg(client)
            // Every counted response came from the server (no request was served from anywhere else).
            guard result.serverRequests >= result.requests else {
                throw BenchError(
                    "\(name): \(client.label) counted \(result.requests) responses but the server saw \(result.serverRequests) requests"
                )
            }
            series.legs[client.label, default: []].append(result)
            var clientCPU = ""
            if let perRequest = result.clientCPUMicrosecondsPerRequest {
                clientCPU = " (client \(format(perRequest, digits: 0)))"
            }
            log(
                "  \(name) round \(round + 1)/\(rounds) \(client.label): \(format(result.rate, digits: 0)) req/s, "
                    + "p50 \(format(result.p50Milliseconds, digits: 3)) ms, p99 \(format(result.p99Milliseconds, digits: 3)) ms, "
                    + "\(result.requests) requests, \(result.connectionsAccepted) new connections, "
                    + "process CPU \(format(result.cpuMicrosecondsPerRequest, digits: 0)) µs/request\(clientCPU), "
                    + "process RSS \(format(Double(procStatusKiB("VmRSS") ?? 0) / 1024, digits: 0)) MiB"
            )
        }
    }
    return series
}

/// Warm-up: the same load as a leg, results discarded, so pools hold warm connections before the first round.
func warmUp(
    _ clients: [any BenchClient],
    server: any LegServer,
    concurrency: Int,
    seconds: Double,
    close: Bool
) async throws {
    for client in clients {
        _ = try await runLeg(
            client: client,
            server: server,
            path: "/bytes/1024",
            expectedBytes: 1024,
            concurrency: concurrency,
            seconds: seconds,
            close: close
        )
    }
}
