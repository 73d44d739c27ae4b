import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

/// Revocation checking against a real `openssl ocsp` responder on loopback, answering from the database of a real
/// `openssl ca`: every case under hard and soft mode, with the verdict and the event each must give.
@Suite("OCSP against a real openssl ocsp responder", .tags(.externalPeers), .serialized)
struct RevocationOCSPInteropTests {
    static let host = "api.bulwark.test"
    static let modes: [RevocationTrustEvaluator.Mode] = [.hard, .soft]

    static func evaluator(
        _ authority: RevocationAuthority,
        mode: RevocationTrustEvaluator.Mode,
        method: RevocationTrustEvaluator.Method = .ocsp,
        store: RevocationStore = RevocationStore(),
        // Every test but the stalled responder's (which passes its own) expects an answer or a refused connection:
        // the fetch's time limit is not what they are about, and a short one failed beside the other suites.
        timeout: Int64 = 30
    ) -> RevocationTrustEvaluator {
        RevocationTrustEvaluator(
            .default(roots: .custom([authority.root.certificate])),
            method: method,
            mode: mode,
            store: store,
            fetcher: HTTPRevocationFetcher(timeout: .seconds(timeout)),
            // The evaluation's budget is not what these tests are about, and `openssl ocsp` beside the other
            // external-program suites once took longer than the default 4 s.
            budget: .seconds(30)
        )
    }

    static func decide(
        _ evaluator: RevocationTrustEvaluator,
        _ leaf: TestIdentity,
        at time: Date = Date()
    ) async -> TrustDecision {
        await evaluator.evaluate([leaf.certificate], forHost: Self.host, at: time)
    }

