import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing

/// What the process holds, from `/proc/self`.
enum ProcessFigures {
    static var openDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// The resident set size in KiB.
    static var residentKiB: Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return -1 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}

/// Requests against servers that fail at random (a fixed seed): resets before the head and mid-body, GOAWAY and
/// RST_STREAM mid-body, truncated chunked bodies, stalls, a 256 KiB header, bytes that are not HTTP, a handshake
/// that never answers, plain bytes instead of TLS, a server requiring a client certificate (a TLS alert), and idle
/// connections closed early. Runs in a `swift test` process of its own (scripts/test), since it counts the
/// process's file descriptors.
///
/// `BULWARK_SOAK_REQUESTS` (default 600) and `BULWARK_SOAK_SEED` (default 1) set the length and the sequence;
/// `scripts/soak` runs the long version.
@Suite(
    "Fault-injection soak: every request ends in a response or a typed error in time, and the pool recovers",
    .tags(.soak)
)
struct FaultInjectionSoakTests {
    static let environment = ProcessInfo.processInfo.environment
    static let requestCount = Int(environment["BULWARK_SOAK_REQUESTS"] ?? "") ?? 600
    static let seed = UInt64(environment["BULWARK_SOAK_SEED"] ?? "") ?? 1
    static let concurrency = 8
    static let deadline = TimeAmount.seconds(3)
    /// Time allowed past the deadline for the error to reach the caller (scheduling on a loaded machine).
    static let slack = Duration.seconds(2)

    /// A fault and where it happens.
    struct Fault: Sendable, CustomStringConvertible {
        enum Place: Sendable {
            case healthy, route, stalledHandshake, plainBytes, clientCertificateRequired, idleCloser
        }
        var name: String
        var place: Place
        var http2: Bool

        var path: String {
            switch self.place {
            case .route: return "/fault/\(self.name)"
            case .healthy: return "/bytes/\(256 * 1024)"
            case .idleCloser: return "/slow/120"
            default: return "/hello"
            }
        }

        var description: String { "\(self.name) over \(self.http2 ? "h2" : "http/1.1")" }
    }

    static let faults: [Fault] = [false, true].flatMap { http2 in
        TestHTTPSServer.faultNames.map { Fault(name: $0, place: .route, http2: http2) } + [
            Fault(name: "stalled-handshake", place: .stalledHandshake, http2: http2),
            Fault(name: "plain-bytes-instead-of-tls", place: .plainBytes, http2: http2),
            Fault(name: "client-certificate-required", place: .clientCertificateRequired, http2: http2),
            Fault(name: "idle-close-while-waiting", place: .idleCloser, http2: http2),
            // No fault, on a server of its own: a connection-killing fault on a shared HTTP/2 connection would fail
            // every stream on it, as it should.
            Fault(name: "none", place: .healthy, http2: http2),
        ]
    }

    struct Servers {
        var healthy: TestHTTPSServer
        var routes: TestHTTPSServer
        var stalledHandshake: TestHTTPSServer
        var plainBytes: TestHTTPSServer
        var clientCertificateRequired: TestHTTPSServer
        var idleCloser: TestHTTPSServer

        func server(for place: Fault.Place) -> TestHTTPSServer {
            switch place {
            case .healthy: return self.healthy
            case .route: return self.routes
            case .stalledHandshake: return self.stalledHandshake
            case .plainBytes: return self.plainBytes
            case .clientCertificateRequired: return self.clientCertificateRequired
            case .idleCloser: return self.idleCloser
            }
        }

        var all: [TestHTTPSServer] {
            [
                self.healthy, self.routes, self.stalledHandshake, self.plainBytes, self.clientCertificateRequired,
                self.idleCloser,
            ]
        }
    }

    /// What one request ended in.
    enum Outcome: Sendable {
        case response(status: UInt, bodyBytes: Int)
        case typedError(String)
        case untypedError(String)
    }

