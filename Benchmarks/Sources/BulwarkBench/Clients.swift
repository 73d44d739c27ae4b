import AsyncHTTPClient
import Bulwark
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The event loops a client runs on. By default each client gets its own group (as many threads as cores), shut
/// down with the client, so nothing one client leaves on its event loops (pending timers, say) can slow the other;
/// `--shared-event-loops` puts every client and the server on NIO's singleton group instead, as in an app that
/// uses the default everywhere.
enum EventLoops {
    case own(MultiThreadedEventLoopGroup)
    case shared

    static func make(shared: Bool) -> EventLoops {
        shared ? .shared : .own(MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount))
    }

    var group: any EventLoopGroup {
        switch self {
        case .own(let group): return group
        case .shared: return MultiThreadedEventLoopGroup.singleton
        }
    }

    func shutdown() async throws {
        if case .own(let group) = self { try await group.shutdownGracefully() }
    }
}

/// One client under test: GET a path on the benchmark server, read the whole body, return its length.
protocol BenchClient: Sendable {
    var label: String { get }
    /// GETs `https://localhost:PORT<path>`; `close` sends `connection: close` so the connection is not reused.
    func get(_ path: String, close: Bool) async throws -> Int
    func shutdown() async throws
}

/// Where the clients connect: `https://localhost:PORT`, with `localhost` pinned to 127.0.0.1 in both clients (no DNS).
struct Target: Sendable {
    let port: Int
    var base: String { "https://localhost:\(self.port)" }
}

final class BulwarkBenchClient: BenchClient {
    let label: String
    let client: BulwarkClient
    let base: String
    let loops: EventLoops

    /// `evaluator`: `.default(roots: .custom([root]))` or `.publicKeys(...)`. `decisionCache`: Bulwark's default
    /// trust-decision cache; off, every handshake is evaluated in full.
    init(
        label: String,
        target: Target,
        evaluator: any ServerTrustEvaluating,
        maximumConnections: Int,
        decisionCache: Bool = false,
        sharedEventLoops: Bool = false
    ) throws {
        self.label = label
        self.loops = EventLoops.make(shared: sharedEventLoops)
        self.base = target.base
        var config = BulwarkClient.Configuration(trust: try ServerTrustManager(evaluators: ["localhost": evaluator]))
        config.resolveOverrides[.init(host: "localhost", port: target.port)] = "127.0.0.1"
        config.pool.maximumConnectionsPerHost = maximumConnections
        if !decisionCache { config.trustDecisionCache = nil }
        // The server speaks only HTTP/1.1 here; offer only that, as AsyncHTTPClient's .http1Only does.
        config.tls.applicationProtocols = ["http/1.1"]
        self.client = BulwarkClient(configuration: config, eventLoopGroup: self.loops.group)
    }

    func get(_ path: String, close: Bool) async throws -> Int {
        let request = BulwarkRequest(url: self.base + path, headers: close ? ["connection": "close"] : [:])
        let response = try await self.client.execute(request)
        guard response.status == .ok else { throw BenchError("\(self.label): status \(response.status) for \(path)") }
        var count = 0
        for try await chunk in response.body { count += chunk.readableBytes }
        return count
    }

    func shutdown() async throws {
        await self.client.shutdown()
        try await self.loops.shutdown()
    }
}

final class AHCBenchClient: BenchClient {
    let label = "ahc"
    let client: HTTPClient
    let base: String
    let loops: EventLoops

    /// AsyncHTTPClient with full certificate verification against `rootPEM` only, HTTP/1.1 only.
    init(
        target: Target,
        rootPEM: String,
        maximumConnections: Int,
        retryConnections: Bool = true,
        sharedEventLoops: Bool = false
    ) throws {
        self.base = target.base
        self.loops = EventLoops.make(shared: sharedEventLoops)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(rootPEM.utf8)))
        tls.certificateVerification = .fullVerification
        var config = HTTPClient.Configuration(tlsConfiguration: tls)
        config.httpVersion = .http1Only
        config.dnsOverride = ["localhost": "127.0.0.1"]
        config.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: maximumConnections
        )
        config.connectionPool.retryConnectionEstablishment = retryConnections
        config.timeout = .init(connect: .seconds(10), read: .seconds(30))
        self.client = HTTPClient(eventLoopGroup: self.loops.group, configuration: config)
    }

    func get(_ path: String, close: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: self.base + path)
        if close { request.headers.add(name: "connection", value: "close") }
        let response = try await self.client.execute(request, timeout: .seconds(60))
        guard response.status == .ok else { throw BenchError("ahc: status \(response.status) for \(path)") }
        var count = 0
        for try await chunk in response.body { count += chunk.readableBytes }
        return count
    }

    func shutdown() async throws {
        try await self.client.shutdown()
        try await self.loops.shutdown()
    }
}
