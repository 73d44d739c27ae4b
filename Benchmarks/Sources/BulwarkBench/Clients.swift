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
    /// POSTs a streamed body of `bytes` bytes (`chunk` repeated, see ``RepeatedChunks``) with `content-length`, reads
    /// the whole response body and returns its length.
    func upload(_ path: String, bytes: Int, chunk: ByteBuffer) async throws -> Int
    /// The HTTP version of the last response `get` or `upload` read (`HTTP/1.1`, `HTTP/2.0`), for the sanity lines.
    func lastResponseVersion() -> String
    func shutdown() async throws
}

/// A request body: `chunk` again and again (the last time cut short) until `total` bytes, without copying, so both
/// clients stream the same buffers and neither holds the body in memory.
struct RepeatedChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let chunk: ByteBuffer
    let total: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunk: ByteBuffer
        var remaining: Int

        mutating func next() async -> ByteBuffer? {
            guard self.remaining > 0 else { return nil }
            let count = Swift.min(self.remaining, self.chunk.readableBytes)
            self.remaining -= count
            return count == self.chunk.readableBytes
                ? self.chunk : self.chunk.getSlice(at: self.chunk.readerIndex, length: count)!
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunk: self.chunk, remaining: self.total) }
}

/// The last response's HTTP version, shared between a client's tasks.
final class VersionBox: @unchecked Sendable {
    private let lock = NSLock()
    private var version = "-"
    func set(_ version: String) { self.lock.withLock { self.version = version } }
    func get() -> String { self.lock.withLock { self.version } }
}

/// Where the clients connect: `https://localhost:PORT`, with `localhost` pinned to 127.0.0.1 in both clients (no DNS).
struct Target: Sendable {
    let port: Int
    var base: String { "https://localhost:\(self.port)" }
}

/// The client of a benchmark child process: `which` is `bulwark` or `ahc`, each verifying the chain against the
/// benchmark's CA (`pem`, read from `rootPath`), plus the system roots with `systemRoots`. Bulwark with its
/// default evaluator, and its trust-decision cache only with `decisionCache`.
func childClient(
    _ which: String,
    pem: String,
    rootPath: String,
    target: Target,
    maximumConnections: Int,
    systemRoots: Bool = false,
    decisionCache: Bool = false
) throws -> any BenchClient {
    switch which {
    case "bulwark":
        let roots = try CertificateLoader.certificates(fromPEM: pem, source: rootPath)
        return try BulwarkBenchClient(
            label: "bulwark",
            target: target,
            evaluator: DefaultTrustEvaluator(roots: systemRoots ? .systemAnd(roots) : .custom(roots)),
            maximumConnections: maximumConnections,
            decisionCache: decisionCache
        )
    case "ahc":
        return try AHCBenchClient(
            target: target,
            rootPEM: pem,
            maximumConnections: maximumConnections,
            systemRoots: systemRoots
        )
    default:
        throw BenchError("unknown client \(which)")
    }
}

final class BulwarkBenchClient: BenchClient {
    let label: String
    let client: BulwarkClient
    let base: String
    let loops: EventLoops
    let version = VersionBox()

    /// `evaluator`: `.default(roots: .custom([root]))` or `.publicKeys(...)`. `decisionCache`: Bulwark's default
    /// trust-decision cache; off, every handshake is evaluated in full.
    init(
        label: String,
        target: Target,
        evaluator: any ServerTrustEvaluating,
        maximumConnections: Int,
        decisionCache: Bool = false,
        sharedEventLoops: Bool = false,
        applicationProtocols: [String] = ["http/1.1"],
        proxy: BulwarkClient.Proxy = .none
    ) throws {
        self.label = label
        self.loops = EventLoops.make(shared: sharedEventLoops)
        self.base = target.base
        var config = BulwarkClient.Configuration(trust: try ServerTrustManager(evaluators: ["localhost": evaluator]))
        config.resolveOverrides[.init(host: "localhost", port: target.port)] = "127.0.0.1"
        config.pool.maximumConnectionsPerHost = maximumConnections
        if !decisionCache { config.trustDecisionCache = nil }
        // The main server speaks only HTTP/1.1; offer only that, as AsyncHTTPClient's .http1Only does. The HTTP/2
        // rows offer the library's default, h2 then http/1.1, as AsyncHTTPClient's .automatic does.
        config.tls.applicationProtocols = applicationProtocols
        config.proxy = proxy
        self.client = BulwarkClient(configuration: config, eventLoopGroup: self.loops.group)
    }

