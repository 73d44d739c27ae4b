import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The client's sockets, read back from the kernel: `TCP_NODELAY` at the TCP level, never `SO_DEBUG`.
///
/// NIO's `.socketOption(.tcp_nodelay)` names option 1 at the *socket* level, which is `SO_DEBUG`. Linux lets only a
/// process with `CAP_NET_ADMIN` set it (EACCES otherwise), so a client setting it could connect only as root.
@Suite("Client socket options")
struct ClientSocketOptionsTests {
    /// The value of `option` at `level` on this process's socket whose peer is 127.0.0.1:`port`, or nil.
    static func option(level: CInt, _ option: CInt, ofSocketTo port: Int) -> CInt? {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for name in descriptors {
            guard let fd = CInt(name) else { continue }
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let found = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
            }
            guard found, address.sin_family == sa_family_t(AF_INET), Int(UInt16(bigEndian: address.sin_port)) == port
            else { continue }
            var value: CInt = -1
            var size = socklen_t(MemoryLayout<CInt>.size)
            guard getsockopt(fd, level, option, &value, &size) == 0 else { return nil }
            return value
        }
        return nil
    }

    @Test("a pooled connection's socket has TCP_NODELAY and not SO_DEBUG")
    func noDelayNotDebug() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let evaluator = DefaultTrustEvaluator(roots: .custom([chain.root.certificate]))
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        let client = try Harness.client(for: server, evaluator: evaluator)
        let (_, body) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(body == "hello")
        // The connection stays in the pool, open.
        #expect(Self.option(level: SOL_SOCKET, SO_DEBUG, ofSocketTo: server.port) == 0)
        #expect(Self.option(level: CInt(IPPROTO_TCP), TCP_NODELAY, ofSocketTo: server.port) == 1)
        await client.shutdown()
        try await server.shutdown()
    }
}
