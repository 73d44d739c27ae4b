import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

// A revocation fetch made for a connection through a proxy goes through that proxy, as the request that caused it:
// a fetch around the proxy leaks the visited site's CA to the local network, and where only the proxy reaches out,
// hard mode would refuse every host.
@Suite("Revocation fetches through the client's proxy", .serialized, .tags(.externalPeers))
struct RevocationProxyTests {
    @Test("the CRL of a connection through squid is fetched through squid (its log shows the GET in absolute form)")
    func crlFetchGoesThroughTheProxy() async throws {
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let now = Date()
        let root = try CertificateFactory.makeRoot()
        let intermediate = try CertificateFactory.issueIntermediate(from: root)
        let list = try CRLBuilder(
            issuer: intermediate.certificate.subject,
            thisUpdate: now - 60,
            nextUpdate: now + 86_400
        )
        .der(signedBy: intermediate)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: \(list.count)\r\nConnection: close\r\n\r\n".utf8) + list
        let distribution = try await ScriptedProxyServer.start(.reply(answer, close: true))
        let url = "http://localhost:\(distribution.port)/list.crl"
        var blueprint = CertificateBlueprint(
            commonName: "localhost",
            privateKey: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            notBefore: now - 3_600,
            notAfter: now + 86_400
        )
        blueprint.subjectAlternativeNames = [.dnsName("localhost")]
        blueprint.extendedKeyUsage = [.serverAuth]
        blueprint.extraExtensions = [try CRLBuilder.distributionPoints([url])]
        let leaf = try blueprint.issue(issuer: intermediate)
        let origin = try await TestHTTPSServer.start(
            configuration: .init(chain: [leaf.certificate, intermediate.certificate], privateKey: leaf.privateKey)
        )
        let store = RevocationStore()
        try store.load(
            crl: try CRLBuilder(issuer: root.certificate.subject, thisUpdate: now - 60, nextUpdate: now + 86_400)
                .der(signedBy: root)
        )
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                "localhost": RevocationTrustEvaluator(
                    .default(roots: .custom([root.certificate])),
                    method: .crl,
                    mode: .hard,
                    store: store,
                    // The route is what this test is about, not the time: beside the other external-program suites
                    // on two cores, squid once took longer than the default 4 s budget (CI of 1f418e4).
                    fetcher: HTTPRevocationFetcher(timeout: .seconds(30)),
                    budget: .seconds(30)
                )
            ])
        )
        configuration.proxy = .http(
            URL(string: "http://127.0.0.1:\(squid.port)")!,
            credentials: try ProxyCredentials(
                username: SquidProxy.username,
                password: SecretBytes(utf8: SquidProxy.password)
            )
        )
        // The handshake's time limit includes trust evaluation, the fetch through squid with it: the default 10 s
        // would cut off the 30 s the evaluator is given above.
        configuration.timeouts.tlsHandshake = .seconds(30)
        let client = BulwarkClient(configuration: configuration)
        do {
            let response = try await client.execute(BulwarkRequest(url: "https://localhost:\(origin.port)/hello"))
            #expect(response.status == .ok)
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        try await origin.shutdown()
        try await distribution.shutdown()
        let log = try await squid.accessLog(atLeast: 3)
        #expect(log.contains { $0.contains("GET \(url)") }, "the list was fetched around the proxy: \(log)")
        // The credentials went only after squid asked for them: a 407 first, then the list.
        #expect(log.contains { $0.contains("GET \(url)") && $0.contains("/407") }, "\(log)")
        #expect(log.contains { $0.contains("GET \(url)") && $0.contains("/200") }, "\(log)")
        #expect(log.contains { $0.contains("CONNECT localhost:\(origin.port)") }, "\(log)")
    }
}