    func get(_ path: String, close: Bool) async throws -> Int {
        let request = BulwarkRequest(url: self.base + path, headers: close ? ["connection": "close"] : [:])
        let response = try await self.client.execute(request)
        guard response.status == .ok else { throw BenchError("\(self.label): status \(response.status) for \(path)") }
        self.version.set("HTTP/\(response.httpVersion.major).\(response.httpVersion.minor)")
        var count = 0
        for try await chunk in response.body { count += chunk.readableBytes }
        return count
    }

    func upload(_ path: String, bytes: Int, chunk: ByteBuffer) async throws -> Int {
        let request = BulwarkRequest(
            url: self.base + path,
            method: .POST,
            body: .stream(RepeatedChunks(chunk: chunk, total: bytes), length: bytes)
        )
        let response = try await self.client.execute(request)
        guard response.status == .ok else { throw BenchError("\(self.label): status \(response.status) for \(path)") }
        self.version.set("HTTP/\(response.httpVersion.major).\(response.httpVersion.minor)")
        var count = 0
        for try await chunk in response.body { count += chunk.readableBytes }
        return count
    }

    func lastResponseVersion() -> String { self.version.get() }

    func shutdown() async throws {
        await self.client.shutdown()
        try await self.loops.shutdown()
    }
}

final class AHCBenchClient: BenchClient {
    let label: String
    let client: HTTPClient
    let base: String
    let loops: EventLoops
    let version = VersionBox()

    /// AsyncHTTPClient with full certificate verification against `rootPEM` only, HTTP/1.1 only unless
    /// `httpVersion` says otherwise (`.automatic` negotiates h2), through `proxy` if given.
    init(
        label: String = "ahc",
        target: Target,
        rootPEM: String,
        maximumConnections: Int,
        retryConnections: Bool = true,
        sharedEventLoops: Bool = false,
        httpVersion: HTTPClient.Configuration.HTTPVersion = .http1Only,
        proxy: HTTPClient.Configuration.Proxy? = nil,
        dnsOverride: Bool = true,
        systemRoots: Bool = false
    ) throws {
        self.label = label
        self.base = target.base
        self.loops = EventLoops.make(shared: sharedEventLoops)
        var tls = TLSConfiguration.makeClientConfiguration()
        if systemRoots {
            // The system's roots (BoringSSL reads the bundle or the hashed directory) and the benchmark's CA.
            tls.trustRoots = .default
            tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(rootPEM.utf8)))]
        } else {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(rootPEM.utf8)))
        }
        tls.certificateVerification = .fullVerification
        var config = HTTPClient.Configuration(tlsConfiguration: tls)
        config.httpVersion = httpVersion
        config.proxy = proxy
        // Through a proxy, AsyncHTTPClient would apply the override to the CONNECT target (`CONNECT 127.0.0.1:PORT`);
        // without it, it sends `CONNECT localhost:PORT` as Bulwark does, and the proxy resolves the name.
        if dnsOverride { config.dnsOverride = ["localhost": "127.0.0.1"] }
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
        self.version.set("HTTP/\(response.version.major).\(response.version.minor)")
        var count = 0
        for try await chunk in response.body { count += chunk.readableBytes }
        return count
    }

    func upload(_ path: String, bytes: Int, chunk: ByteBuffer) async throws -> Int {
        var request = HTTPClientRequest(url: self.base + path)
        request.method = .POST
        request.body = .stream(RepeatedChunks(chunk: chunk, total: bytes), length: .known(Int64(bytes)))
        let response = try await self.client.execute(request, timeout: .seconds(600))
        guard response.status == .ok else { throw BenchError("ahc: status \(response.status) for \(path)") }
        self.version.set("HTTP/\(response.version.major).\(response.version.minor)")
        var count = 0
        for try await chunk in response.body { count += chunk.readableBytes }
        return count
    }

    func lastResponseVersion() -> String { self.version.get() }

    func shutdown() async throws {
        try await self.client.shutdown()
        try await self.loops.shutdown()
    }
}
