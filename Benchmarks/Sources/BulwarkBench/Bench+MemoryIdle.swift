import Foundation

extension Bench {
    /// `memory-idle`: bytes per idle pooled connection and per in-flight request, `--memory-connections` (1,000) of
    /// each, in a fresh child process per client and round (see ``MemoryChild`` for the stages). The figure is malloc's
    /// bytes in use (glibc `malloc_info`), which falls again when requests end, unlike RSS; RSS growth with the
    /// requests in flight is reported next to it.
    mutating func memoryIdle() async throws {
        let connections = self.options.memoryConnections
        let slow = self.options.memorySlowMilliseconds
        let rounds = self.options.quick ? 1 : min(self.options.rounds, 3)
        var runs: [String: [MemoryChild.Result]] = [:]
        let labels = ["bulwark", "ahc"]
        for round in 0..<rounds {
            for label in round % 2 == 0 ? labels : labels.reversed() {
                let run = try await MemoryChild.spawn(
                    client: label,
                    server: self.server,
                    rootPEMPath: self.rootPEMPath,
                    connections: connections,
                    slowMilliseconds: slow
                )
                guard run.pooled >= connections * 9 / 10 else {
                    throw BenchError(
                        "memory-idle: \(label) kept \(run.pooled) of \(connections) connections open after the requests"
                    )
                }
                runs[label, default: []].append(run)
                log(
                    "  memory-idle round \(round + 1)/\(rounds) \(label): \(run.pooled) idle connections, "
                        + "\(format(run.idleBytesPerConnection / 1024, digits: 1)) KiB each; \(run.connections) requests in flight, "
                        + "\(format(run.inFlightBytesPerRequest / 1024, digits: 1)) KiB each with their connections "
                        + "(RSS \(format(run.inFlightRSSBytesPerRequest / 1024, digits: 1)) KiB); baseline malloc "
                        + "\(format(Double(run.baseline.mallocInUseBytes) / 1_048_576, digits: 1)) MiB, RSS "
                        + "\(format(Double(run.baseline.rssKiB) / 1024, digits: 1)) MiB"
                )
            }
        }
        let idle = { (label: String) in median(runs[label]!.map(\.idleBytesPerConnection)) }
        let inFlight = { (label: String) in median(runs[label]!.map(\.inFlightBytesPerRequest)) }
        let inFlightRSS = { (label: String) in median(runs[label]!.map(\.inFlightRSSBytesPerRequest)) }
        var result = BenchResult(name: "memory-idle", unit: "B/conn", bulwark: idle("bulwark"), ahc: idle("ahc"))
        result.higherIsBetter = false
        let inFlightRatio = inFlight("bulwark") / inFlight("ahc")
        result.goal = "ratio ≤ 1.0 (idle connection and in-flight request)"
        result.met = (result.ratio ?? .infinity) <= 1.0 && inFlightRatio <= 1.0
        result.extra = [
            ("connections", .int(connections)),
            ("rounds", .int(rounds)),
            ("bulwark_in_flight_bytes_per_request", .number(inFlight("bulwark").rounded())),
            ("ahc_in_flight_bytes_per_request", .number(inFlight("ahc").rounded())),
            ("in_flight_ratio", .number((inFlightRatio * 1000).rounded() / 1000)),
            ("bulwark_in_flight_rss_bytes_per_request", .number(inFlightRSS("bulwark").rounded())),
            ("ahc_in_flight_rss_bytes_per_request", .number(inFlightRSS("ahc").rounded())),
            ("bulwark_idle_rounds", .array(runs["bulwark"]!.map { .number($0.idleBytesPerConnection.rounded()) })),
            ("ahc_idle_rounds", .array(runs["ahc"]!.map { .number($0.idleBytesPerConnection.rounded()) })),
            ("bulwark_pooled", .array(runs["bulwark"]!.map { .int($0.pooled) })),
            ("ahc_pooled", .array(runs["ahc"]!.map { .int($0.pooled) })),
        ]
        result.details =
            "malloc bytes in use (glibc malloc_info) per idle pooled connection, \(connections) connections over "
            + "HTTP/1.1 + TLS 1.3, child process per run: \(format(idle("bulwark") / 1024, digits: 1)) / "
            + "\(format(idle("ahc") / 1024, digits: 1)) KiB; per in-flight request (its connection included, "
            + "\(connections) held by the server at once) \(format(inFlight("bulwark") / 1024, digits: 1)) / "
            + "\(format(inFlight("ahc") / 1024, digits: 1)) KiB (ratio \(format(inFlightRatio, digits: 2))), RSS growth "
            + "\(format(inFlightRSS("bulwark") / 1024, digits: 1)) / \(format(inFlightRSS("ahc") / 1024, digits: 1)) KiB "
            + "(Bulwark / AHC); baseline after one warm-up request, idle after all responses + 500 ms, sockets counted"
        self.results.append(result)
    }
}
