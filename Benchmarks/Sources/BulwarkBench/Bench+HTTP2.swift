import AsyncHTTPClient
import Bulwark
import BulwarkTestSupport
import Foundation

extension Bench {
    /// `h2-c1`, `h2-c32`: keep-alive GETs of 1 KiB over HTTP/2, every request of a client multiplexed on one
    /// connection, against a second server of the same kind that offers h2 (and http/1.1, so a client that fell back
    /// would be seen, not refused). Both clients offer h2 first: Bulwark its default ALPN list, AsyncHTTPClient
    /// `.automatic`. Before timing, each client's protocol is checked from both ends (the server's ALPN and request
    /// version, the client's response version); during the legs, new connections are counted.
    mutating func http2(concurrency: Int) async throws {
        let loops = EventLoops.make(shared: self.options.sharedEventLoops)
        let server = try await TestHTTPSServer.start(
            configuration: .init(chain: self.chain, alpn: ["h2", "http/1.1"]),
            eventLoopGroup: loops.group
        )
        let clocks = self.options.sharedEventLoops ? nil : try await ThreadCPUClocks.of(loops.group)
        do {
            try await self.http2(concurrency: concurrency, server: server, serverClocks: clocks)
        } catch {
            try? await server.shutdown()
            try? await loops.shutdown()
            throw error
        }
        try await server.shutdown()
        try await loops.shutdown()
    }

    private func makeHTTP2Clients(port: Int) throws -> [any BenchClient] {
        let target = Target(port: port)
        let bulwark = try BulwarkBenchClient(
            label: "bulwark",
            target: target,
            evaluator: self.defaultEvaluator,
            maximumConnections: 32,
            sharedEventLoops: self.options.sharedEventLoops,
            applicationProtocols: ["h2", "http/1.1"]
        )
        let ahc = try AHCBenchClient(
            target: target,
            rootPEM: self.rootPEM,
            maximumConnections: 32,
            sharedEventLoops: self.options.sharedEventLoops,
            httpVersion: .automatic
        )
        return [bulwark, ahc]
    }

    private mutating func http2(
        concurrency: Int,
        server: TestHTTPSServer,
        serverClocks: ThreadCPUClocks?
    ) async throws {
        // Sanity: both clients negotiate h2, seen from the server (ALPN, request version) and from the client.
        var seen: [String] = []
        for client in try self.makeHTTP2Clients(port: server.port) {
            server.resetRecording()
            let count = try await client.get("/bytes/1024", close: false)
            let handshake = server.handshakes.last
            let alpn = handshake?.applicationProtocol ?? "none"
            let requestVersion = server.requests.last?.httpVersion ?? "?"
            let responseVersion = client.lastResponseVersion()
            try await client.shutdown()
            log(
                "   h2 sanity \(client.label): \(count) bytes, \(handshake?.tlsVersion.map { "\($0)" } ?? "?"), ALPN \(alpn), "
                    + "server saw \(requestVersion), client read \(responseVersion)"
            )
            guard count == 1024, alpn == "h2", requestVersion == "HTTP/2.0", responseVersion == "HTTP/2.0" else {
                throw BenchError(
                    "h2 sanity: \(client.label) did not speak HTTP/2 (ALPN \(alpn), server saw \(requestVersion), "
                        + "client read \(responseVersion), \(count) bytes)"
                )
            }
            seen.append(
                "\(client.label) ALPN \(alpn), \(requestVersion) at the server, \(responseVersion) at the client"
            )
        }
        self.notes.append("Sanity (h2-c\(concurrency)): " + seen.joined(separator: "; ") + ".")

        do {
            let name = "h2-c\(concurrency)"
            let clients = try self.makeHTTP2Clients(port: server.port)
            let seconds = self.options.legSeconds
            let warmup = self.options.warmupSeconds
            let rounds = self.options.rounds
            let series = try await withClients(clients) {
                try await warmUp(clients, server: server, concurrency: concurrency, seconds: warmup, close: false)
                return try await alternate(name, clients: clients, rounds: rounds) { client in
                    let leg = try await runLeg(
                        client: client,
                        server: server,
                        serverClocks: serverClocks,
                        path: "/bytes/1024",
                        expectedBytes: 1024,
                        concurrency: concurrency,
                        seconds: seconds,
                        close: false
                    )
                    guard client.lastResponseVersion() == "HTTP/2.0" else {
                        throw BenchError("\(name): \(client.label) read \(client.lastResponseVersion()) during a leg")
                    }
                    return leg
                }
            }
            var result = self.requestResult(name, series: series, label: "bulwark")
            let p99OK = series.medianP99("bulwark") <= series.medianP99("ahc")
            result.goal = "ratio ≥ 1.20, p99 ≤ AHC"
            result.met = (result.ratio ?? 0) >= 1.20 && p99OK
            let opened = series.legs.mapValues { $0.map(\.connectionsAccepted).reduce(0, +) }
            result.extra.append(("protocol", .string("h2 (ALPN h2, HTTP/2.0 at both ends)")))
            result.extra.append(("bulwark_connections_opened", .int(opened["bulwark"] ?? 0)))
            result.extra.append(("ahc_connections_opened", .int(opened["ahc"] ?? 0)))
            result.details =
                "HTTP/2, \(concurrency) stream\(concurrency == 1 ? "" : "s") at once on one connection; "
                + result.details
                + "; connections opened during the legs \(opened["bulwark"] ?? 0) / \(opened["ahc"] ?? 0)"
                + " (0: every request on the warm connection)"
            self.results.append(result)
        }
    }
}
