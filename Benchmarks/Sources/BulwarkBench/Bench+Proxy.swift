import AsyncHTTPClient
import Bulwark
import Foundation

extension Bench {
    /// `proxy-keepalive` (issue 19): keep-alive GETs of 1 KiB at concurrency 1 through a real squid on loopback, each
    /// client in one CONNECT tunnel it keeps: Bulwark with `configuration.proxy = .http(...)`, AsyncHTTPClient with
    /// `Proxy.server(host:port:)`, the same squid, the same server, alternating rounds. Without squid the row says it
    /// did not run and why; it never carries a number it did not measure.
    mutating func proxyKeepAlive() async throws {
        let name = "proxy-keepalive"
        guard let squidPath = SquidProcess.find() else {
            var result = BenchResult(name: name, unit: "req/s", bulwark: nil, ahc: nil)
            result.goal = "ratio ≥ 1.0"
            result.details = "not run: squid is not installed (Debian package `squid`; scripts/test installs it)"
            result.extra = [("not_run", .string("squid is not installed"))]
            log("   \(name): not run, squid is not installed")
            self.results.append(result)
            return
        }
        let squid = try await SquidProcess.start(squidPath)
        defer { squid.stop() }
        let version = SquidProcess.version(squidPath)
        let proxyURL = URL(string: "http://127.0.0.1:\(squid.port)")!
        let makeClients = { [self] () throws -> [any BenchClient] in
            [
                try BulwarkBenchClient(
                    label: "bulwark",
                    target: self.target,
                    evaluator: self.defaultEvaluator,
                    maximumConnections: 32,
                    sharedEventLoops: self.options.sharedEventLoops,
                    proxy: .http(proxyURL)
                ),
                try AHCBenchClient(
                    target: self.target,
                    rootPEM: self.rootPEM,
                    maximumConnections: 32,
                    sharedEventLoops: self.options.sharedEventLoops,
                    proxy: .server(host: "127.0.0.1", port: squid.port),
                    dnsOverride: false
                ),
            ]
        }

        // Sanity: each client's request goes through squid (a CONNECT to the origin in squid's log, the origin's
        // connection coming from squid), over HTTP/1.1 inside the tunnel.
        var seen: [String] = []
        for client in try makeClients() {
            self.server.resetRecording()
            let before = await squid.accessLog(atLeast: 0, seconds: 0).count
            let count = try await client.get("/bytes/1024", close: false)
            let version = client.lastResponseVersion()
            try await client.shutdown()
            let lines = await squid.accessLog(atLeast: before + 1)
            let connects = lines.dropFirst(before).filter { $0.contains("CONNECT localhost:\(self.server.port)") }
            log(
                "   proxy sanity \(client.label): \(count) bytes, \(version), squid logged: \(connects.first ?? "nothing")"
            )
            guard count == 1024, connects.count == 1, self.server.acceptedConnections == 1 else {
                throw BenchError(
                    "proxy sanity: \(client.label) read \(count) bytes; squid logged \(connects.count) CONNECT to the "
                        + "origin, the server accepted \(self.server.acceptedConnections) connections"
                )
            }
            seen.append("\(client.label) \(version) in one CONNECT tunnel")
        }
        self.notes.append(
            "Sanity (proxy-keepalive): \(version) on 127.0.0.1; " + seen.joined(separator: "; ")
                + ", each CONNECT in squid's access log."
        )

        let clients = try makeClients()
        let server = self.server
        let serverClocks = self.serverClocks
        let seconds = self.options.legSeconds
        let warmup = self.options.warmupSeconds
        let rounds = self.options.rounds
        let series = try await withClients(clients) {
            try await warmUp(clients, server: server, concurrency: 1, seconds: warmup, close: false)
            return try await alternate(name, clients: clients, rounds: rounds) { client in
                try await runLeg(
                    client: client,
                    server: server,
                    serverClocks: serverClocks,
                    path: "/bytes/1024",
                    expectedBytes: 1024,
                    concurrency: 1,
                    seconds: seconds,
                    close: false
                )
            }
        }
        var result = self.requestResult(name, series: series, label: "bulwark")
        result.goal = "ratio ≥ 1.0"
        result.met = (result.ratio ?? 0) >= 1.0
        let opened = series.legs.mapValues { $0.map(\.connectionsAccepted).reduce(0, +) }
        result.extra.append(("proxy", .string(version)))
        result.extra.append(("bulwark_tunnels_opened", .int(opened["bulwark"] ?? 0)))
        result.extra.append(("ahc_tunnels_opened", .int(opened["ahc"] ?? 0)))
        result.details =
            "through \(version) (CONNECT tunnel, no cache, loopback), concurrency 1, HTTP/1.1 + TLS 1.3 inside; "
            + result.details + "; tunnels opened during the legs \(opened["bulwark"] ?? 0) / \(opened["ahc"] ?? 0); "
            + "process CPU excludes squid's"
        self.results.append(result)
    }
}
