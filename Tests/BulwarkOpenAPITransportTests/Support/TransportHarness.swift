import AsyncHTTPClient
import Bulwark
import BulwarkTestSupport
import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import NIOSSL
import OpenAPIRuntime
import X509

/// Clients of a test server on 127.0.0.1 reached by the name `api.bulwark.test` (so SNI and host validation use a DNS
/// name, as in production): a pinned Bulwark client, and an AsyncHTTPClient trusting the same root.
enum TransportHarness {
    static let host = "api.bulwark.test"

    static func serverURL(port: Int) -> URL {
        URL(string: "https://\(Self.host):\(port)")!
    }

    /// A Bulwark client pinning `pinned`'s key (the chain's leaf by default) and a backup key, on top of validation to
    /// the chain's root.
    static func bulwark(port: Int, chain: TestChain, pinning pinned: Certificate? = nil) throws -> BulwarkClient {
        let backup = try CertificateFactory.makeRoot(commonName: "Backup key")
        let pins = try PinSet([
            Pin.publicKey(of: pinned ?? chain.leaf.certificate), Pin.publicKey(of: backup.certificate),
        ])
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [
                (try HostPattern(Self.host), .publicKeys(pins, roots: .custom([chain.root.certificate])))
            ])
        )
        configuration.resolveOverrides[.init(host: Self.host, port: port)] = "127.0.0.1"
        return BulwarkClient(configuration: configuration)
    }

    /// An AsyncHTTPClient trusting the chain's root, resolving the test name to 127.0.0.1.
    static func asyncHTTPClient(chain: TestChain) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: chain.root.certificate.derBytes, format: .der)])
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.dnsOverride = [Self.host: "127.0.0.1"]
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// What a transport returned, read whole: status, header fields (`name: value`, sorted), body bytes (nil for no
    /// body).
    struct Exchange: Equatable, CustomStringConvertible {
        var status: Int
        var headers: [String]
        var body: [UInt8]?

        init(_ response: HTTPResponse, _ body: HTTPBody?) async throws {
            self.status = response.status.code
            self.headers = response.headerFields.map { "\($0.name.canonicalName): \($0.value)" }.sorted()
            if let body {
                self.body = Array(try await [UInt8](collecting: body, upTo: 16 << 20))
            } else {
                self.body = nil
            }
        }

        var description: String {
            "\(self.status) \(self.headers) body: \(self.body.map { "\($0.count) bytes" } ?? "none")"
        }
    }
}

/// 64 KiB chunks, made only when asked for, up to `total` bytes: the request body of the streaming tests. `onChunk`
/// is told the bytes produced so far, before each chunk is handed over.
struct ChunkSource: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    static let chunk = [UInt8](repeating: 0x5A, count: 65_536)[...]

    let total: Int
    let onChunk: @Sendable (Int) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        let total: Int
        let onChunk: @Sendable (Int) -> Void
        var produced = 0

        mutating func next() async -> ArraySlice<UInt8>? {
            guard self.produced < self.total else { return nil }
            let size = Swift.min(ChunkSource.chunk.count, self.total - self.produced)
            self.produced += size
            self.onChunk(self.produced)
            return ChunkSource.chunk.prefix(size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(total: self.total, onChunk: self.onChunk)
    }
}