    @Test("requests against failing servers end in time, leak no descriptor, and the pool recovers")
    func soak() async throws {
        let harness = try RedirectHarness()
        // A first round trip, so that what exists once per process (NIO's singleton event loops and their epoll,
        // eventfd and timerfd descriptors, the thread pool) is counted in the baseline.
        try await harness.withOrigin { server, client, _ in
            _ = try await Harness.get(client, RedirectHarness.url(RedirectHarness.originHost, server, "/hello"))
        }
        let descriptorsBefore = ProcessFigures.openDescriptors
        func start(
            _ behavior: TestHTTPSServer.Behavior,
            requiresClientCertificate: Bool = false
        ) async throws
            -> TestHTTPSServer
        {
            var configuration = TestHTTPSServer.Configuration(
                chain: [harness.leaf.certificate, harness.intermediate.certificate],
                privateKey: harness.leaf.privateKey,
                behavior: behavior
            )
            configuration.requiresClientCertificate = requiresClientCertificate
            configuration.recordsRequests = false
            return try await TestHTTPSServer.start(configuration: configuration)
        }
        let servers = Servers(
            healthy: try await start(.normal),
            routes: try await start(.normal),
            stalledHandshake: try await start(.stallHandshake),
            plainBytes: try await start(.garbageInsteadOfTLS),
            clientCertificateRequired: try await start(.normal, requiresClientCertificate: true),
            idleCloser: try await start(.closeIdleConnectionsAfter(milliseconds: 100))
        )
        let host = RedirectHarness.originHost
        let ports = servers.all.map(\.port)
        func client(alpn: [String]) throws -> BulwarkClient {
            try harness.client(hosts: [host], ports: ports) { configuration in
                configuration.tls.applicationProtocols = alpn
                configuration.timeouts.connect = .seconds(2)
                configuration.timeouts.tlsHandshake = .seconds(2)
                configuration.timeouts.idleRead = .seconds(2)
                configuration.pool.idleTimeout = .seconds(5)
            }
        }
        let http1 = try client(alpn: ["http/1.1"])
        let http2 = try client(alpn: ["h2", "http/1.1"])

        var generator = SeededGenerator(seed: Self.seed)
        let plan = (0..<Self.requestCount).map { _ in Self.faults.randomElement(using: &generator)! }
        let started = ContinuousClock.now
        var outcomes: [(Fault, Outcome, Duration)] = []
        var next = 0
        try await withThrowingTaskGroup(of: (Fault, Outcome, Duration).self) { group in
            func add(_ fault: Fault) {
                let client = fault.http2 ? http2 : http1
                let url = RedirectHarness.url(host, servers.server(for: fault.place), fault.path)
                group.addTask { try await Self.run(client, url: url, fault: fault) }
            }
            while next < min(Self.concurrency, plan.count) {
                add(plan[next])
                next += 1
            }
            while let result = try await group.next() {
                outcomes.append(result)
                if next < plan.count {
                    add(plan[next])
                    next += 1
                }
            }
        }
        let soakTime = ContinuousClock.now - started

        // Every request ended in time, in a response or a typed error.
        for (fault, outcome, elapsed) in outcomes {
            if case .untypedError(let text) = outcome {
                Issue.record("\(fault): an error that is not a BulwarkError: \(text)")
            }
            #expect(elapsed < .seconds(3) + Self.slack, "\(fault) took \(elapsed)")
        }
        // The healthy requests succeeded.
        for (fault, outcome, _) in outcomes where fault.name == "none" {
            guard case .response(let status, let bytes) = outcome, status == 200, bytes == 256 * 1024 else {
                Issue.record("a request without a fault failed: \(outcome)")
                continue
            }
        }
        // After every fault class, a plain request on the same client succeeds: the pool recovered.
        for fault in Self.faults {
            let client = fault.http2 ? http2 : http1
            let faultURL = RedirectHarness.url(host, servers.server(for: fault.place), fault.path)
            _ = try await Self.run(client, url: faultURL, fault: fault)
            let (response, body) = try await Harness.get(client, RedirectHarness.url(host, servers.routes, "/hello"))
            #expect(response.status == .ok && body == "hello", "after \(fault)")
        }
        let residentKiB = ProcessFigures.residentKiB
        await http1.shutdown()
        await http2.shutdown()
        for server in servers.all { try await server.shutdown() }

        // No descriptor outlives the clients and servers (closes complete on the event loops: wait a little).
        var descriptorsAfter = ProcessFigures.openDescriptors
        for _ in 0..<50 where descriptorsAfter != descriptorsBefore {
            try await Task.sleep(for: .milliseconds(100))
            descriptorsAfter = ProcessFigures.openDescriptors
        }
        if descriptorsAfter != descriptorsBefore, Self.environment["BULWARK_SOAK_DEBUG"] != nil {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            for name in names.sorted() {
                let target =
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) ?? "?"
                print("soak: fd \(name) -> \(target)")
            }
            print((try? String(contentsOfFile: "/proc/self/net/tcp", encoding: .utf8)) ?? "")
        }
        #expect(
            descriptorsAfter == descriptorsBefore,
            "open descriptors: \(descriptorsBefore) before, \(descriptorsAfter) after"
        )
        #expect(residentKiB < 512 * 1024, "resident set \(residentKiB) KiB")

        var counts: [String: (responses: Int, errors: [String: Int])] = [:]
        for (fault, outcome, _) in outcomes {
            var entry = counts[fault.description, default: (0, [:])]
            switch outcome {
            case .response: entry.responses += 1
            case .typedError(let code), .untypedError(let code): entry.errors[code, default: 0] += 1
            }
            counts[fault.description] = entry
        }
        let longest = outcomes.map(\.2).max() ?? .zero
        print(
            "soak: \(outcomes.count) requests (seed \(Self.seed)) in \(soakTime), longest \(longest); "
                + "descriptors \(descriptorsBefore) -> \(descriptorsAfter); resident \(residentKiB / 1024) MiB"
        )
        for (fault, entry) in counts.sorted(by: { $0.key < $1.key }) {
            let errors = entry.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            print("soak: \(fault): \(entry.responses) responses; \(errors)")
        }
    }

    /// Sends one request and reads its body; never throws for what the server did, only reports it.
    static func run(_ client: BulwarkClient, url: String, fault: Fault) async throws -> (Fault, Outcome, Duration) {
        let started = ContinuousClock.now
        let outcome: Outcome
        do {
            let response = try await client.execute(BulwarkRequest(url: url), timeout: Self.deadline)
            var bytes = 0
            for try await chunk in response.body { bytes += chunk.readableBytes }
            outcome = .response(status: response.status.code, bodyBytes: bytes)
        } catch let error as BulwarkError {
            outcome = .typedError(error.code.description)
        } catch {
            outcome = .untypedError(String(describing: error))
        }
        return (fault, outcome, ContinuousClock.now - started)
    }
}
