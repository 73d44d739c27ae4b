import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import Bulwark
@_spi(Insecure) @testable import BulwarkPolicy

// Revocation fetches read as an attacker would: a chain nobody verified must not make the client fetch the URLs it
// names (a blind request to any address the certificate chooses, such as a cloud metadata service).
@Suite("Revocation fetch hardening")
struct RevocationFetchHardeningTests {
    /// A leaf whose distribution point and OCSP responder are `url`, issued by a CA nobody trusts.
    static func chain(naming url: String) throws -> [Certificate] {
        let ca = try CertificateFactory.makeRoot(commonName: "Anyone's CA")
        var blueprint = CertificateBlueprint(
            commonName: "victim.bulwark.test",
            privateKey: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            notBefore: Date() - 3_600,
            notAfter: Date() + 86_400
        )
        blueprint.extraExtensions = [
            try CRLBuilder.distributionPoints([url + "/list.crl"]),
            try Certificate.Extension(
                AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(url))]),
                critical: false
            ),
        ]
        return [try blueprint.issue(issuer: ca).certificate, ca.certificate]
    }

    @Test(
        "an unverified chain (validation disabled, alone or first in a composite) fetches nothing it names",
        arguments: [false, true]
    )
    func noFetchFromAnUnverifiedChain(composite: Bool) async throws {
        let listener = try await ScriptedProxyServer.start(.close)
        let chain = try Self.chain(naming: "http://127.0.0.1:\(listener.port)")
        let base: any ServerTrustEvaluating =
            composite ? CompositeTrustEvaluator([DisabledTrustEvaluator(), DisabledTrustEvaluator()]) : .disabled
        for mode in [RevocationTrustEvaluator.Mode.soft, .hard] {
            let evaluator = RevocationTrustEvaluator(
                base,
                method: .any,
                mode: mode,
                fetcher: HTTPRevocationFetcher(timeout: .seconds(10)),
                // Not about time: the whole in-process run can keep the cooperative pool busy for seconds.
                budget: .seconds(60)
            )
            let decision = await evaluator.evaluate(chain, forHost: "victim.bulwark.test", at: Date())
            let text: String
            if mode == .soft {
                let trusted = try #require(decision.trustedChain)
                #expect(trusted.notices.contains { $0.code == "revocation_unknown" })
                text = trusted.notices.map { String(describing: $0) }.joined(separator: "\n")
            } else {
                text = String(describing: try #require(decision.refusal))
            }
            #expect(text.contains("not verified"), "\(text)")
        }
        #expect(listener.connectionCount == 0, "a revocation source named by an unverified chain was fetched")
        try await listener.shutdown()
    }
    @Test("a list refused for one malformed entry leaves the status unknown with an event naming the list as malformed")
    func malformedEntryNamesTheList() async throws {
        let chain = try TestChain.make(host: "victim.bulwark.test")
        let intermediate = try #require(chain.intermediate)
        // A list whose only entry has a negative serial number (02 01 81): strict DER refuses the whole list.
        var builder = CRLBuilder(issuer: intermediate.certificate.subject, thisUpdate: Date() - 60, nextUpdate: nil)
        builder.nextUpdate = Date() + 86_400
        builder.entries = [.init(Certificate.SerialNumber(bytes: [0x01]), revokedAt: Date() - 60, reason: nil)]
        var der = try builder.der(signedBy: intermediate)
        let serial: [UInt8] = [0x02, 0x01, 0x01, 0x17]
        let at = try #require((0..<(der.count - 4)).first { Array(der[$0..<($0 + 4)]) == serial })
        der[at + 2] = 0x81
        let body = Array("HTTP/1.1 200 OK\r\nContent-Length: \(der.count)\r\n\r\n".utf8) + der
        let responder = try await ScriptedProxyServer.start(.reply(body, close: true))
        let url = "http://127.0.0.1:\(responder.port)/list.crl"
        let leaf = try Self.leaf(chain, naming: url, at: Date())
        let evaluator = Self.evaluator(chain, mode: .soft)
        let decision = await evaluator.evaluate(
            [leaf, intermediate.certificate],
            forHost: "victim.bulwark.test",
            at: Date()
        )
        let trusted = try #require(decision.trustedChain, "\(decision)")
        let leafNotice = try #require(trusted.notices.first { $0.code == "revocation_unknown" })
        let text = String(describing: leafNotice)
        #expect(text.contains(url) && text.contains("malformed"), "\(text)")
        try await responder.shutdown()
    }
    /// A CRL-distribution-points extension with one point, `uri`, limited to the reason keyCompromise.
    static func reasonsLimitedDistributionPoint(_ uri: String) throws -> Certificate.Extension {
        var name = DER.Serializer()
        try name.serialize(GeneralName.uniformResourceIdentifier(uri))
        let general = name.serializedBytes
        let fullName: [UInt8] = [0xA0, UInt8(general.count)] + general
        let point: [UInt8] = [0xA0, UInt8(fullName.count)] + fullName
        let reasons: [UInt8] = [0x81, 0x02, 0x06, 0x40]
        let body = point + reasons
        let sequence: [UInt8] = [0x30, UInt8(body.count)] + body
        let value: [UInt8] = [0x30, UInt8(sequence.count)] + sequence
        return Certificate.Extension(oid: [2, 5, 29, 31], critical: false, value: ArraySlice(value))
    }

    @Test("a distribution point limited to some reasons is not complete coverage: its list cannot say good")
    func reasonsLimitedPointIsNotCompleteCoverage() async throws {
        let chain = try TestChain.make(host: "victim.bulwark.test")
        let intermediate = try #require(chain.intermediate)
        let now = Date()
        let list = try CRLBuilder(
            issuer: intermediate.certificate.subject,
            thisUpdate: now - 60,
            nextUpdate: now + 86_400
        )
        .der(signedBy: intermediate)
        let body = Array("HTTP/1.1 200 OK\r\nContent-Length: \(list.count)\r\n\r\n".utf8) + list
        let responder = try await ScriptedProxyServer.start(.reply(body, close: true))
        let leaf = try Self.leaf(
            chain,
            naming: "http://127.0.0.1:\(responder.port)/list.crl",
            at: now,
            point: try Self.reasonsLimitedDistributionPoint("http://127.0.0.1:\(responder.port)/list.crl")
        )
        let store = RevocationStore()
        try store.load(
            crl: try CRLBuilder(issuer: chain.root.certificate.subject, thisUpdate: now - 60, nextUpdate: now + 86_400)
                .der(signedBy: chain.root)
        )
        let evaluator = RevocationTrustEvaluator(
            .default(roots: .custom([chain.root.certificate])),
            method: .crl,
            mode: .hard,
            store: store,
            fetcher: HTTPRevocationFetcher(timeout: .seconds(10)),
            // Not about time: the whole in-process run can keep the cooperative pool busy for seconds.
            budget: .seconds(60)
        )
        let decision = await evaluator.evaluate(
            [leaf, intermediate.certificate],
            forHost: "victim.bulwark.test",
            at: now
        )
        let refusal = try #require(decision.refusal, "a list from a reasons-limited point said good: \(decision)")
        #expect(refusal.reasons.map(\.code) == ["revocation_unknown"], "\(refusal)")
        try await responder.shutdown()
    }
    @Test(
        "a source that is unreachable or serves an unusable list is asked once a minute, not on every handshake",
        arguments: [true, false]
    )
    func failedSourcesAreCachedNegatively(unusable: Bool) async throws {
        let chain = try TestChain.make(host: "victim.bulwark.test")
        let intermediate = try #require(chain.intermediate)
        let now = Date()
        let garbage = Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n0000".utf8)
        let responder = try await ScriptedProxyServer.start(unusable ? .reply(garbage, close: true) : .close)
        let leaf = try Self.leaf(chain, naming: "http://127.0.0.1:\(responder.port)/list.crl", at: now)
        let evaluator = Self.evaluator(chain, mode: .soft)
        let last = await Self.noticesOfThreeChecks(evaluator, [leaf, intermediate.certificate], from: now)
        #expect(responder.connectionCount == 1, "\(last)")
        #expect(last.contains("not asked again"), "\(last)")
        // A minute later, the source is asked again.
        _ = await evaluator.evaluate([leaf, intermediate.certificate], forHost: "victim.bulwark.test", at: now + 61)
        #expect(responder.connectionCount == 2)
        try await responder.shutdown()
    }
    @Test("for a connection through a SOCKS5 proxy, a revocation fetch is not made at all rather than around it")
    func socksRouteNeverGoesAround() async throws {
        let listener = try await ScriptedProxyServer.start(.close)
        let route = ProxyRoute(endpoint: try ProxyEndpoint(kind: .socks5, host: "127.0.0.1", port: 1), credentials: nil)
        let request = RevocationFetchRequest(
            kind: .crl,
            url: "http://127.0.0.1:\(listener.port)/list.crl",
            maximumResponseSize: 1_000
        )
        let error = await RevocationFetchRoute.$proxy.withValue(route) { () async -> RevocationFetchError? in
            do {
                _ = try await HTTPRevocationFetcher(timeout: .seconds(2)).fetch(request)
                return nil
            } catch {
                return error as? RevocationFetchError
            }
        }
        #expect(error?.code == "unreachable", "\(String(describing: error))")
        #expect(String(describing: error).contains("never go around"), "\(String(describing: error))")
        #expect(listener.connectionCount == 0)
        try await listener.shutdown()
    }

    // MARK: - The attack review's findings

    /// A leaf issued by `chain`'s intermediate whose CRL distribution point is `url`.
    /// A CRL-checking evaluator over the real fetcher, trusting `chain`'s root.
    static func evaluator(_ chain: TestChain, mode: RevocationTrustEvaluator.Mode) -> RevocationTrustEvaluator {
        RevocationTrustEvaluator(
            .default(roots: .custom([chain.root.certificate])),
            method: .crl,
            mode: mode,
            fetcher: HTTPRevocationFetcher(timeout: .seconds(10)),
            // Not about time: the whole in-process run can keep the cooperative pool busy for seconds.
            budget: .seconds(60)
        )
    }

    /// The notices of the last of three checks of `chain` at `now`, 1 s and 30 s later (within the negative cache's
    /// minute); empty when the last was refused.
    static func noticesOfThreeChecks(
        _ evaluator: RevocationTrustEvaluator,
        _ chain: [Certificate],
        from now: Date
    ) async -> String {
        var last = ""
        for offset in [0.0, 1, 30] {
            let decision = await evaluator.evaluate(chain, forHost: "victim.bulwark.test", at: now + offset)
            last = (decision.trustedChain?.notices ?? []).map { String(describing: $0) }.joined(separator: "\n")
        }
        return last
    }

    /// A server that answers every connection with `body` as a 200 response, then closes it.
    static func serving(_ body: [UInt8]) async throws -> ScriptedProxyServer {
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        return try await ScriptedProxyServer.start(.reply(head + body, close: true))
    }

    static func leaf(
        _ chain: TestChain,
        naming url: String,
        at now: Date,
        point: Certificate.Extension? = nil
    ) throws -> Certificate {
        var blueprint = CertificateBlueprint(
            commonName: "victim.bulwark.test",
            privateKey: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            notBefore: now - 3_600,
            notAfter: now + 86_400
        )
        blueprint.subjectAlternativeNames = [.dnsName("victim.bulwark.test")]
        blueprint.extendedKeyUsage = [.serverAuth]
        blueprint.extraExtensions = [try point ?? CRLBuilder.distributionPoints([url])]
        return try blueprint.issue(issuer: try #require(chain.intermediate)).certificate
    }

    @Test("a fetch not made through one connection's SOCKS5 proxy is no failure of the source for a direct connection")
    func aProxyRouteFailureDoesNotAnswerForTheDirectWay() async throws {
        let chain = try TestChain.make(host: "victim.bulwark.test")
        let intermediate = try #require(chain.intermediate)
        let now = Date()
        var builder = CRLBuilder(
            issuer: intermediate.certificate.subject,
            thisUpdate: now - 60,
            nextUpdate: now + 86_400
        )
        builder.entries = []
        let der = try builder.der(
            signedWith: try P256.Signing.PrivateKey(pemRepresentation: intermediate.privateKeyPEM)
        )
        let responder = try await Self.serving(der)
        let leaf = try Self.leaf(chain, naming: "http://127.0.0.1:\(responder.port)/list.crl", at: now)
        let evaluator = Self.evaluator(chain, mode: .soft)
        let socks = ProxyRoute(endpoint: try ProxyEndpoint(kind: .socks5, host: "127.0.0.1", port: 1), credentials: nil)
        let throughSOCKS = await RevocationFetchRoute.$proxy.withValue(socks) {
            await evaluator.evaluate([leaf, intermediate.certificate], forHost: "victim.bulwark.test", at: now)
        }
        let socksNotices = (throughSOCKS.trustedChain?.notices ?? []).map { String(describing: $0) }
        #expect(socksNotices.contains { $0.contains("never go around") }, "\(socksNotices)")
        #expect(responder.connectionCount == 0)
        // The direct way is asked: the list arrives, and says the leaf is good.
        let direct = await evaluator.evaluate(
            [leaf, intermediate.certificate],
            forHost: "victim.bulwark.test",
            at: now
        )
        let notices = (direct.trustedChain?.notices ?? []).map { String(describing: $0) }
        #expect(responder.connectionCount == 1, "\(notices)")
        #expect(!notices.contains { $0.contains("not asked again") || $0.contains("never go around") }, "\(notices)")
        try await responder.shutdown()
    }

    @Test("a list that parses but no key of the issuer signed is not fetched again on every handshake")
    func aForgedListIsCachedNegatively() async throws {
        let chain = try TestChain.make(host: "victim.bulwark.test")
        let intermediate = try #require(chain.intermediate)
        let now = Date()
        // Signed with a key that is not the intermediate's: the list of a forger on the path.
        let builder = CRLBuilder(
            issuer: intermediate.certificate.subject,
            thisUpdate: now - 60,
            nextUpdate: now + 86_400
        )
        let der = try builder.der(signedWith: P256.Signing.PrivateKey())
        let responder = try await Self.serving(der)
        let leaf = try Self.leaf(chain, naming: "http://127.0.0.1:\(responder.port)/list.crl", at: now)
        let evaluator = Self.evaluator(chain, mode: .soft)
        let last = await Self.noticesOfThreeChecks(evaluator, [leaf, intermediate.certificate], from: now)
        #expect(responder.connectionCount == 1, "\(last)")
        #expect(last.contains("not asked again"), "\(last)")
        try await responder.shutdown()
    }

    @Test("a revocation fetch through an HTTP proxy that does not ask for credentials carries none")
    func proxyCredentialsOnlyWhenAsked() async throws {
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nlist".utf8)
        let proxy = try await ScriptedProxyServer.start(.reply(answer, close: true))
        let route = ProxyRoute(
            endpoint: try ProxyEndpoint(kind: .http, host: "127.0.0.1", port: proxy.port),
            credentials: try ProxyCredentials(username: "alice", password: SecretBytes(utf8: "hunter2"))
        )
        let request = RevocationFetchRequest(
            kind: .crl,
            url: "http://crl.bulwark.test/list.crl",
            maximumResponseSize: 100
        )
        let body = await RevocationFetchRoute.$proxy.withValue(route) { () async -> [UInt8]? in
            // Not about time: the whole in-process run can keep the cooperative pool busy for seconds.
            try? await HTTPRevocationFetcher(timeout: .seconds(30)).fetch(request)
        }
        #expect(body == Array("list".utf8))
        let sent = String(decoding: proxy.receivedBytes, as: UTF8.self)
        #expect(sent.hasPrefix("GET http://crl.bulwark.test/list.crl HTTP/1.1\r\n"), "\(sent)")
        #expect(!sent.lowercased().contains("proxy-authorization"), "\(sent)")
        try await proxy.shutdown()
    }

}
