import Bulwark
import BulwarkServiceLifecycle
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Testing

@Suite("BulwarkClient as a swift-service-lifecycle Service: graceful shutdown", .tags(.timing))
struct BulwarkClientServiceTests {
    static let host = "api.bulwark.test"

    private static func client(for server: TestHTTPSServer, chain: TestChain) -> BulwarkClient {
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [
                (try! HostPattern(Self.host), .default(roots: .custom([chain.root.certificate])))
            ])
        )
        configuration.resolveOverrides[.init(host: Self.host, port: server.port)] = "127.0.0.1"
        return BulwarkClient(configuration: configuration)
    }

    private static func url(_ server: TestHTTPSServer, _ path: String) -> String {
        "https://\(Self.host):\(server.port)\(path)"
    }

    private static func get(_ client: BulwarkClient, _ url: String) async throws -> String {
        let response = try await client.execute(BulwarkRequest(url: url))
        return String(buffer: try await response.body.collect(upTo: 1 << 20))
    }

    /// Waits (at most 10 s) until the server has accepted `count` connections: a request is then in flight.
    private static func waitForConnections(_ server: TestHTTPSServer, _ count: Int) async throws {
        for _ in 0..<1000 where server.acceptedConnections < count {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(server.acceptedConnections >= count)
    }

    /// Waits (at most 10 s) until the client refuses requests: the service has begun its graceful shutdown. A
    /// request for an `ftp:` URL fails before any network activity, with `invalid_url` until then.
    private static func waitForDraining(_ client: BulwarkClient) async throws {
        for _ in 0..<1000 {
            do {
                _ = try await client.execute(BulwarkRequest(url: "ftp://\(Self.host)/probe"))
            } catch let error as BulwarkError where error.code == .clientShutdown {
                return
            } catch {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        Issue.record("the client never began shutting down")
    }

    private static func expectShutdownError(_ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("the request succeeded")
        } catch let error as BulwarkError {
            #expect(error.code == .clientShutdown, "\(error)")
        } catch {
            Issue.record("expected a BulwarkError, got \(error)")
        }
    }

    @Test("graceful shutdown lets the request in flight finish and refuses new ones; run() then returns")
    func inFlightRequestFinishes() async throws {
        let chain = try TestChain.make(host: Self.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let client = Self.client(for: server, chain: chain)
        let group = ServiceGroup(services: [client], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            async let slow = Self.get(client, Self.url(server, "/slow/700"))
            try await Self.waitForConnections(server, 1)
            await group.triggerGracefulShutdown()
            try await Self.waitForDraining(client)
            await Self.expectShutdownError {
                _ = try await Self.get(client, Self.url(server, "/hello"))
            }
            #expect(try await slow == "slow")
            try await tasks.next()
        }
        #expect(server.requests.map(\.uri) == ["/slow/700"])
        try await server.shutdown()
    }

    @Test("a response body being read keeps its request in flight until its end")
    func responseBodyInFlightIsReadToItsEnd() async throws {
        let chain = try TestChain.make(host: Self.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let client = Self.client(for: server, chain: chain)
        let service = BulwarkClientService(client: client, gracePeriod: .seconds(20))
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let finished = SharedBox(false)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                try await group.run()
                finished.value = true
            }
            let size = 8 << 20
            let response = try await client.execute(BulwarkRequest(url: Self.url(server, "/bytes/\(size)")))
            await group.triggerGracefulShutdown()
            try await Task.sleep(for: .milliseconds(300))
            #expect(!finished.value, "the service stopped while a response body was still being read")
            var received = 0
            for try await buffer in response.body {
                received += buffer.readableBytes
            }
            #expect(received == size)
            try await tasks.next()
            #expect(finished.value)
        }
        try await server.shutdown()
    }

    @Test("past the grace period the requests still in flight fail with client_shutdown")
    func requestsPastTheGracePeriodFail() async throws {
        let chain = try TestChain.make(host: Self.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let client = Self.client(for: server, chain: chain)
        let service = BulwarkClientService(client: client, gracePeriod: .milliseconds(200))
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let start = ContinuousClock.now
            async let slow: Void = Self.expectShutdownError {
                _ = try await Self.get(client, Self.url(server, "/slow/20000"))
            }
            try await Self.waitForConnections(server, 1)
            await group.triggerGracefulShutdown()
            await slow
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < .seconds(10), "the request ran \(elapsed) after a 200 ms grace period")
            try await tasks.next()
        }
        try await server.shutdown()
    }

    @Test("cancelling the service fails the requests in flight at once")
    func cancellationFailsRequestsInFlight() async throws {
        let chain = try TestChain.make(host: Self.host)
        let server = try await TestHTTPSServer.start(configuration: .init(chain: chain))
        let client = Self.client(for: server, chain: chain)
        let service = BulwarkClientService(client: client, gracePeriod: .seconds(60))
        let run = Task { try await service.run() }
        async let slow: Void = Self.expectShutdownError {
            _ = try await Self.get(client, Self.url(server, "/slow/20000"))
        }
        try await Self.waitForConnections(server, 1)
        run.cancel()
        try await run.value
        await slow
        await Self.expectShutdownError {
            _ = try await Self.get(client, Self.url(server, "/hello"))
        }
        try await server.shutdown()
    }
}
