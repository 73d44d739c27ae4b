import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing
import X509

@testable import Bulwark

/// Mutual TLS against real peers: nginx with `ssl_verify_client on`, and `openssl s_server` requesting (`-verify`) or
/// requiring (`-Verify`) a client certificate.
@Suite("Client certificates against nginx and openssl s_server", .serialized, .tags(.externalPeers))
struct ClientCertificateInteropTests {
    let chain = InteropChain.shared
    let clientCA: TestIdentity
    let identity: ClientIdentity
    let stranger: ClientIdentity

    init() throws {
        self.clientCA = try CertificateFactory.makeRoot(commonName: "Bulwark Interop Client CA")
        self.identity = try ClientCertificates.identity(try ClientCertificates.leaf(self.clientCA))
        let strangerCA = try CertificateFactory.makeRoot(commonName: "Another CA")
        self.stranger = try ClientCertificates.identity(try ClientCertificates.leaf(strangerCA))
    }

    /// Runs `body` with a client that trusts the interop chain for `localhost` and offers `identities`.
    func withClient<Result>(
        _ identities: [String: ClientIdentity],
        monitor: RecordingEventMonitor = RecordingEventMonitor(),
        _ body: (BulwarkClient) async throws -> Result
    ) async throws -> Result {
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                "localhost": .default(roots: .custom([self.chain.root.certificate]))
            ])
        )
        configuration.clientIdentities = try BulwarkClient.ClientIdentities(identities)
        configuration.eventMonitor = monitor
        let client = BulwarkClient(configuration: configuration)
        do {
            let result = try await body(client)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    func get(_ client: BulwarkClient, port: Int, _ path: String) async throws -> (BulwarkResponse, String) {
        let response = try await client.execute(
            BulwarkRequest(url: "https://localhost:\(port)\(path)"),
            timeout: .seconds(10)
        )
        let body = try await response.body.collect(upTo: 1 << 20)
        return (response, String(buffer: body))
    }

    /// BoringSSL verifies no Ed25519 signature unless told to (so the in-process NIOSSL server cannot take one);
    /// nginx, over OpenSSL, does.
    @Test(
        "nginx (ssl_verify_client on): an Ed25519 identity (PKCS#8 PEM) is accepted, over HTTP/2 and HTTP/1.1",
        arguments: [NginxServer.Variant.modern, .modernHTTP1]
    )
    func nginxAcceptsEd25519(variant: NginxServer.Variant) async throws {
        let nginx = try await NginxServer.start(
            chain: self.chain,
            variant: variant,
            clientCA: self.clientCA.certificate
        )
        defer { nginx.stop() }
        let (leaf, pem) = try ClientCertificates.ed25519Leaf(self.clientCA)
        let identity = try ClientCertificates.identity(leaf, keyPEM: pem)
        try await self.withClient(["localhost": identity]) { client in
            let (response, body) = try await self.get(client, port: nginx.port, "/whoami")
            #expect(response.status == .ok)
            #expect(response.httpVersion == (variant == .modern ? .http2 : .http1_1))
            #expect(body == "CN=ed25519-device\n")
        }
    }

    @Test(
        "nginx (ssl_verify_client on): the right identity is accepted and nginx echoes its subject",
        arguments: [NginxServer.Variant.modern, .modernHTTP1]
    )
    func nginxAccepts(variant: NginxServer.Variant) async throws {
        let nginx = try await NginxServer.start(
            chain: self.chain,
            variant: variant,
            clientCA: self.clientCA.certificate
        )
        defer { nginx.stop() }
        let monitor = RecordingEventMonitor()
        try await self.withClient(["localhost": self.identity], monitor: monitor) { client in
            for _ in 0..<2 {
                let (response, body) = try await self.get(client, port: nginx.port, "/whoami")
                #expect(response.status == .ok)
                #expect(response.httpVersion == (variant == .modern ? .http2 : .http1_1))
                #expect(response.headers["x-client-dn"] == ["CN=device-42"])
                #expect(body == "CN=device-42\n")
            }
        }
        let sent = monitor.events.filter { $0.kind == .clientCertificateSent }
        #expect(sent.count == 1)
        #expect(sent.first?.details[.fingerprint]?.text == self.identity.fingerprint)
    }

    /// nginx never fails the TLS handshake for a client certificate: it completes it and answers every request with
    /// its own 400 page (internally 496 "no certificate" and 495 "certificate error", for another CA, an expired or a
    /// revoked certificate alike). Bulwark reads that page and ends the request with `client_certificate_rejected`,
    /// naming the server and nginx's words, as it does for a TLS alert.
    @Test(
        "nginx: no identity, one for another host, another CA's or an expired one is client_certificate_rejected",
        arguments: [NginxServer.Variant.modern, .modernHTTP1]
    )
    func nginxRefuses(variant: NginxServer.Variant) async throws {
        let nginx = try await NginxServer.start(
            chain: self.chain,
            variant: variant,
            clientCA: self.clientCA.certificate
        )
        defer { nginx.stop() }
        // Issued by the right CA, valid for two days until yesterday; loaded as of its validity.
        let expiredLeaf = try ClientCertificates.leaf(self.clientCA, validity: .expired, commonName: "expired-device")
        let expired = try ClientIdentity.pem(
            certificateChain: Array(expiredLeaf.certificatePEM.utf8),
            privateKey: SecretBytes(utf8: expiredLeaf.privateKeyPEM),
            now: expiredLeaf.certificate.notValidAfter - 3600
        )
        let cases: [([String: ClientIdentity], [String])] = [
            ([:], ["requires a client certificate and none was sent", "No required SSL certificate was sent"]),
            (["other.example": self.identity], ["requires a client certificate", "No required SSL certificate"]),
            (["localhost": self.stranger], ["rejected the client certificate \"CN=device-42\"", "certificate error"]),
            (["localhost": expired], ["\"CN=expired-device\"", "certificate error", "expired on "]),
        ]
        for (identities, phrases) in cases {
            try await self.withClient(identities) { client in
                do {
                    let (response, body) = try await self.get(client, port: nginx.port, "/whoami")
                    Issue.record("nginx answered \(response.status): \(body)")
                } catch let error as BulwarkError {
                    print("[interop] nginx \(variant), \(identities.keys.sorted()): \(error)")
                    #expect(error.code == .clientCertificateRejected, "\(error)")
                    #expect(error.host == "localhost")
                    #expect(error.description.contains("localhost:\(nginx.port)"), "\(error)")
                    for phrase in phrases { #expect(error.description.contains(phrase), "\(phrase): \(error)") }
                }
            }
        }
        // The right identity passes.
        try await self.withClient(["localhost": self.identity]) { client in
            let (response, body) = try await self.get(client, port: nginx.port, "/whoami")
            #expect(response.status == .ok)
            #expect(body == "CN=device-42\n")
            // nginx's ordinary 400 page is a response like any other.
            let (refused, page) = try await self.get(client, port: nginx.port, "/bad-request")
            #expect(refused.status == .badRequest)
            #expect(page.contains("<title>400 Bad Request</title>"), "\(page)")
        }
    }

    /// A connection to an IP-address host sends no SNI name; the withheld event still names the address.
    func addressHostIsNamedWhenWithheld() async throws {
        let chain = try TestChain.make(.ipAddressSAN)
        let directory = try ExternalPeers.makeDirectory("client-ca")
        let caFile = directory.appending(path: "client-ca.pem")
        try (self.clientCA.certificatePEM + "\n").write(to: caFile, atomically: true, encoding: .utf8)
        let server = try await OpenSSLServer.start(
            chain: chain,
            extraArguments: ["-CAfile", caFile.path, "-verify", "1"]
        )
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let monitor = RecordingEventMonitor()
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["127.0.0.1": .default(roots: .custom([chain.root.certificate]))])
        )
        configuration.clientIdentities = try BulwarkClient.ClientIdentities(["localhost": self.identity])
        configuration.eventMonitor = monitor
        let client = BulwarkClient(configuration: configuration)
        do {
            let response = try await client.execute(
                BulwarkRequest(url: "https://127.0.0.1:\(server.port)/"),
                timeout: .seconds(10)
            )
            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            #expect(body.contains("no client certificate available"))
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        let withheld = monitor.events.filter { $0.kind == .clientCertificateWithheld }
        #expect(withheld.count == 1)
        #expect(withheld.first?.host == "127.0.0.1")
    }

    /// `openssl s_server` with a file of the client CA and `extra` arguments.
    func sServer(_ extra: [String]) async throws -> (OpenSSLServer, URL) {
        let directory = try ExternalPeers.makeDirectory("client-ca")
        let caFile = directory.appending(path: "client-ca.pem")
        try (self.clientCA.certificatePEM + "\n").write(to: caFile, atomically: true, encoding: .utf8)
        let server = try await OpenSSLServer.start(chain: self.chain, extraArguments: ["-CAfile", caFile.path] + extra)
        return (server, directory)
    }

    func sServerOutput(_ server: OpenSSLServer) -> String {
        (try? String(contentsOf: server.directory.appending(path: "s_server.out"), encoding: .utf8)) ?? ""
    }

    @Test("s_server -verify 1: a host the identity is not configured for is asked and receives no certificate")
    func sServerReceivesNone() async throws {
        let (server, directory) = try await self.sServer(["-verify", "1"])
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let monitor = RecordingEventMonitor()
        try await self.withClient(["other.example": self.identity, "**.example": self.identity], monitor: monitor) {
            client in
            let (response, body) = try await self.get(client, port: server.port, "/")
            #expect(response.status == .ok)
            #expect(body.contains("no client certificate available"))
            #expect(!body.contains("device-42"))
        }
        #expect(monitor.events.filter { $0.kind == .clientCertificateSent }.isEmpty)
        let withheld = monitor.events.filter { $0.kind == .clientCertificateWithheld }
        #expect(withheld.count == 1)
        #expect(withheld.first?.host == "localhost")
        #expect(!self.sServerOutput(server).contains("device-42"))
        try await self.addressHostIsNamedWhenWithheld()
        // The same server, with the identity selected for localhost: it receives and verifies the certificate.
        try await self.withClient(["localhost": self.identity]) { client in
            let (response, body) = try await self.get(client, port: server.port, "/")
            #expect(response.status == .ok)
            #expect(body.contains("Client certificate"))
            #expect(body.contains("device-42"))
        }
        #expect(self.sServerOutput(server).contains("CN = device-42"))
    }

    @Test(
        "s_server -Verify 1: no identity or another CA's is client_certificate_rejected naming the alert",
        arguments: [[], ["-tls1_2"]]
    )
    func sServerRejects(tls: [String]) async throws {
        // -verify_return_error: s_server otherwise logs a verification failure and goes on.
        let (server, directory) = try await self.sServer(["-Verify", "1", "-verify_return_error"] + tls)
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let cases: [([String: ClientIdentity], [String])] = [
            ([:], ["certificate required", "handshake failure"]),
            (["localhost": self.stranger], ["unknown ca"]),
        ]
        for (identities, alerts) in cases {
            try await self.withClient(identities) { client in
                do {
                    _ = try await self.get(client, port: server.port, "/")
                    Issue.record("the request succeeded")
                } catch let error as BulwarkError {
                    print("[interop] s_server -Verify \(tls.first ?? "TLS 1.3"), \(identities.keys.sorted()): \(error)")
                    let named = alerts.contains { error.description.contains("\"\($0)\"") }
                    // TLS 1.2 servers answer a missing certificate with handshake_failure, which Bulwark cannot tell
                    // from other handshake failures: that one stays tls_handshake_failed, naming client certificates.
                    if error.code == .tlsHandshakeFailed {
                        #expect(identities.isEmpty && !tls.isEmpty, "\(error)")
                        #expect(error.description.contains("client certificate"), "\(error)")
                    } else {
                        #expect(error.code == .clientCertificateRejected, "\(error)")
                        #expect(named, "\(error)")
                        #expect(error.host == "localhost")
                    }
                }
            }
        }
        // The right identity passes.
        try await self.withClient(["localhost": self.identity]) { client in
            let (response, body) = try await self.get(client, port: server.port, "/")
            #expect(response.status == .ok)
            #expect(body.contains("device-42"))
        }
    }

    @Test("keys converted by openssl: SEC1 and encrypted PKCS#8 (right, wrong and missing passphrase)")
    func opensslKeyFormats() async throws {
        let openssl = try ExternalPeers.findTool("openssl")
        let directory = try ExternalPeers.makeDirectory("client-keys")
        defer { try? FileManager.default.removeItem(at: directory) }
        let leaf = try ClientCertificates.leaf(self.clientCA)
        let plain = directory.appending(path: "key.pem")
        try leaf.privateKeyPEM.write(to: plain, atomically: true, encoding: .utf8)
        let sec1 = directory.appending(path: "sec1.pem")
        let encrypted = directory.appending(path: "encrypted.pem")
        let converted = try await ExternalPeers.run(openssl, ["ec", "-in", plain.path, "-out", sec1.path])
        #expect(converted.status == 0, "\(converted.stderr)")
        let wrapped = try await ExternalPeers.run(
            openssl,
            [
                "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:correct horse", "-in", plain.path,
                "-out", encrypted.path,
            ]
        )
        #expect(wrapped.status == 0, "\(wrapped.stderr)")
        let chain = Array(leaf.certificatePEM.utf8)
        let sec1Text = try String(contentsOf: sec1, encoding: .utf8)
        #expect(sec1Text.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        let fromSEC1 = try ClientIdentity.pem(
            certificateChain: chain,
            privateKey: try SecretBytes(contentsOfFile: sec1.path)
        )
        #expect(fromSEC1.subject == "CN=device-42")
        let decrypted = try ClientIdentity.pem(
            certificateChain: chain,
            privateKey: try SecretBytes(contentsOfFile: encrypted.path),
            passphrase: SecretBytes(utf8: "correct horse")
        )
        #expect(decrypted.fingerprint == fromSEC1.fingerprint)
        ClientCertificates.expectError(.wrongPassphrase) {
            _ = try ClientIdentity.pem(
                certificateChain: chain,
                privateKey: try SecretBytes(contentsOfFile: encrypted.path),
                passphrase: SecretBytes(utf8: "battery staple")
            )
        }
        ClientCertificates.expectError(.passphraseRequired) {
            _ = try ClientIdentity.pem(
                certificateChain: chain,
                privateKey: try SecretBytes(contentsOfFile: encrypted.path)
            )
        }
    }

    @Test("a PKCS#12 bundle made by openssl loads with its passphrase, with its CA certificate as the chain")
    func pkcs12Bundle() async throws {
        let openssl = try ExternalPeers.findTool("openssl")
        let directory = try ExternalPeers.makeDirectory("client-p12")
        defer { try? FileManager.default.removeItem(at: directory) }
        let intermediate = try CertificateFactory.issueIntermediate(from: self.clientCA)
        let leaf = try ClientCertificates.leaf(intermediate)
        let files = [
            "key.pem": leaf.privateKeyPEM, "cert.pem": leaf.certificatePEM, "ca.pem": intermediate.certificatePEM,
        ]
        for (name, text) in files {
            try text.write(to: directory.appending(path: name), atomically: true, encoding: .utf8)
        }
        let bundle = directory.appending(path: "identity.p12")
        let exported = try await ExternalPeers.run(
            openssl,
            [
                "pkcs12", "-export", "-in", directory.appending(path: "cert.pem").path,
                "-inkey", directory.appending(path: "key.pem").path,
                "-certfile", directory.appending(path: "ca.pem").path, "-passout", "pass:correct horse",
                "-out", bundle.path,
            ]
        )
        #expect(exported.status == 0, "\(exported.stderr)")
        let identity = try ClientIdentity.pkcs12(
            try SecretBytes(contentsOfFile: bundle.path, trimmingTrailingNewlines: false),
            passphrase: SecretBytes(utf8: "correct horse")
        )
        #expect(identity.subject == "CN=device-42")
        #expect(identity.certificateChain == [leaf.certificate, intermediate.certificate])
        ClientCertificates.expectError(.wrongPassphrase) {
            _ = try ClientIdentity.pkcs12(
                try SecretBytes(contentsOfFile: bundle.path, trimmingTrailingNewlines: false),
                passphrase: SecretBytes(utf8: "battery staple")
            )
        }
        ClientCertificates.expectError(.unreadableKey) {
            _ = try ClientIdentity.pkcs12(SecretBytes(Array("not a bundle".utf8)), passphrase: SecretBytes(utf8: "x"))
        }
        // nginx, trusting the root only, accepts the leaf with the intermediate the bundle carried.
        let nginx = try await NginxServer.start(chain: self.chain, clientCA: self.clientCA.certificate)
        defer { nginx.stop() }
        try await self.withClient(["localhost": identity]) { client in
            let (response, body) = try await self.get(client, port: nginx.port, "/whoami")
            #expect(response.status == .ok)
            #expect(body == "CN=device-42\n")
        }
    }

    @Test("bulwark fetch --cert/--key/--key-passphrase-file and --p12: accepted by nginx; rejection exits 4")
    func commandLine() async throws {
        let openssl = try ExternalPeers.findTool("openssl")
        let directory = try ExternalPeers.makeDirectory("client-cli")
        defer { try? FileManager.default.removeItem(at: directory) }
        let leaf = try ClientCertificates.leaf(self.clientCA)
        func path(_ name: String) -> String { directory.appending(path: name).path }
        try leaf.privateKeyPEM.write(toFile: path("key.pem"), atomically: true, encoding: .utf8)
        try leaf.certificatePEM.write(toFile: path("cert.pem"), atomically: true, encoding: .utf8)
        try "correct horse\n".write(toFile: path("passphrase"), atomically: true, encoding: .utf8)
        let encrypted = try await ExternalPeers.run(
            openssl,
            [
                "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:correct horse", "-in", path("key.pem"),
                "-out", path("encrypted.pem"),
            ]
        )
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        let exported = try await ExternalPeers.run(
            openssl,
            [
                "pkcs12", "-export", "-in", path("cert.pem"), "-inkey", path("key.pem"), "-passout",
                "pass:correct horse", "-out", path("identity.p12"),
            ]
        )
        #expect(exported.status == 0, "\(exported.stderr)")

        let nginx = try await NginxServer.start(chain: self.chain, clientCA: self.clientCA.certificate)
        defer { nginx.stop() }
        let url = "https://localhost:\(nginx.port)/whoami"
        let variants: [[String]] = [
            ["--cert", path("cert.pem"), "--key", path("key.pem")],
            // curl's -E (issue 42); a password after a colon is not taken: passphrases come from files.
            ["-E", path("cert.pem"), "--key", path("key.pem")],
            ["--cert", path("cert.pem"), "--key", path("encrypted.pem"), "--key-passphrase-file", path("passphrase")],
            ["--p12", path("identity.p12"), "--key-passphrase-file", path("passphrase")],
        ]
        for identity in variants {
            let result = try await CLI.run(["fetch", url, "--ca", nginx.rootPEMPath] + identity)
            #expect(result.status == 0, "\(identity): \(result.stderr)")
            #expect(result.stdout == "CN=device-42\n", "\(identity)")
            #expect(!result.stderr.contains("BEGIN"))
        }
        let alone = try await CLI.run(["fetch", url, "--ca", nginx.rootPEMPath, "--cert", path("cert.pem")])
        #expect(alone.status != 0)
        #expect(alone.stderr.contains("--cert and --key go together"), "\(alone.stderr)")
        let wrong = try await CLI.run([
            "fetch", url, "--ca", nginx.rootPEMPath, "--cert", path("cert.pem"), "--key", path("encrypted.pem"),
        ])
        #expect(wrong.status == 64, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("the private key is encrypted"), "\(wrong.stderr)")
        // nginx's refusal page is a rejection too: exit 4, nginx's words, and no page on standard output.
        let none = try await CLI.run(["fetch", url, "--ca", nginx.rootPEMPath])
        #expect(none.status == 4, "\(none.stderr)")
        #expect(none.stderr.contains("requires a client certificate and none was sent"), "\(none.stderr)")
        #expect(none.stdout.isEmpty, "\(none.stdout)")

        let (server, serverDirectory) = try await self.sServer(["-Verify", "1", "-verify_return_error"])
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: serverDirectory)
        }
        let refused = try await CLI.run(["fetch", "https://localhost:\(server.port)/", "--ca", server.rootPEMPath])
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("client_certificate_rejected"), "\(refused.stderr)")
    }
}