    /// Expects what an unknown status gives: a `revocation_unknown` refusal in hard mode, a trusted chain with a
    /// `revocation_unknown` notice in soft mode; `detail` must appear in the reason.
    static func expectUnknown(
        _ decision: TrustDecision,
        mode: RevocationTrustEvaluator.Mode,
        mentioning detail: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        if mode == .hard {
            let reasons = decision.refusal?.reasons ?? []
            #expect(reasons.map(\.code) == ["revocation_unknown"], "\(decision)", sourceLocation: sourceLocation)
            #expect(
                reasons.first?.detail?.contains(detail) == true,
                "\(String(describing: reasons.first?.detail))",
                sourceLocation: sourceLocation
            )
        } else {
            let notices = decision.trustedChain?.notices ?? []
            #expect(notices.map(\.code) == ["revocation_unknown"], "\(decision)", sourceLocation: sourceLocation)
            #expect(
                notices.first?.unknownRevocation?.reason.contains(detail) == true,
                "\(String(describing: notices.first?.unknownRevocation))",
                sourceLocation: sourceLocation
            )
            #expect(notices.first?.eventKind == .revocationUnknown, sourceLocation: sourceLocation)
        }
    }

    @Test func goodRevokedAndUnknownCertificates() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let responder = try await authority.startResponder()
        defer { responder.stop() }
        for mode in Self.modes {
            let evaluator = Self.evaluator(authority, mode: mode)
            // Good: trusted, one revocation_checked notice saying OCSP, the responder, fetched; then cached.
            let good = await Self.decide(evaluator, authority.good)
            let check = try #require(good.trustedChain?.notices.first?.revocationCheck, "\(good)")
            #expect(good.trustedChain?.notices.map(\.code) == ["revocation_checked"])
            #expect(check.method == .ocsp)
            #expect(check.status.code == "good")
            #expect(check.status.source.contains("OCSP Responder"), "\(check.status.source)")
            #expect(check.origin == .url("http://127.0.0.1:\(authority.ocspPort)"))
            #expect(!check.cached)
            let nextUpdate = try #require(check.status.nextUpdate)
            #expect(good.trustedChain?.validUntil == nextUpdate, "the decision holds until the answer's nextUpdate")
            let again = await Self.decide(evaluator, authority.good)
            #expect(again.trustedChain?.notices.first?.revocationCheck?.cached == true)

            // Revoked: refused in both modes; the message names the certificate, serial, time, reason and responder.
            let revoked = await Self.decide(evaluator, authority.revoked)
            let reason = try #require(revoked.refusal?.reasons.first, "\(revoked)")
            #expect(revoked.refusal?.reasons.map(\.code) == ["revoked"])
            let text = String(describing: reason)
            #expect(text.contains("api.bulwark.test"), "\(text)")
            #expect(text.contains(String(describing: authority.revoked.certificate.serialNumber)), "\(text)")
            #expect(text.contains("key compromise"), "\(text)")
            #expect(text.contains("OCSP Responder") && text.contains("(OCSP)"), "\(text)")
            #expect(reason.revocation?.reason == "key compromise")

            // Unknown: the responder does not know the serial.
            let unknown = await Self.decide(evaluator, authority.unknown)
            Self.expectUnknown(unknown, mode: mode, mentioning: "unknown")
        }
    }

    @Test func aResponderThatIsDown() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        for mode in Self.modes {
            let decision = await Self.decide(Self.evaluator(authority, mode: mode), authority.good)
            Self.expectUnknown(decision, mode: mode, mentioning: "could not be reached (connection refused)")
        }
    }

    @Test func aResponderStalledPastTheTimeout() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let stalled = try StalledListener(port: authority.ocspPort)
        defer { stalled.stop() }
        for mode in Self.modes {
            let clock = ContinuousClock()
            let start = clock.now
            let decision = await Self.decide(Self.evaluator(authority, mode: mode, timeout: 1), authority.good)
            let elapsed = clock.now - start
            Self.expectUnknown(decision, mode: mode, mentioning: "did not answer within 1 s")
            // The upper bound only catches a fetch that never ends: on a loaded machine, peers' stop() and the shared
            // thread pool stretch the wait well past the time limit.
            #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(20), "\(elapsed)")
        }
    }

    @Test func aResponseSignedByTheWrongKey() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        // Another CA's responder signs: a valid OCSPSigning certificate, but not one this CA issued.
        let other = try await RevocationAuthority.make(named: "Another Revocation Test CA")
        defer { other.remove() }
        let responder = try await authority.startResponder(
            signerCertificate: other.path("responder.pem"),
            signerKey: other.path("responder.key")
        )
        defer { responder.stop() }
        for mode in Self.modes {
            let decision = await Self.decide(Self.evaluator(authority, mode: mode), authority.good)
            Self.expectUnknown(decision, mode: mode, mentioning: "OCSP: the answer of http://127.0.0.1")
        }
        // Even a "revoked" answer signed by the wrong key proves nothing: unknown, not revoked.
        let forged = await Self.decide(Self.evaluator(authority, mode: .soft), authority.revoked)
        #expect(forged.isTrusted, "\(forged)")
    }

    @Test func aResponseWhoseNextUpdateHasPassed() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let responder = try await authority.startResponder()
        defer { responder.stop() }
        // The responder's answers hold for a day (-ndays 1): checked two days later, they are stale.
        let later = Date() + 2 * 86_400
        for mode in Self.modes {
            let decision = await Self.decide(Self.evaluator(authority, mode: mode), authority.good, at: later)
            Self.expectUnknown(decision, mode: mode, mentioning: "OCSP: the answer of")
        }
    }

    @Test func aReplayedResponseWithAnotherNonce() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        // A genuine answer for the good certificate, to a request openssl made with its own nonce, replayed by a
        // server that answers every request with it.
        let replay = try await authority.recordedResponse(for: "good.pem", nonce: true)
        let server = try await PlainHTTPServer.start(port: authority.ocspPort, everyPath: "replay.der")
        defer { server.stop() }
        try server.serve("replay.der", replay)
        for mode in Self.modes {
            let decision = await Self.decide(Self.evaluator(authority, mode: mode), authority.good)
            Self.expectUnknown(decision, mode: mode, mentioning: "nonce")
        }
        // Garbage in place of a response: unknown, with a typed reason.
        try server.serve("replay.der", Array("<html>not an OCSP response</html>".utf8))
        for mode in Self.modes {
            let decision = await Self.decide(Self.evaluator(authority, mode: mode), authority.good)
            Self.expectUnknown(decision, mode: mode, mentioning: "OCSP: the answer of")
        }
        #expect(server.requests().allSatisfy { $0.hasPrefix("GET /") }, "small requests are sent with GET")
    }

    @Test func theClientChecksEveryHandshakeAgainstTheResponder() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let responder = try await authority.startResponder()
        defer { responder.stop() }

        let goodServer = try await Harness.server(authority.chain(authority.good))
        let monitor = RecordingEventMonitor()
        let client = try Harness.client(for: goodServer, evaluator: Self.evaluator(authority, mode: .hard)) {
            $0.eventMonitor = monitor
            // The handshake's time limit includes trust evaluation, the fetch from the responder with it: the default
            // 10 s would cut off the 30 s the evaluator is given.
            $0.timeouts.tlsHandshake = .seconds(30)
        }
        let (response, body) = try await Harness.get(client, Harness.url(goodServer, "/hello"))
        #expect(response.status == .ok)
        #expect(body == "hello")
        let checked = try #require(monitor.events.first { $0.kind == .revocationChecked })
        #expect(checked.details[.revocationMethod] == .text("OCSP"))
        #expect(checked.details[.revocationStatus] == .text("good"))
        #expect(checked.details[.cached] == .flag(false))
        #expect(checked.details[.fetchedFrom] == .text("http://127.0.0.1:\(authority.ocspPort)"))
        #expect(checked.details[.nextUpdate] != nil)
        await client.shutdown()
        try await goodServer.shutdown()

        let revokedServer = try await Harness.server(authority.chain(authority.revoked))
        let refusedMonitor = RecordingEventMonitor()
        let refusing = try Harness.client(for: revokedServer, evaluator: Self.evaluator(authority, mode: .soft)) {
            $0.eventMonitor = refusedMonitor
            $0.timeouts.tlsHandshake = .seconds(30)
        }
        let error = await Harness.expectError(.trustRefused) {
            _ = try await Harness.get(refusing, Harness.url(revokedServer, "/hello"))
        }
        #expect(String(describing: error as Any).contains("was revoked at"))
        let revoked = try #require(refusedMonitor.events.first { $0.kind == .certificateRevoked })
        let serial = String(describing: authority.revoked.certificate.serialNumber)
        #expect(revoked.details[.serialNumber] == .text(serial))
        #expect(revoked.details[.revocationReason] == .text("key compromise"))
        #expect(revoked.details[.revokedAt] != nil)
        #expect(revokedServer.receivedApplicationBytes == 0)
        await refusing.shutdown()
        try await revokedServer.shutdown()
    }

    @Test func aResponseFetchedElsewhereIsVerifiedAndUsedWithTheNetworkDisabled() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        // What a sidecar (or, one day, a stapling server) would hand over: openssl's answers, without a nonce.
        let goodResponse = try await authority.recordedResponse(for: "good.pem", nonce: false)
        let revokedResponse = try await authority.recordedResponse(for: "revoked.pem", nonce: false)
        let unknownResponse = try await authority.recordedResponse(for: "unknown.pem", nonce: false)
        let store = RevocationStore()
        let root = authority.root.certificate
        #expect(
            try store.load(ocspResponse: goodResponse, for: authority.good.certificate, issuer: root).code == "good"
        )
        #expect(
            try store.load(ocspResponse: revokedResponse, for: authority.revoked.certificate, issuer: root).code
                == "revoked"
        )
        let unknown = #expect(throws: RevocationError.self) {
            try store.load(ocspResponse: unknownResponse, for: authority.unknown.certificate, issuer: root)
        }
        #expect(unknown?.code == "unknown_to_responder")
        let mismatched = #expect(throws: RevocationError.self) {
            try store.load(ocspResponse: goodResponse, for: authority.revoked.certificate, issuer: root)
        }
        #expect(mismatched != nil, "an answer for another certificate is refused")
        #expect(store.answerCount == 2)
        // No responder is running: the evaluator answers from what was loaded.
        let evaluator: RevocationTrustEvaluator = .revocation(
            .default(roots: .custom([root])),
            method: .ocsp,
            store: store,
            networkAccessDisabled: true
        )
        let good = await Self.decide(evaluator, authority.good)
        #expect(good.trustedChain?.notices.first?.revocationCheck?.cached == true, "\(good)")
        let revoked = await Self.decide(evaluator, authority.revoked)
        #expect(revoked.refusal?.reasons.map(\.code) == ["revoked"], "\(revoked)")
    }

    /// swift-certificates' `OCSPVerifierPolicy`, driven through Bulwark's transport, agrees with Bulwark's own
    /// verification on the same responder: good passes, revoked fails, and (in its hard mode, with failures terminal)
    /// an unknown status and a responder that is down fail too.
    @Test func swiftCertificatesOCSPPolicyOverBulwarksTransportAgrees() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let responder = try await authority.startResponder()
        // This requester is expected to get answers: its time limit is not what the test is about. (The lenient one
        // below only meets the stopped responder, whose refused connection fails at once.)
        let requester = BulwarkOCSPRequester(fetcher: HTTPRevocationFetcher(timeout: .seconds(30)))
        func policyAccepts(_ leaf: TestIdentity) async -> Bool {
            var verifier = Verifier(rootCertificates: CertificateStore([authority.root.certificate])) {
                RFC5280Policy()
                OCSPVerifierPolicy(failureMode: .hard, requester: requester)
            }
            let result = await verifier.validate(leaf: leaf.certificate, intermediates: CertificateStore())
            if case .validCertificate = result { return true }
            return false
        }
        let bulwark = Self.evaluator(authority, mode: .hard)
        for (leaf, expected) in [(authority.good, true), (authority.revoked, false), (authority.unknown, false)] {
            let accepted = await policyAccepts(leaf)
            let trusted = await Self.decide(bulwark, leaf).isTrusted
            #expect(accepted == expected, "\(leaf.certificate.serialNumber)")
            #expect(trusted == expected, "\(leaf.certificate.serialNumber)")
        }
        responder.stop()
        #expect(await policyAccepts(authority.good) == false, "a terminal failure fails the policy")
        let lenient = BulwarkOCSPRequester(
            fetcher: HTTPRevocationFetcher(timeout: .seconds(2)),
            failuresAreTerminal: false
        )
        var verifier = Verifier(rootCertificates: CertificateStore([authority.root.certificate])) {
            RFC5280Policy()
            OCSPVerifierPolicy(failureMode: .hard, requester: lenient)
        }
        let passed = await verifier.validate(leaf: authority.good.certificate, intermediates: CertificateStore())
        if case .couldNotValidate = passed {
            Issue.record("a non-terminal failure passes OCSPVerifierPolicy even in hard mode (its documented rule)")
        }
    }
}

