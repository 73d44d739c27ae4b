import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOSSL
import Testing
import X509

@testable import Bulwark

/// A test server that requires a client certificate issued by `clientCA`, and clients with or without an identity.
struct MutualTLSHarness {
    let chain: TestChain
    let clientCA: TestIdentity
    let leaf: TestIdentity
    let identity: ClientIdentity

    init() throws {
        self.chain = try TestChain.make(host: Harness.host)
        self.clientCA = try CertificateFactory.makeRoot(commonName: "Bulwark Test Client CA")
        self.leaf = try ClientCertificates.leaf(self.clientCA)
        self.identity = try ClientCertificates.identity(self.leaf)
    }

    func server(alpn: [String], maximumTLSVersion: TLSVersion? = nil) async throws -> TestHTTPSServer {
        var configuration = TestHTTPSServer.Configuration(chain: self.chain)
        configuration.alpn = alpn
        configuration.maximumTLSVersion = maximumTLSVersion
        configuration.requiresClientCertificate = true
        configuration.clientCertificateRoots = [self.clientCA.certificate]
        return try await TestHTTPSServer.start(configuration: configuration)
    }

    func client(
        for server: TestHTTPSServer,
        identities: [String: ClientIdentity],
        monitor: RecordingEventMonitor = RecordingEventMonitor()
    ) throws -> BulwarkClient {
        let identities = try BulwarkClient.ClientIdentities(identities)
        return try Harness.client(for: server, evaluator: .default(roots: .custom([self.chain.root.certificate]))) {
            $0.clientIdentities = identities
            $0.eventMonitor = monitor
        }
    }
}

@Suite("Client certificates over real TLS on loopback (in-process server)")
struct ClientCertificateClientTests {
    static let protocols: [[String]] = [["h2"], ["http/1.1"]]

