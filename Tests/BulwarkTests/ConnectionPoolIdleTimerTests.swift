import Bulwark
import BulwarkTestSupport
import NIOCore
import Testing

/// The pool's idle timer on real connections: a connection keeps one timer while it serves request after request, and
/// closes only once it has been idle for the whole timeout since its last request.
@Suite("Connection pool idle timer over real connections", .tags(.timing))
struct ConnectionPoolIdleTimerTests {
    @Test("a connection in steady use outlives its idle timeout, and closes once idle for the whole of it")
    func idleTimeoutCountsFromTheLastRequest() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        let client = try Harness.client(for: server, evaluator: .default(roots: .custom([chain.root.certificate]))) {
            $0.pool.idleTimeout = .seconds(1)
        }
        // A request every 100 ms for 2.5 s: the connection's first timer fires while it is in use or idle since less
        // than the timeout, and must neither close it nor stop watching it.
        let start = NIODeadline.now()
        while NIODeadline.now() - start < .milliseconds(2500) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(server.acceptedConnections == 1)
        #expect(client.openConnectionCount == 1)
        // Idle for more than the timeout: closed by the timer.
        try await Task.sleep(for: .milliseconds(2500))
        #expect(client.openConnectionCount == 0)
        _ = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(server.acceptedConnections == 2)
        #expect(client.openConnectionCount == 1)
        await client.shutdown()
    }
}
