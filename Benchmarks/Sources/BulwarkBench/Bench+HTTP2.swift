import AsyncHTTPClient
import Bulwark
import BulwarkTestSupport
import Foundation
import NIOCore

extension Bench {
    /// Sequential requests of the h2 stream check: more than NIOHTTP2's default allowance of 200 RST_STREAM frames
    /// received per 30 s.
    static let http2StreamCheckRequests = 300

    /// `h2-c1`, `h2-c32`: keep-alive GETs of 1 KiB over HTTP/2, every request of a client multiplexed on one
    /// connection. Both clients offer h2 first (Bulwark its default ALPN list, AsyncHTTPClient `.automatic`).
    ///
    /// 1. Against the test server (NIOHTTP2 with its defaults, h2 and http/1.1 offered): each client's protocol is
    ///    checked from both ends (the server's ALPN and request version, the client's response version), then each
    ///    client sends 300 requests one after another on one connection, each given 5 s; how many completed is
    ///    reported. NIOHTTP2 allows a client 200 RST_STREAM frames per 30 s, then ends the connection.
    /// 2. The timed legs run against ``BenchHTTP2Server``, NIOHTTP2 with that one limit raised (and every other
    ///    setting at NIO's default), so that a client that resets every stream can still be timed; the row says so.
    mutating func http2(concurrency: Int) async throws {
        let loops = EventLoops.make(shared: self.options.sharedEventLoops)
        do {
            try await self.http2(concurrency: concurrency, group: loops.group)
        } catch {
            try? await loops.shutdown()
            throw error
        }
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

    /// Against the test server: the protocol check and the stream check; returns, per client, the requests of the
    /// stream check that completed.
    private mutating func http2Checks(concurrency: Int, group: any EventLoopGroup) async throws -> [String: Int] {
        let server = try await TestHTTPSServer.start(
            configuration: .init(chain: self.chain, alpn: ["h2", "http/1.1"]),
            eventLoopGroup: group
        )
        var seen: [String] = []
        var completed: [String: Int] = [:]
        do {
            for client in try self.makeHTTP2Clients(port: server.port) {
                server.resetRecording()
                let count = try await client.get("/bytes/1024", close: false)
                let handshake = server.handshakes.last
                let alpn = handshake?.applicationProtocol ?? "none"
                let requestVersion = server.requests.last?.httpVersion ?? "?"
                let responseVersion = client.lastResponseVersion()
                log(
                    "   h2 sanity \(client.label): \(count) bytes, \(handshake?.tlsVersion.map { "\($0)" } ?? "?"), "
                        + "ALPN \(alpn), server saw \(requestVersion), client read \(responseVersion)"
                )
                guard count == 1024, alpn == "h2", requestVersion == "HTTP/2.0", responseVersion == "HTTP/2.0" else {
                    try? await client.shutdown()
                    throw BenchError(
                        "h2 sanity: \(client.label) did not speak HTTP/2 (ALPN \(alpn), server saw \(requestVersion), "
                            + "client read \(responseVersion), \(count) bytes)"
                    )
                }
                let done = await Self.sequentialRequests(client, count: Self.http2StreamCheckRequests)
                completed[client.label] = done
                log(
                    "   h2 stream check \(client.label): \(done) of \(Self.http2StreamCheckRequests) requests completed"
                )
                try? await client.shutdown()
                seen.append(
                    "\(client.label) ALPN \(alpn), \(requestVersion) at the server, \(responseVersion) at the client"
                )
            }
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
        self.notes.append("Sanity (h2-c\(concurrency)): " + seen.joined(separator: "; ") + ".")
        return completed
    }

    /// `count` GETs one after another, each given 5 s; the number that completed before the first failure.
    static func sequentialRequests(_ client: any BenchClient, count: Int) async -> Int {
        for i in 0..<count {
            let ok = await withTaskGroup(of: Bool.self) { group in
                group.addTask { (try? await client.get("/bytes/1024", close: false)) == 1024 }
                group.addTask {
                    try? await Task.sleep(for: .seconds(5))
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            if !ok { return i }
        }
        return count
    }

    private mutating func http2(concurrency: Int, group: any EventLoopGroup) async throws {
        let completed = try await self.http2Checks(concurrency: concurrency, group: group)
        let server = try await BenchHTTP2Server.start(chain: self.chain, group: group, raisedLimits: ["reset"])
        let serverClocks = self.options.sharedEventLoops ? nil : try await ThreadCPUClocks.of(group)
        let name = "h2-c\(concurrency)"
        let clients = try self.makeHTTP2Clients(port: server.port)
        let seconds = self.options.legSeconds
        let warmup = self.options.warmupSeconds
        let rounds = self.options.rounds
        let series: RoundSeries
        do {
            series = try await withClients(clients) {
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
        } catch {
            try? await server.shutdown()
            throw error
        }
        let alpn = server.lastALPN ?? "none"
        let versions = server.versions.sorted().joined(separator: ", ")
        try await server.shutdown()
        guard alpn == "h2", versions == "HTTP/2.0" else {
            throw BenchError("\(name): the legs' server saw ALPN \(alpn) and versions \(versions)")
        }
        var result = self.requestResult(name, series: series, label: "bulwark")
        let p99OK = series.medianP99("bulwark") <= series.medianP99("ahc")
        result.goal = "ratio ≥ 1.20, p99 ≤ AHC"
        let check = Self.http2StreamCheckRequests
        let bulwarkCompleted = completed["bulwark"] ?? 0
        let ahcCompleted = completed["ahc"] ?? 0
        // A client that cannot keep one connection going against NIO's default server does not meet the goal,
        // whatever its rate against the tolerant one.
        result.met = (result.ratio ?? 0) >= 1.20 && p99OK && bulwarkCompleted == check
        let opened = series.legs.mapValues { $0.map(\.connectionsAccepted).reduce(0, +) }
        result.extra += [
            ("protocol", .string("h2 (ALPN h2 and HTTP/2.0 at both ends)")),
            ("bulwark_connections_opened", .int(opened["bulwark"] ?? 0)),
            ("ahc_connections_opened", .int(opened["ahc"] ?? 0)),
            ("stream_check_requests", .int(check)),
            ("bulwark_stream_check_completed", .int(bulwarkCompleted)),
            ("ahc_stream_check_completed", .int(ahcCompleted)),
            ("legs_server", .string("NIOHTTP2 defaults but RST_STREAM rate limit raised from 200 to 10^7 per 30 s")),
        ]
        result.details =
            "HTTP/2, \(concurrency) stream\(concurrency == 1 ? "" : "s") at once on one connection; legs against an "
            + "NIOHTTP2 server with its RST_STREAM limit raised; against NIO's defaults "
            + "\(bulwarkCompleted) / \(ahcCompleted) of \(check) sequential requests completed; " + result.details
            + "; connections opened during the legs \(opened["bulwark"] ?? 0) / \(opened["ahc"] ?? 0)"
        self.results.append(result)
    }
}
