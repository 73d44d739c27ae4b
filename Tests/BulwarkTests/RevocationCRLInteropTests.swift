import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

/// Revocation lists made by `openssl ca -gencrl`, served by nginx on loopback from the distribution point the
/// certificates name, or loaded from a file with the network disabled.
@Suite("CRLs from openssl ca served by nginx", .tags(.externalPeers), .serialized)
struct RevocationCRLInteropTests {
    typealias OCSP = RevocationOCSPInteropTests

    static func file(_ authority: RevocationAuthority, _ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: authority.directory.appending(path: name)))
    }

    @Test func goodAndRevokedFromTheDistributionPoint() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let server = try await PlainHTTPServer.start(port: authority.crlPort)
        defer { server.stop() }
        try server.serve("ca.crl", try Self.file(authority, "ca.crl"))
        for mode in OCSP.modes {
            let evaluator = OCSP.evaluator(authority, mode: mode, method: .crl)
            let good = await OCSP.decide(evaluator, authority.good)
            let check = try #require(good.trustedChain?.notices.first?.revocationCheck, "\(good)")
            #expect(check.method == .crl)
            #expect(check.status.source.contains("Bulwark Revocation Test CA"), "\(check.status.source)")
            #expect(check.origin == .url("http://127.0.0.1:\(authority.crlPort)/ca.crl"))
            #expect(!check.cached)
            // The list is kept until its nextUpdate: the next handshake fetches nothing.
            let again = await OCSP.decide(evaluator, authority.good)
            #expect(again.trustedChain?.notices.first?.revocationCheck?.cached == true)
            let revoked = await OCSP.decide(evaluator, authority.revoked)
            #expect(revoked.refusal?.reasons.map(\.code) == ["revoked"], "\(revoked)")
            let text = String(describing: revoked.refusal?.reasons.first)
            #expect(text.contains("key compromise") && text.contains("(CRL)"), "\(text)")
        }
        // One fetch per evaluator (each has its own store); the revoked check used the kept list.
        let logged = await server.requests(until: { $0.count >= 2 })
        #expect(logged == ["GET /ca.crl HTTP/1.1", "GET /ca.crl HTTP/1.1"], "\(logged)")
    }

    @Test func anExpiredListAndAListOfAnotherIssuer() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let other = try await RevocationAuthority.make(named: "Another Revocation Test CA")
        defer { other.remove() }
        let server = try await PlainHTTPServer.start(port: authority.crlPort)
        defer { server.stop() }
        try server.serve("ca.crl", try Self.file(authority, "ca-expired.crl"))
        for mode in OCSP.modes {
            let decision = await OCSP.decide(OCSP.evaluator(authority, mode: mode, method: .crl), authority.revoked)
            OCSP.expectUnknown(decision, mode: mode, mentioning: "out of date")
        }
        try server.serve("ca.crl", try Self.file(other, "ca.crl"))
        for mode in OCSP.modes {
            let decision = await OCSP.decide(OCSP.evaluator(authority, mode: mode, method: .crl), authority.good)
            OCSP.expectUnknown(decision, mode: mode, mentioning: "Another Revocation Test CA")
        }
    }

    @Test func anUnreachableDistributionPoint() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        for mode in OCSP.modes {
            let decision = await OCSP.decide(
                OCSP.evaluator(authority, mode: mode, method: .crl),
                authority.unreachable
            )
            OCSP.expectUnknown(decision, mode: mode, mentioning: "could not be reached (connection refused)")
        }
    }

    @Test func aLocalListWithTheNetworkDisabled() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        // A server at the distribution point that would answer: it must receive nothing.
        let server = try await PlainHTTPServer.start(port: authority.crlPort)
        defer { server.stop() }
        try server.serve("ca.crl", try Self.file(authority, "ca.crl"))
        let store = RevocationStore()
        try store.load(crl: try Self.file(authority, "ca.crl"))
        let evaluator: RevocationTrustEvaluator = .revocation(
            .default(roots: .custom([authority.root.certificate])),
            method: .crl,
            store: store,
            networkAccessDisabled: true
        )
        #expect(evaluator.networkAccessDisabled)
        let good = await OCSP.decide(evaluator, authority.good)
        #expect(good.trustedChain?.notices.first?.revocationCheck?.origin == .loadedList, "\(good)")
        let revoked = await OCSP.decide(evaluator, authority.revoked)
        #expect(revoked.refusal?.reasons.map(\.code) == ["revoked"], "\(revoked)")
        // OCSP with the network disabled and nothing cached: unknown, and nothing was sent anywhere.
        let ocspOnly: RevocationTrustEvaluator = .revocation(
            .default(roots: .custom([authority.root.certificate])),
            method: .ocsp,
            store: store,
            networkAccessDisabled: true
        )
        OCSP.expectUnknown(
            await OCSP.decide(ocspOnly, authority.good),
            mode: .hard,
            mentioning: "network access is disabled"
        )
        #expect(server.requests().isEmpty, "\(server.requests())")
    }

    @Test func preferCRLFallsBackToOCSPAndAnyAsksOCSPFirst() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let responder = try await authority.startResponder()
        defer { responder.stop() }
        // No CRL server: preferCRL tries the distribution point, fails, and asks the responder.
        let preferCRL = OCSP.evaluator(authority, mode: .hard, method: .preferCRL)
        let fallback = await OCSP.decide(preferCRL, authority.good)
        #expect(fallback.trustedChain?.notices.first?.revocationCheck?.method == .ocsp, "\(fallback)")
        // With both available, .any answers from OCSP without touching the distribution point.
        let server = try await PlainHTTPServer.start(port: authority.crlPort)
        defer { server.stop() }
        try server.serve("ca.crl", try Self.file(authority, "ca.crl"))
        let any = await OCSP.decide(OCSP.evaluator(authority, mode: .hard, method: .any), authority.good)
        #expect(any.trustedChain?.notices.first?.revocationCheck?.method == .ocsp, "\(any)")
        #expect(server.requests().isEmpty)
        // And preferCRL answers from the list when it is there (a fresh evaluator: the one above remembers for a
        // minute that the distribution point was down, and does not ask it again before then).
        let fromList = await OCSP.decide(OCSP.evaluator(authority, mode: .hard, method: .preferCRL), authority.revoked)
        let fromListText = String(describing: fromList.refusal?.reasons.first)
        #expect(fromListText.contains("(CRL)"), "\(fromList)")
    }

    @Test func concurrentHandshakesShareOneFetch() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let server = try await PlainHTTPServer.start(port: authority.crlPort)
        defer { server.stop() }
        try server.serve("ca.crl", try Self.file(authority, "ca.crl"))
        let store = RevocationStore()
        let evaluator = OCSP.evaluator(authority, mode: .hard, method: .crl, store: store)
        let decisions = await withTaskGroup(of: TrustDecision.self) { group in
            for _ in 0..<8 { group.addTask { await OCSP.decide(evaluator, authority.good) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let allTrusted = decisions.allSatisfy { $0.isTrusted }
        #expect(allTrusted, "\(decisions)")
        let logged = await server.requests(until: { !$0.isEmpty })
        #expect(logged.count == 1, "\(logged)")
        #expect(store.fetchedCount == 1)
        #expect(store.fetchesInFlight == 0)
    }
}
