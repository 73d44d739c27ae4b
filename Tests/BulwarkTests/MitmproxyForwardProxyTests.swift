import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import X509

// mitmproxy in its regular (forward) mode: the client is configured with `.proxy = .http(mitmproxy)`, asks it for
// a CONNECT tunnel to nginx, and mitmproxy intercepts the TLS inside with a certificate of its own CA. The positive
// control (its CA trusted, no pin) shows that the interception really happens on this path, so the refusals are
// refusals of an interceptor, not of a broken path. mitmproxy's own flow file shows what requests reached it.

@Suite("mitmproxy as a forward proxy", .serialized, .tags(.externalPeers))
struct MitmproxyForwardProxyTests {
    let chain = InteropChain.shared
    var root: Certificate { self.chain.root.certificate }
    /// The genuine chain's intermediate and root keys.
    var genuinePins: PinSet {
        get throws {
            try PinSet([Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.root)])
        }
    }

    /// The request each test sends: a path and a header that must not reach the proxy when the policy refuses it.
    static let path = "/hello?token=forward-secret-query"
    static let secretHeader = "X-Forward-Secret"
    static let secretValue = "forward-secret-header"

    /// Sends the request through mitmproxy under `evaluator` for `localhost`; the response's body, or the error.
    func request(
        through mitm: MitmproxyServer,
        nginx: NginxServer,
        evaluator: any ServerTrustEvaluating
    ) async throws -> Result<(BulwarkResponse, String), BulwarkError> {
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": evaluator])
        )
        configuration.proxy = .http(URL(string: "http://127.0.0.1:\(mitm.port)")!)
        let client = BulwarkClient(configuration: configuration)
        defer { Task { await client.shutdown() } }
        var request = BulwarkRequest(url: "https://localhost:\(nginx.port)\(Self.path)")
        request.headers.add(name: Self.secretHeader, value: Self.secretValue)
        do {
            let response = try await client.execute(request)
            let body = try await response.body.collect(upTo: 1 << 20)
            return .success((response, String(buffer: body)))
        } catch let error as BulwarkError {
            return .failure(error)
        }
    }

    /// What proves that no request bytes reached mitmproxy: the client reached it (its TLS log shows the hello and
    /// the failed handshake), and neither its flow log nor its own flow file holds a request, a path or a header.
    func expectNoRequestBytes(_ mitm: MitmproxyServer) async throws {
        let events = try await mitm.tlsEvents { $0.hasPrefix("failed") }
        #expect(events.contains("clienthello localhost"), "\(events)")
        #expect(events.contains { $0.hasPrefix("failed localhost") }, "\(events)")
        #expect(!events.contains { $0.hasPrefix("established") }, "\(events)")
        #expect(mitm.requestsSeen.isEmpty, "\(mitm.requestsSeen)")
        let flows = try await mitm.savedFlows()
        #expect(flows.isEmpty, "\(flows)")
        let raw = (try? Data(contentsOf: URL(fileURLWithPath: mitm.flowFilePath))) ?? Data()
        for secret in ["forward-secret-query", Self.secretValue, "/hello"] {
            #expect(raw.range(of: Data(secret.utf8)) == nil, "\(secret) in mitmproxy's flow file")
        }
    }

    @Test("default trust: the intercepted chain is refused (trust_refused) and no request bytes reach mitmproxy")
    func defaultTrustRefused() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(mode: .regular)
        defer { mitm.stop() }
        let result = try await self.request(through: mitm, nginx: nginx, evaluator: .default(roots: .custom([root])))
        guard case .failure(let error) = result else {
            Issue.record("the request through mitmproxy succeeded under default trust")
            return
        }
        #expect(error.code == .trustRefused, "\(error)")
        let presented = error.trustRefusal?.presentedChain ?? []
        // mitmproxy's certificate, issued by its CA, not nginx's.
        #expect(presented.first?.issuer == CertificateSummary(try mitm.caCertificate()).subject, "\(presented)")
        #expect(presented.first?.certificatePin != Pin.certificate(of: self.chain.leaf.certificate))
        try await self.expectNoRequestBytes(mitm)
    }

    @Test("positive control: mitmproxy's CA trusted and no pin, the request is intercepted and mitmproxy reads it")
    func trustedCAIntercepts() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(mode: .regular)
        defer { mitm.stop() }
        let mitmCA = try mitm.caCertificate()
        let result = try await self.request(
            through: mitm,
            nginx: nginx,
            evaluator: .default(roots: .custom([root, mitmCA]))
        )
        guard case .success(let (response, body)) = result else {
            Issue.record("the positive control failed: \(result)")
            return
        }
        #expect(response.status == .ok)
        #expect(body == "hello from nginx\n")
        // The chain the client trusted is mitmproxy's: the path does intercept.
        let trusted = response.serverTrust?.presentedChain.first
        #expect(trusted.map { CertificateSummary($0).issuer } == CertificateSummary(mitmCA).subject)
        #expect(mitm.requestsSeen == ["GET https://localhost:\(nginx.port)\(Self.path)"], "\(mitm.requestsSeen)")
        let flows = try await mitm.savedFlows()
        #expect(flows.contains("GET https://localhost:\(nginx.port)\(Self.path)"), "\(flows)")
        #expect(flows.lowercased().contains("\(Self.secretHeader.lowercased()): \(Self.secretValue)"), "\(flows)")
        #expect(try await nginx.accessLog(atLeast: 1).map(\.status) == [200])
    }

    @Test("mitmproxy's CA trusted and the origin's keys pinned: refused (pin_mismatch), no request bytes reach it")
    func pinnedRefusedWithCATrusted() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(mode: .regular)
        defer { mitm.stop() }
        let mitmCA = try mitm.caCertificate()
        let pinned = PublicKeysTrustEvaluator.publicKeys(try genuinePins, roots: .custom([root, mitmCA]))
        let result = try await self.request(through: mitm, nginx: nginx, evaluator: pinned)
        guard case .failure(let error) = result else {
            Issue.record("the pinned request through mitmproxy succeeded")
            return
        }
        #expect(error.code == .trustRefused, "\(error)")
        let reasons = error.trustRefusal?.reasons.map(\.code) ?? []
        #expect(reasons == ["pin_mismatch"], "\(reasons)")
        try await self.expectNoRequestBytes(mitm)
    }
}