    @Test("the identity the host selects is sent, and reported without its key", arguments: Self.protocols)
    func identitySent(alpn: [String]) async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: alpn)
        let monitor = RecordingEventMonitor()
        let client = try harness.client(for: server, identities: [Harness.host: harness.identity], monitor: monitor)
        for _ in 0..<3 {
            let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
            #expect(response.status == .ok)
        }
        #expect(client.openConnectionCount == 1)
        let sent = monitor.events.filter { $0.kind == .clientCertificateSent }
        #expect(sent.count == 1)
        #expect(sent.first?.host == Harness.host)
        #expect(sent.first?.details[.fingerprint]?.text == harness.identity.fingerprint)
        #expect(sent.first?.details[.certificate]?.text == "CN=device-42")
        // No event (its sentence, its details) holds any line of the key.
        let keyLines = ClientCertificates.base64Lines(harness.leaf.privateKeyPEM)
        for event in monitor.events {
            let text = event.description + event.details.map { "\($0.key)=\($0.value)" }.joined()
            for line in keyLines { #expect(!text.contains(line)) }
        }
        await client.shutdown()
        try await server.shutdown()
    }

    @Test(
        "no identity, or one for another host, or one from another CA: client_certificate_rejected",
        arguments: Self.protocols
    )
    func rejected(alpn: [String]) async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: alpn)
        let strangerCA = try CertificateFactory.makeRoot(commonName: "Another CA")
        let stranger = try ClientCertificates.identity(try ClientCertificates.leaf(strangerCA))
        let cases: [([String: ClientIdentity], String)] = [
            ([:], "certificate required"),
            (["other.bulwark.test": harness.identity], "certificate required"),
            ([Harness.host: stranger], "unknown ca"),
        ]
        for (identities, alert) in cases {
            let monitor = RecordingEventMonitor()
            let client = try harness.client(for: server, identities: identities, monitor: monitor)
            let error = await Harness.expectError(.clientCertificateRejected) {
                _ = try await Harness.get(client, Harness.url(server, "/hello"))
            }
            #expect(error?.host == Harness.host)
            #expect(error?.description.contains("\"\(alert)\"") == true, "\(String(describing: error))")
            // The server is named with its port, as during the handshake, also when (TLS 1.3) the alert arrives after it.
            #expect(
                error?.description.contains("the server at \(Harness.host):\(server.port) ") == true,
                "\(String(describing: error))"
            )
            let sent = monitor.events.filter { $0.kind == .clientCertificateSent }
            #expect(sent.count == (identities[Harness.host] == nil ? 0 : 1))
            let withheld = monitor.events.filter { $0.kind == .clientCertificateWithheld }
            #expect(withheld.count == (identities[Harness.host] == nil ? 1 : 0))
            #expect(withheld.allSatisfy { $0.host == Harness.host })
            await client.shutdown()
        }
        try await server.shutdown()
    }

    @Test("over TLS 1.2 the rejection ends the handshake, with the same code")
    func rejectedTLS12() async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: ["http/1.1"], maximumTLSVersion: .tlsv12)
        let strangerCA = try CertificateFactory.makeRoot(commonName: "Another CA")
        let stranger = try ClientCertificates.identity(try ClientCertificates.leaf(strangerCA))
        let client = try harness.client(for: server, identities: [Harness.host: stranger])
        let error = await Harness.expectError(.clientCertificateRejected) {
            _ = try await Harness.get(client, Harness.url(server, "/hello"))
        }
        #expect(error?.description.contains("rejected the client certificate") == true)
        await client.shutdown()
        let good = try harness.client(for: server, identities: [Harness.host: harness.identity])
        let (response, _) = try await Harness.get(good, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        await good.shutdown()
        try await server.shutdown()
    }

    @Test("a server that asks for no certificate gets none, and no event is reported")
    func notAsked() async throws {
        let harness = try MutualTLSHarness()
        let server = try await Harness.server(harness.chain)
        let monitor = RecordingEventMonitor()
        let client = try harness.client(for: server, identities: [Harness.host: harness.identity], monitor: monitor)
        let (response, _) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(response.status == .ok)
        #expect(monitor.events.filter { $0.kind == .clientCertificateSent }.isEmpty)
        #expect(monitor.events.filter { $0.kind == .clientCertificateWithheld }.isEmpty)
        await client.shutdown()
        try await server.shutdown()
    }

    @Test("a TLSStream offers the identity its host selects; without one the server's alert is the typed error")
    func tlsStream() async throws {
        let harness = try MutualTLSHarness()
        let server = try await harness.server(alpn: ["http/1.1"])
        let monitor = RecordingEventMonitor()
        var configuration = TLSStream.Configuration(
            trust: try ServerTrustManager(evaluators: [
                Harness.host: .default(roots: .custom([harness.chain.root.certificate]))
            ])
        )
        configuration.resolveOverrides[.init(host: Harness.host, port: server.port)] = "127.0.0.1"
        configuration.eventMonitor = monitor
        configuration.clientIdentities = try .init([Harness.host: harness.identity])
        let request = ByteBuffer(string: "GET /hello HTTP/1.1\r\nHost: \(Harness.host)\r\nConnection: close\r\n\r\n")
        let stream = try await TLSStream.connect(host: Harness.host, port: server.port, configuration: configuration)
        try await stream.write(request)
        var received = ""
        while let buffer = try await stream.read() { received += String(buffer: buffer) }
        #expect(received.hasPrefix("HTTP/1.1 200"))
        try await stream.close()
        #expect(monitor.events.filter { $0.kind == .clientCertificateSent }.count == 1)

        configuration.clientIdentities = BulwarkClient.ClientIdentities()
        let bare = try await TLSStream.connect(host: Harness.host, port: server.port, configuration: configuration)
        try? await bare.write(request)
        let error = await Harness.expectError(.clientCertificateRejected) {
            while try await bare.read() != nil {}
        }
        #expect(error?.description.contains("certificate required") == true)
        try await bare.close()
        try await server.shutdown()
    }

    @Test("pool keys of different identities, or none, differ")
    func poolKeys() throws {
        let harness = try MutualTLSHarness()
        let other = try ClientCertificates.identity(try ClientCertificates.leaf(harness.clientCA))
        let keys = [nil, harness.identity, other].map {
            ConnectionPool.Key(scheme: "https", host: Harness.host, port: 443, identity: $0)
        }
        #expect(Set(keys).count == 3)
    }
}
