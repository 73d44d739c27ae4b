import BulwarkPolicy
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import Testing

@testable import Bulwark

// The proxy paths read as an attacker (or a careless caller) would: a port no socket can have, an interim answer
// before the tunnel, a proxy trust that would be dropped without a word.
@Suite("Proxy hardening")
struct ProxyHardeningTests {
    @Test("TLSStream.connect with a port outside 1-65535 is invalid_url, not a trap", arguments: [70_000, 0, -1])
    func portOutOfRange(_ port: Int) async throws {
        let chain = try TestChain.make(host: "localhost")
        let configuration = TLSStream.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": .default(roots: .custom([chain.root.certificate]))])
        )
        for host in ["127.0.0.1", "localhost"] {
            do {
                _ = try await TLSStream.connect(host: host, port: port, configuration: configuration)
                Issue.record("connected to port \(port)")
            } catch let error as BulwarkError {
                #expect(error.code == .invalidURL, "\(error)")
                #expect(error.description.contains("\(port)"), "\(error)")
            }
        }
    }

    @Test("interim 1xx answers before the 200 to CONNECT are passed over; 101 is not an interim answer")
    func interimAnswersBeforeTheTunnel() throws {
        var parser = HTTPConnectResponseParser()
        let text =
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
            + "HTTP/1.1 200 Connection established\r\n\r\n"
        let outcome = try parser.receive(Array(text.utf8))
        #expect(outcome == .head(.init(status: 200, reason: "Connection established", challenges: []), trailing: 0))
        // Byte by byte, too.
        var slow = HTTPConnectResponseParser()
        var last = HTTPConnectResponseParser.Outcome.needMore
        for byte in text.utf8 { last = try slow.receive([byte]) }
        #expect(last == outcome)
        // An interim answer alone is not the tunnel.
        var interim = HTTPConnectResponseParser()
        #expect(try interim.receive(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) == .needMore)
        // 101 would switch protocols: it ends the handshake as any other non-2xx answer.
        var switching = HTTPConnectResponseParser()
        let head = try switching.receive(Array("HTTP/1.1 101 Switching Protocols\r\n\r\n".utf8))
        #expect(head == .head(.init(status: 101, reason: "Switching Protocols", challenges: []), trailing: 0))
    }

    @Test("endless interim answers are refused after 16 KiB in all")
    func endlessInterimAnswers() {
        var parser = HTTPConnectResponseParser()
        #expect(throws: ProxyHandshakeFailure.self) {
            for _ in 0..<2_000 { _ = try parser.receive(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
        }
    }

    @Test("trustingProxy(with:) with an environment that names an http:// proxy is refused, not silently dropped")
    func environmentHTTPProxyWithProxyTrust() async throws {
        let proxy = try await ScriptedProxyServer.start(.close)
        let environment = ProxyEnvironment(["https_proxy": "http://127.0.0.1:\(proxy.port)"])
        let client = try proxiedClient(.environment(environment).trustingProxy(with: DefaultTrustEvaluator()))
        let error = await proxiedError(client, "https://localhost:8443/")
        #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
        #expect(error?.description.contains("https_proxy") == true, "\(String(describing: error))")
        #expect(proxy.connectionCount == 0)
        await client.shutdown()
        try await proxy.shutdown()
    }
}
