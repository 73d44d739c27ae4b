import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing
import X509

@testable import Bulwark

/// Issue 39, item 18: nginx's page refusing a client certificate is read as that refusal only from a connection on
/// which the server sent a CertificateRequest. The peer is `openssl s_server -HTTP`, which sends a file as the whole
/// response: nginx's 496 page, byte for byte, from a server that asks for no certificate (`-HTTP` alone) or asks for
/// one and lets the handshake go on without it (`-verify 1`).
@Suite("nginx's refusal page only after a CertificateRequest", .serialized, .tags(.externalPeers))
struct RefusalPageCertificateRequestTests {
    let chain = InteropChain.shared

    /// nginx's 496 answer, head and page.
    static let response: String = {
        let page = ClientCertificateRefusalPageTests.page("No required SSL certificate was sent")
        return "HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Type: text/html\r\n"
            + "Content-Length: \(page.utf8.count)\r\nConnection: close\r\n\r\n" + page
    }()

    /// `openssl s_server -HTTP` serving ``response`` at `/page`, with `extra` arguments; its directory is removed by
    /// `stop`.
    func start(_ extra: [String]) async throws -> (PeerProcess, port: Int, directory: URL) {
        let directory = try ExternalPeers.makeDirectory("s_server-http")
        try ExternalPeers.writeServerFiles(self.chain, to: directory)
        try Self.response.write(to: directory.appending(path: "page"), atomically: true, encoding: .utf8)
        let openssl = try ExternalPeers.findTool("openssl")
        let bash = try ExternalPeers.findTool("bash")
        let port = try ExternalPeers.freePort()
        var arguments = [
            openssl.path, "s_server", "-accept", "127.0.0.1:\(port)",
            "-cert", directory.appending(path: "leaf.pem").path,
            "-key", directory.appending(path: "key.pem").path, "-HTTP",
        ]
        if self.chain.presentedChain.count > 1 {
            arguments += ["-cert_chain", directory.appending(path: "chain.pem").path]
        }
        // -HTTP serves files relative to the working directory.
        let command = "cd \"$1\" && shift && exec \"$@\""
        let peer = try PeerProcess(
            name: "openssl s_server -HTTP",
            executable: bash,
            arguments: ["-c", command, "bash", directory.path] + arguments + extra,
            logURL: directory.appending(path: "s_server.out")
        )
        do {
            try await peer.waitUntilAccepting(port: port)
        } catch {
            peer.stop()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return (peer, port, directory)
    }

    func fetch(port: Int) async throws -> (BulwarkResponse, String) {
        let configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                "localhost": .default(roots: .custom([self.chain.root.certificate]))
            ])
        )
        let client = BulwarkClient(configuration: configuration)
        do {
            let response = try await client.execute(
                BulwarkRequest(url: "https://localhost:\(port)/page"),
                timeout: .seconds(10)
            )
            let body = try await response.body.collect(upTo: 1 << 20)
            await client.shutdown()
            return (response, String(buffer: body))
        } catch {
            await client.shutdown()
            throw error
        }
    }

    @Test("a server that asked for no certificate: its nginx page stays a 400 response")
    func pageWithoutCertificateRequest() async throws {
        let (peer, port, directory) = try await self.start([])
        defer {
            peer.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let (response, body) = try await self.fetch(port: port)
        #expect(response.status == .badRequest)
        #expect(body.contains("No required SSL certificate was sent"))
    }

    @Test("a server that asked for a certificate and got none: its nginx page is the refusal")
    func pageAfterCertificateRequest() async throws {
        let (peer, port, directory) = try await self.start(["-verify", "1"])
        defer {
            peer.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        do {
            let (response, body) = try await self.fetch(port: port)
            Issue.record("the page was a response: \(response.status) \(body)")
        } catch let error as BulwarkError {
            #expect(error.code == .clientCertificateRejected, "\(error)")
            #expect(error.description.contains("No required SSL certificate was sent"), "\(error)")
        }
    }

    @Test(
        "one client, its contexts lent to one handshake at a time: each server's own request decides, again and again"
    )
    func alternatingServersKeepTheirOwnSignal() async throws {
        let (asking, askingPort, askingDirectory) = try await self.start(["-verify", "1"])
        let (silent, silentPort, silentDirectory) = try await self.start([])
        defer {
            asking.stop()
            silent.stop()
            try? FileManager.default.removeItem(at: askingDirectory)
            try? FileManager.default.removeItem(at: silentDirectory)
        }
        let client = BulwarkClient(
            configuration: BulwarkClient.Configuration(
                trust: try ServerTrustManager(evaluators: [
                    "localhost": .default(roots: .custom([self.chain.root.certificate]))
                ])
            )
        )
        // Each answer closes its connection: every request is a new handshake, on a context given back by the last.
        for round in 0..<4 {
            for (port, asks) in [(askingPort, true), (silentPort, false)] {
                do {
                    let response = try await client.execute(
                        BulwarkRequest(url: "https://localhost:\(port)/page"),
                        timeout: .seconds(10)
                    )
                    _ = try await response.body.collect(upTo: 1 << 20)
                    #expect(!asks, "round \(round): the asking server's page was a response")
                    #expect(response.status == .badRequest)
                } catch let error as BulwarkError {
                    #expect(asks, "round \(round): \(error)")
                    #expect(error.code == .clientCertificateRejected, "\(error)")
                }
            }
        }
        await client.shutdown()
    }

}
