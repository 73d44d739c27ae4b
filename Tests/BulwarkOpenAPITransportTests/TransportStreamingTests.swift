import Bulwark
import BulwarkOpenAPITransport
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import OpenAPIRuntime
import Testing

@Suite("BulwarkClientTransport streams 64 MiB both ways with a bounded number of bytes in between")
struct TransportStreamingTests {
    static let size = 64 << 20
    /// The most bytes allowed between the producer and the server (upload), or the server and the reader
    /// (download): what the sockets' kernel buffers, NIO and Bulwark may hold. A transport that gathered the body
    /// would reach 64 MiB. Linux grows a socket's receive buffer while its reader keeps up (here up to 32 MiB,
    /// `tcp_rmem`), so the bound over a whole download is looser than the one right after a pause at its start,
    /// where the buffers are still small and only the transport's own buffering could let the server run ahead.
    static let bound = 24 << 20
    static let boundAfterPause = 8 << 20

    @Test("a 64 MiB upload is sent as it is produced")
    func upload() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await StreamingServer.start(chain: chain)
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let client = Client(
            serverURL: TransportHarness.serverURL(port: server.port),
            transport: BulwarkClientTransport(client: bulwark)
        )
        let largestGap = SharedBox(0)
        let source = ChunkSource(total: Self.size) { produced in
            let gap = produced - server.receivedBodyBytes
            largestGap.withLock { $0 = max($0, gap) }
        }
        let response = try await client.upload(
            body: .binary(HTTPBody(source, length: .known(Int64(Self.size)), iterationBehavior: .single))
        )
        #expect(try await String(collecting: response.ok.body.plainText, upTo: 1024) == "hello")
        #expect(server.receivedBodyBytes == Self.size)
        print("upload of \(Self.size) bytes: at most \(largestGap.value) bytes between producer and server")
        #expect(largestGap.value < Self.bound, "\(largestGap.value) bytes were buffered")
        await bulwark.shutdown()
        try await server.shutdown()
    }

    @Test("a 64 MiB download is read from the socket only as fast as the caller reads it")
    func download() async throws {
        let chain = try TestChain.make(host: TransportHarness.host)
        let server = try await StreamingServer.start(chain: chain)
        let bulwark = try TransportHarness.bulwark(port: server.port, chain: chain)
        let client = Client(
            serverURL: TransportHarness.serverURL(port: server.port),
            transport: BulwarkClientTransport(client: bulwark)
        )
        let response = try await client.download(path: .init(count: Self.size))
        let body = try response.ok.body.binary
        #expect(body.length == .known(Int64(Self.size)))
        var consumed = 0
        var largestGap = 0
        var gapAfterPause: Int?
        for try await chunk in body {
            // Byte i is i & 0xFF: check each chunk's ends.
            #expect(chunk.first == UInt8(truncatingIfNeeded: consumed))
            #expect(chunk.last == UInt8(truncatingIfNeeded: consumed + chunk.count - 1))
            consumed += chunk.count
            if gapAfterPause == nil {
                // A slow reader: a transport without backpressure would let the server send everything meanwhile.
                try await Task.sleep(for: .milliseconds(500))
                gapAfterPause = server.sentBodyBytes - consumed
            }
            largestGap = max(largestGap, server.sentBodyBytes - consumed)
        }
        #expect(consumed == Self.size)
        print(
            "download of \(Self.size) bytes: \(gapAfterPause ?? 0) bytes between server and reader after a 500 ms "
                + "pause, at most \(largestGap) over the download"
        )
        #expect((gapAfterPause ?? 0) < Self.boundAfterPause, "\(gapAfterPause ?? 0) bytes were buffered")
        #expect(largestGap < Self.bound, "\(largestGap) bytes were buffered")
        await bulwark.shutdown()
        try await server.shutdown()
    }
}