/// The `bulwark` command line against the same `openssl ocsp` responder. `--revocation` uses the library's default
/// fetch time limit and budget (3 s and 4 s), which the command line has no option to raise: beside the other
/// external-program suites, on two cores, they can run out. So it runs in the `.alone` process, after the others.
@Suite("OCSP from the command line against a real openssl ocsp responder", .tags(.externalPeers, .alone), .serialized)
struct RevocationOCSPCommandLineTests {
    @Test func theCommandLineChecksWhenAskedAndPrintsEachStatus() async throws {
        let authority = try await RevocationAuthority.make()
        defer { authority.remove() }
        let responder = try await authority.startResponder()
        defer { responder.stop() }
        let good = try await Harness.server(authority.chain(authority.good), alpn: ["http/1.1"])
        defer { Task { try? await good.shutdown() } }
        let target = "\(Harness.host):\(good.port)"
        let inspected = try await CLI.run([
            "inspect", target, "--ca", authority.path("ca.pem"), "--resolve", "\(target):127.0.0.1",
            "--revocation", "hard",
        ])
        #expect(inspected.status == 0, "\(inspected.stdout)\(inspected.stderr)")
        #expect(inspected.stdout.contains("Revocation (hard):"), "\(inspected.stdout)")
        #expect(inspected.stdout.contains("CN=api.bulwark.test: good"), "\(inspected.stdout)")
        #expect(
            inspected.stdout.contains("OCSP from http://127.0.0.1:\(authority.ocspPort)"),
            "\(inspected.stdout)"
        )
        #expect(inspected.stdout.contains("      valid:      20"), "\(inspected.stdout)")

        let revoked = try await Harness.server(authority.chain(authority.revoked), alpn: ["http/1.1"])
        defer { Task { try? await revoked.shutdown() } }
        let revokedTarget = "\(Harness.host):\(revoked.port)"
        let fetched = try await CLI.run([
            "fetch", "https://\(revokedTarget)/hello", "--ca", authority.path("ca.pem"),
            "--resolve", "\(revokedTarget):127.0.0.1", "--revocation", "soft",
        ])
        #expect(fetched.status == 5, "\(fetched.stderr)")
        #expect(fetched.stderr.contains("was revoked at"), "\(fetched.stderr)")
        #expect(revoked.receivedApplicationBytes == 0)
        // Without --revocation, fetch does not check (curl's default): the revoked server answers.
        let unchecked = try await CLI.run([
            "fetch", "https://\(revokedTarget)/hello", "--ca", authority.path("ca.pem"),
            "--resolve", "\(revokedTarget):127.0.0.1",
        ])
        #expect(unchecked.status == 0, "\(unchecked.stderr)")
        #expect(unchecked.stdout == "hello")
    }
}
