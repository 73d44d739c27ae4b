import BulwarkTestSupport
import Foundation
import Testing
import X509

@_spi(Insecure) @testable import BulwarkPolicy

/// One shared set of generated chains: key generation is the slow part of these tests.
enum Chains {
    static let host = "api.bulwark.test"
    static let all: [TestChain.Scenario: TestChain] = {
        var chains: [TestChain.Scenario: TestChain] = [:]
        for scenario in TestChain.Scenario.allCases {
            chains[scenario] = try! TestChain.make(scenario, host: host)
        }
        return chains
    }()

    static subscript(_ scenario: TestChain.Scenario) -> TestChain { all[scenario]! }

    static func roots(_ chain: TestChain) -> TrustRoots { .custom([chain.root.certificate]) }
}

extension TrustDecision {
    var reasons: [TrustFailureReason] { self.refusal?.reasons ?? [] }
}

@Suite("Default evaluator over the certificate matrix")
struct DefaultEvaluatorTests {
    let now = Date()

    func evaluate(_ scenario: TestChain.Scenario, host: String = Chains.host) async -> TrustDecision {
        let chain = Chains[scenario]
        return await DefaultTrustEvaluator(roots: Chains.roots(chain)).evaluate(
            chain.presentedChain,
            forHost: host,
            at: now
        )
    }

    @Test func validChainIsTrustedWithTheFullVerifiedPath() async throws {
        let decision = await evaluate(.valid)
        let trusted = try #require(decision.trustedChain)
        let chain = Chains[.valid]
        #expect(
            trusted.certificates == [chain.leaf.certificate, chain.intermediate!.certificate, chain.root.certificate]
        )
        #expect(trusted.notices.isEmpty)
    }

    @Test func expiredLeafIsRefusedAsExpired() async {
        let decision = await evaluate(.expiredLeaf)
        guard let reason = decision.reasons.first, reason.code == "expired", let subject = reason.certificate else {
            Issue.record("expected .expired first, got \(decision.reasons)")
            return
        }
        #expect(subject.contains(Chains.host))
    }

    @Test func notYetValidLeafIsRefusedAsNotYetValid() async {
        let decision = await evaluate(.notYetValidLeaf)
        guard decision.reasons.first?.code == "not_yet_valid" else {
            Issue.record("expected .notYetValid first, got \(decision.reasons)")
            return
        }
    }

    @Test func wrongHostIsRefusedNamingHostAndCertificateNames() async {
        let decision = await evaluate(.wrongHost)
        #expect(decision.reasons == [.hostnameMismatch(host: Chains.host, names: ["DNS:other.invalid"])])
        #expect(String(describing: decision.refusal!).contains("api.bulwark.test"))
    }

    @Test func ipAddressSANMatchesOnlyTheAddress() async {
        #expect(await evaluate(.ipAddressSAN, host: "127.0.0.1").isTrusted)
        #expect(await evaluate(.ipAddressSAN, host: "127.0.0.2").reasons.first?.shortDescription == "hostname_mismatch")
        #expect(await evaluate(.ipAddressSAN, host: "localhost").reasons.first?.shortDescription == "hostname_mismatch")
    }

    @Test(arguments: [
        ("www.api.bulwark.test", true),
        ("WWW.API.BULWARK.TEST.", true),
        ("api.bulwark.test", false),
        ("a.www.api.bulwark.test", false),
        ("www.api.bulwark.test.evil.com", false),
    ])
    func wildcardSANCoversExactlyOneLabel(host: String, trusted: Bool) async {
        #expect(await evaluate(.wildcardSAN, host: host).isTrusted == trusted)
    }

    @Test(arguments: [
        TestChain.Scenario.selfSignedLeaf, .missingIntermediate, .wrongExtendedKeyUsage, .intermediateNotCA,
        .noExtendedKeyUsage,
    ])
    func brokenChainsAreRefusedAsUntrusted(scenario: TestChain.Scenario) async {
        let decision = await evaluate(scenario)
        #expect(decision.reasons.count == 1)
        guard let reason = decision.reasons.first, reason.code == "untrusted_chain" else {
            Issue.record("\(scenario): expected .untrustedChain, got \(decision.reasons)")
            return
        }
        #expect(!reason.details.isEmpty)
    }

    @Test func wrongExtendedKeyUsageSaysServerAuth() async {
        let decision = await evaluate(.wrongExtendedKeyUsage)
        #expect(String(describing: decision.reasons).contains("serverAuth"))
    }

    @Test func chainFromAnotherRootIsRefused() async {
        let other = Chains[.valid]
        let stranger = try! TestChain.make(host: Chains.host)
        let decision = await DefaultTrustEvaluator(roots: Chains.roots(other))
            .evaluate(stranger.presentedChain, forHost: Chains.host, at: now)
        #expect(decision.reasons.map(\.shortDescription) == ["untrusted_chain"])
    }

    @Test func hostMismatchIsReportedTogetherWithAnUntrustedChain() async {
        let chain = Chains[.missingIntermediate]
        let decision = await DefaultTrustEvaluator(roots: Chains.roots(chain))
            .evaluate(chain.presentedChain, forHost: "other.bulwark.test", at: now)
        #expect(decision.reasons.map(\.shortDescription) == ["hostname_mismatch", "untrusted_chain"])
    }

    @Test func rootExtendedKeyUsage() async throws {
        func decision(rootUsages: [ExtendedKeyUsage.Usage], strict: Bool) async throws -> TrustDecision {
            let root = try CertificateFactory.makeRoot(extendedKeyUsage: rootUsages)
            let leaf = try CertificateFactory.issueLeaf(from: root, commonName: Chains.host, dnsNames: [Chains.host])
            var options = ValidationOptions()
            options.enforcesRootProfile = strict
            return await DefaultTrustEvaluator(roots: .custom([root.certificate]), options: options)
                .evaluate([leaf.certificate], forHost: Chains.host, at: now)
        }
        // An interception or private CA marked serverAuth (mitmproxy's) is usable when you configure it…
        #expect(try await decision(rootUsages: [.serverAuth], strict: false).isTrusted)
        // …but not under the CA/Browser Forum root profile, and never when its usage excludes serverAuth.
        #expect(
            try await decision(rootUsages: [.serverAuth], strict: true).reasons.first?.shortDescription
                == "untrusted_chain"
        )
        #expect(
            try await decision(rootUsages: [.clientAuth], strict: false).reasons.first?.shortDescription
                == "untrusted_chain"
        )
        #expect(try await decision(rootUsages: [], strict: true).isTrusted)
    }

    @Test func validationTimeIsTheCallersTime() async {
        let chain = Chains[.valid]
        let future = now + 365 * 86_400
        let decision = await DefaultTrustEvaluator(roots: Chains.roots(chain))
            .evaluate(chain.presentedChain, forHost: Chains.host, at: future)
        #expect(decision.reasons.first?.shortDescription == "expired")
    }
}

@Suite("Public-key pins")
struct PublicKeyPinTests {
    let now = Date()
    let chain = Chains[.valid]
    let unrelated = try! Pin("sha256/" + Data(repeating: 7, count: 32).base64EncodedString())
    let unrelated2 = try! Pin("sha256/" + Data(repeating: 9, count: 32).base64EncodedString())

    func evaluate(
        _ pins: PinSet,
        chain presented: [Certificate]? = nil,
        performDefaultValidation: Bool = true
    )
        async -> TrustDecision
    {
        await PublicKeysTrustEvaluator(
            pinSet: pins,
            roots: Chains.roots(chain),
            performDefaultValidation: performDefaultValidation
        ).evaluate(presented ?? chain.presentedChain, forHost: Chains.host, at: now)
    }

    @Test(arguments: ["leaf", "intermediate", "root"])
    func pinAtEachLevelOfTheVerifiedChainIsTrusted(level: String) async throws {
        let certificate =
            switch level {
            case "leaf": chain.leaf.certificate
            case "intermediate": chain.intermediate!.certificate
            default: chain.root.certificate
            }
        let pins = try PinSet([Pin.publicKey(of: certificate), unrelated])
        #expect(await evaluate(pins).isTrusted)
    }

    @Test func backupPinAloneIsEnough() async throws {
        let pins = try PinSet([unrelated, Pin.publicKey(of: chain.intermediate!.certificate)])
        #expect(await evaluate(pins).isTrusted)
    }

    @Test func mismatchNamesHostChainAndPinsLikeOkHttp() async throws {
        let pins = try PinSet([unrelated, unrelated2])
        let decision = await evaluate(pins)
        guard let reason = decision.reasons.first, reason.code == "pin_mismatch", let mismatch = reason.pinMismatch
        else {
            Issue.record("expected .pinMismatch, got \(decision.reasons)")
            return
        }
        #expect(mismatch.host == Chains.host)
        #expect(mismatch.expectedPins == [unrelated, unrelated2])
        #expect(mismatch.verifiedChain.count == 3)
        let text = String(describing: decision.refusal!)
        #expect(text.contains("Certificate pinning failure!"))
        #expect(text.contains("\(Pin.publicKey(of: chain.leaf.certificate)): CN=\(Chains.host)"))
        #expect(text.contains("Pinned certificates for \(Chains.host):"))
        #expect(text.contains(unrelated.description))
    }

    @Test func pinsAreNeverMatchedAgainstExtraCertificatesTheServerAppends() async throws {
        let extra = try CertificateFactory.makeRoot(commonName: "Appended, not on the path")
        let pins = try PinSet([Pin.publicKey(of: extra.certificate), unrelated])
        let decision = await evaluate(pins, chain: chain.presentedChain + [extra.certificate])
        #expect(decision.reasons.map(\.shortDescription) == ["pin_mismatch"])
    }

    @Test func expiredPinSetIsNotEnforcedButNoted() async throws {
        let pins = try PinSet([unrelated, unrelated2], expiration: now - 60)
        let trusted = try #require(await evaluate(pins).trustedChain)
        #expect(trusted.notices.map(\.shortDescription) == ["pin_set_expired"])
    }

    @Test func expiredPinSetStillRequiresDefaultValidation() async throws {
        let pins = try PinSet([unrelated, unrelated2], expiration: now - 60)
        let stranger = try TestChain.make(host: Chains.host)
        let decision = await evaluate(pins, chain: stranger.presentedChain, performDefaultValidation: false)
        #expect(decision.reasons.map(\.shortDescription) == ["untrusted_chain"])
    }

    @Test func reportOnlyMismatchProceedsWithAViolationNotice() async throws {
        let pins = try PinSet([unrelated], enforcement: .reportOnly)
        let trusted = try #require(await evaluate(pins).trustedChain)
        guard let notice = trusted.notices.first, notice.code == "report_only_pin_violation",
            let mismatch = notice.pinMismatch
        else {
            Issue.record("expected a report-only notice, got \(trusted.notices)")
            return
        }
        #expect(mismatch.expectedPins == [unrelated])
    }

    @Test func reportOnlyNeverTrustsAChainThatFailsDefaultValidation() async throws {
        let pins = try PinSet([unrelated], enforcement: .reportOnly)
        let expired = Chains[.expiredLeaf]
        let decision = await PublicKeysTrustEvaluator(pinSet: pins, roots: Chains.roots(expired))
            .evaluate(expired.presentedChain, forHost: Chains.host, at: now)
        #expect(decision.reasons.first?.shortDescription == "expired")
    }

    @Test func withoutDefaultValidationThePinnedKeyIsTheAnchor() async throws {
        let selfSigned = Chains[.selfSignedLeaf]
        let pins = try PinSet([Pin.publicKey(of: selfSigned.leaf.certificate), unrelated])
        let trusting = await PublicKeysTrustEvaluator(pinSet: pins, roots: .custom([]), performDefaultValidation: false)
            .evaluate(selfSigned.presentedChain, forHost: Chains.host, at: now)
        #expect(trusting.isTrusted)
        // An intermediate pin: the leaf must chain to it by signature even though no root is consulted.
        let intermediatePins = try PinSet([Pin.publicKey(of: chain.intermediate!.certificate), unrelated])
        let viaIntermediate = await PublicKeysTrustEvaluator(
            pinSet: intermediatePins,
            roots: .custom([]),
            performDefaultValidation: false
        ).evaluate(chain.presentedChain, forHost: Chains.host, at: now)
        #expect(viaIntermediate.trustedChain?.certificates.count == 2)
        // A forged leaf next to the genuine intermediate does not chain to the pinned key.
        let forged = try CertificateFactory.issueLeaf(from: nil, commonName: Chains.host, dnsNames: [Chains.host])
        let forgedDecision = await PublicKeysTrustEvaluator(
            pinSet: intermediatePins,
            roots: .custom([]),
            performDefaultValidation: false
        ).evaluate([forged.certificate, chain.intermediate!.certificate], forHost: Chains.host, at: now)
        #expect(!forgedDecision.isTrusted)
    }

    @Test func validateHostFalseSkipsOnlyTheNameCheck() async throws {
        let pins = try PinSet([Pin.publicKey(of: chain.intermediate!.certificate), unrelated])
        let evaluator = PublicKeysTrustEvaluator(pinSet: pins, roots: Chains.roots(chain), validateHost: false)
        #expect(await evaluator.evaluate(chain.presentedChain, forHost: "elsewhere.test", at: now).isTrusted)
        let checking = PublicKeysTrustEvaluator(pinSet: pins, roots: Chains.roots(chain))
        #expect(!(await checking.evaluate(chain.presentedChain, forHost: "elsewhere.test", at: now).isTrusted))
    }
}

@Suite("Pinned certificates")
struct PinnedCertificatesTests {
    let now = Date()
    let chain = Chains[.valid]

    @Test(arguments: ["leaf", "intermediate", "root"])
    func pinnedCertificateAtEachLevel(level: String) async {
        let certificate =
            switch level {
            case "leaf": chain.leaf.certificate
            case "intermediate": chain.intermediate!.certificate
            default: chain.root.certificate
            }
        let decision = await PinnedCertificatesTrustEvaluator(certificates: [certificate], roots: Chains.roots(chain))
            .evaluate(chain.presentedChain, forHost: Chains.host, at: now)
        #expect(decision.isTrusted)
    }

    @Test func unpinnedChainIsRefusedWithTheCertificatePins() async throws {
        let other = try CertificateFactory.makeRoot(commonName: "Somebody else")
        let decision = await PinnedCertificatesTrustEvaluator(
            certificates: [other.certificate],
            roots: Chains.roots(chain)
        )
        .evaluate(chain.presentedChain, forHost: Chains.host, at: now)
        guard let reason = decision.reasons.first, reason.code == "certificate_not_pinned",
            let mismatch = reason.pinMismatch
        else {
            Issue.record("expected .certificateNotPinned, got \(decision.reasons)")
            return
        }
        #expect(mismatch.expectedPins == [Pin.certificate(of: other.certificate)])
        #expect(String(describing: decision.refusal!).contains("cert-sha256/"))
    }

    @Test func selfSignedPinnedLeafNeedsAcceptSelfSigned() async {
        let selfSigned = Chains[.selfSignedLeaf]
        let refusing = PinnedCertificatesTrustEvaluator(certificates: [selfSigned.leaf.certificate], roots: .custom([]))
        #expect(!(await refusing.evaluate(selfSigned.presentedChain, forHost: Chains.host, at: now).isTrusted))
        let accepting = PinnedCertificatesTrustEvaluator(
            certificates: [selfSigned.leaf.certificate],
            roots: .custom([]),
            acceptSelfSignedCertificates: true
        )
        #expect(await accepting.evaluate(selfSigned.presentedChain, forHost: Chains.host, at: now).isTrusted)
        let noDefault = PinnedCertificatesTrustEvaluator(
            certificates: [selfSigned.leaf.certificate],
            roots: .custom([]),
            performDefaultValidation: false
        )
        #expect(await noDefault.evaluate(selfSigned.presentedChain, forHost: Chains.host, at: now).isTrusted)
        #expect(!(await noDefault.evaluate(selfSigned.presentedChain, forHost: "other.test", at: now).isTrusted))
    }

    @Test func expiredPinnedSelfSignedLeafIsRefusedAsExpiredOnly() async throws {
        let stale = try CertificateFactory.issueLeaf(
            from: nil,
            commonName: Chains.host,
            dnsNames: [Chains.host],
            validity: .expired
        )
        let decision = await PinnedCertificatesTrustEvaluator(
            certificates: [stale.certificate],
            roots: .custom([]),
            acceptSelfSignedCertificates: true
        ).evaluate([stale.certificate], forHost: Chains.host, at: now)
        #expect(decision.reasons.map(\.shortDescription) == ["expired"])
    }

    @Test func emptyPinListIsMisconfigured() async {
        let decision = await PinnedCertificatesTrustEvaluator(certificates: [])
            .evaluate(chain.presentedChain, forHost: Chains.host, at: now)
        #expect(decision.reasons.map(\.shortDescription) == ["misconfigured"])
    }
}

@Suite("Composite, disabled and the trust manager")
struct ManagerTests {
    let now = Date()
    let chain = Chains[.valid]

    @Test func compositeNeedsEveryEvaluator() async throws {
        let roots = Chains.roots(chain)
        let goodPins = try PinSet([Pin.publicKey(of: chain.root.certificate)], allowSinglePin: true)
        let badPins = try PinSet([Pin.publicKey(of: chain.leaf.certificate)], allowSinglePin: true)
        let passing = CompositeTrustEvaluator([
            DefaultTrustEvaluator(roots: roots), PublicKeysTrustEvaluator(pinSet: goodPins, roots: roots),
        ])
        #expect(await passing.evaluate(chain.presentedChain, forHost: Chains.host, at: now).isTrusted)
        let otherLeafPins = try PinSet([Pin.publicKey(of: Chains[.wrongHost].leaf.certificate)], allowSinglePin: true)
        let failing = CompositeTrustEvaluator([
            PublicKeysTrustEvaluator(pinSet: badPins, roots: roots),
            PublicKeysTrustEvaluator(pinSet: otherLeafPins, roots: roots),
        ])
        let decision = await failing.evaluate(chain.presentedChain, forHost: Chains.host, at: now)
        guard let reason = decision.reasons.first, reason.code == "pin_mismatch", let mismatch = reason.pinMismatch
        else {
            Issue.record("expected the second evaluator's pin mismatch, got \(decision.reasons)")
            return
        }
        #expect(mismatch.expectedPins == otherLeafPins.pins)
        let empty = CompositeTrustEvaluator([])
        #expect(
            await empty.evaluate(chain.presentedChain, forHost: Chains.host, at: now).reasons.map(\.shortDescription)
                == ["misconfigured"]
        )
    }

    @Test func disabledTrustsAnythingAndSaysSo() async throws {
        let stranger = try TestChain.make(.expiredLeaf, host: "whatever.test")
        let decision = await DisabledTrustEvaluator().evaluate(stranger.presentedChain, forHost: "x.test", at: now)
        let trusted = try #require(decision.trustedChain)
        #expect(trusted.notices == [.validationDisabled(host: "x.test")])
        #expect(String(describing: trusted.notices[0]).hasPrefix("WARNING"))
        #expect(!(await DisabledTrustEvaluator().evaluate([], forHost: "x.test", at: now).isTrusted))
    }

    @Test func unlistedHostIsRefusedByName() async throws {
        let manager = try ServerTrustManager(evaluators: [Chains.host: .default(roots: Chains.roots(chain))])
        let decision = await manager.evaluate(chain.presentedChain, forHost: "unlisted.bulwark.test", at: now)
        #expect(decision.reasons == [.hostNotEvaluated(host: "unlisted.bulwark.test")])
        #expect(String(describing: decision.refusal!).contains("unlisted.bulwark.test"))
        #expect(manager.evaluator(forHost: "unlisted.bulwark.test") == nil)
    }

    @Test func unlistedHostGetsTheDefaultEvaluatorWhenAllowed() async throws {
        let manager = try ServerTrustManager(
            allHostsMustBeEvaluated: false,
            evaluators: [:],
            defaultEvaluator: DefaultTrustEvaluator(roots: Chains.roots(chain))
        )
        #expect(await manager.evaluate(chain.presentedChain, forHost: Chains.host, at: now).isTrusted)
    }

    @Test func mostSpecificPatternWins() async throws {
        let roots = Chains.roots(chain)
        let wrongPins = try PinSet([
            "sha256/" + Data(repeating: 1, count: 32).base64EncodedString(),
            "sha256/" + Data(repeating: 2, count: 32).base64EncodedString(),
        ])
        let manager = try ServerTrustManager(evaluators: [
            "**.bulwark.test": .default(roots: roots),
            Chains.host: .publicKeys(wrongPins, roots: roots),
        ])
        #expect(
            await manager.evaluate(chain.presentedChain, forHost: Chains.host, at: now).reasons.map(\.shortDescription)
                == ["pin_mismatch"]
        )
        #expect(manager.evaluator(forHost: "cdn.bulwark.test") is DefaultTrustEvaluator)
        #expect(manager.evaluator(forHost: "API.Bulwark.Test.") is PublicKeysTrustEvaluator)
    }

    @Test func badPatternIsATypedErrorNamingIt() {
        #expect(throws: HostPatternError.self) {
            _ = try ServerTrustManager(evaluators: ["a*.bulwark.test": .default()])
        }
        do {
            _ = try ServerTrustManager(evaluators: ["a*.bulwark.test": .default()])
        } catch {
            #expect(String(describing: error).contains("a*.bulwark.test"))
        }
    }
}

@Suite("Bad input")
struct BadInputTests {
    let now = Date()

    @Test func emptyChainIsRefused() async {
        let decision = await DefaultTrustEvaluator(roots: .custom([])).evaluate([], forHost: "x.test", at: now)
        #expect(decision.reasons == [.emptyChain])
    }

    @Test func hundredCertificateChainIsRefusedBeforeValidation() async throws {
        let chain = Chains[.valid]
        let presented = Array(repeating: chain.intermediate!.certificate, count: 99)
        let decision = await DefaultTrustEvaluator(roots: Chains.roots(chain))
            .evaluate([chain.leaf.certificate] + presented, forHost: Chains.host, at: now)
        #expect(decision.reasons == [.chainTooLong(presented: 100, limit: 40)])
    }

    @Test func invalidHostIsATypedRefusal() async {
        let chain = Chains[.valid]
        let decision = await DefaultTrustEvaluator(roots: Chains.roots(chain))
            .evaluate(chain.presentedChain, forHost: "bad host%", at: now)
        #expect(decision.reasons.first?.shortDescription == "invalid_host")
    }

    @Test(arguments: [
        ("", "noCertificates"),
        ("hello", "malformedDER"),
        ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "malformedPEM"),
        ("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n", "malformedPEM"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "noCertificates"),
    ])
    func badCertificateInputIsATypedErrorNamingTheSource(input: String, kind: String) {
        do {
            _ = try CertificateLoader.certificates(from: Array(input.utf8), source: "input.pem")
            Issue.record("\(input.debugDescription) parsed")
        } catch {
            let matches =
                switch kind {
                case "noCertificates": error.isNoCertificates
                case "malformedDER": error.isMalformedDER
                default: error.isMalformedPEM
                }
            #expect(matches, "\(kind) expected, got \(error)")
            #expect(error.description.hasPrefix("input.pem"))
        }
    }

    @Test func pemWithSeveralCertificatesLoadsThemAll() throws {
        let chain = Chains[.valid]
        let pem =
            chain.leaf.certificatePEM + "\n" + chain.leaf.privateKeyPEM + "\n" + chain.intermediate!.certificatePEM
        let loaded = try CertificateLoader.certificates(from: Array(pem.utf8), source: "bundle.pem")
        #expect(loaded == [chain.leaf.certificate, chain.intermediate!.certificate])
        let der = try CertificateLoader.certificates(from: chain.root.certificate.derBytes, source: "root.der")
        #expect(der == [chain.root.certificate])
    }
}

/// Wrong verdicts found by differential testing against OpenSSL (issue 23; Tests/BulwarkTests/
/// DifferentialTrustTests.swift): each chain here was trusted by the default evaluator before its fix.
@Suite("Wrong verdicts found by differential testing")
struct DifferentialRegressionTests {
    static let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    static let host = "www.example.test"
    static let rsaKey = try! TestKeyAlgorithm.rsa2048.makePrivateKey()

    /// Root → intermediate → leaf for `host`, after `change` (root at index 0, leaf at 2), evaluated by default.
    static func evaluate(_ change: (inout [CertificateBlueprint]) -> Void) async throws -> TrustDecision {
        func blueprint(_ name: String, ca: Bool) -> CertificateBlueprint {
            var blueprint = CertificateBlueprint(
                commonName: name,
                organization: ca ? "Bulwark Tests" : nil,
                privateKey: try! TestKeyAlgorithm.p256.makePrivateKey(),
                notBefore: now - 86_400,
                notAfter: now + 86_400
            )
            blueprint.basicConstraints = ca ? .isCertificateAuthority(maxPathLength: nil) : .notCertificateAuthority
            blueprint.keyUsage =
                ca
                ? KeyUsage(keyCertSign: true, cRLSign: true)
                : KeyUsage(digitalSignature: true, keyEncipherment: true)
            if !ca {
                blueprint.extendedKeyUsage = [.serverAuth]
                blueprint.subjectAlternativeNames = [.dnsName(host)]
            }
            return blueprint
        }
        var blueprints = [blueprint("Root", ca: true), blueprint("Intermediate", ca: true), blueprint(host, ca: false)]
        change(&blueprints)
        let root = try blueprints[0].issue(issuer: nil)
        let intermediate = try blueprints[1].issue(issuer: root)
        let leaf = try blueprints[2].issue(issuer: intermediate)
        return await DefaultTrustEvaluator(roots: .custom([root.certificate]))
            .evaluate([leaf.certificate, intermediate.certificate], forHost: host, at: now)
    }

    @Test func unchangedChainIsTrusted() async throws {
        let decision = try await Self.evaluate { _ in }
        #expect(decision.isTrusted, "\(decision.reasons)")
    }

    /// A server certificate whose key usage allows no TLS use of its key (digitalSignature, keyEncipherment or
    /// keyAgreement) cannot authenticate a handshake; OpenSSL refuses it as an unsuitable purpose.
    @Test(arguments: [
        ("cRLSign", KeyUsage(cRLSign: true)),
        ("nonRepudiation", KeyUsage(nonRepudiation: true)),
        ("dataEncipherment", KeyUsage(dataEncipherment: true)),
    ])
    func leafKeyUsageWithoutATLSUseIsRefused(name: String, usage: KeyUsage) async throws {
        let decision = try await Self.evaluate { $0[2].keyUsage = usage }
        #expect(!decision.isTrusted, "leaf with key usage \(name) only was trusted")
        #expect("\(decision.reasons)".contains("key usage"), "\(decision.reasons)")
    }

    @Test(arguments: [KeyUsage(digitalSignature: true), KeyUsage(keyEncipherment: true), KeyUsage(keyAgreement: true)])
    func leafKeyUsageWithATLSUseIsTrusted(usage: KeyUsage) async throws {
        let decision = try await Self.evaluate { $0[2].keyUsage = usage }
        #expect(decision.isTrusted, "\(decision.reasons)")
    }

    /// RFC 5280 4.2.1.9 and the CA/Browser Forum profile: basic constraints of a CA must be critical. Bulwark
    /// required it of the anchor only; OpenSSL (-x509_strict) requires it of every CA.
    @Test func intermediateWithNonCriticalBasicConstraintsIsRefused() async throws {
        let decision = try await Self.evaluate { $0[1].basicConstraintsCritical = false }
        #expect(!decision.isTrusted, "intermediate with non-critical basic constraints was trusted")
        #expect("\(decision.reasons)".contains("basic constraints"), "\(decision.reasons)")
    }

    /// SHA-1 signatures have been refused by browsers since 2017 (a chosen-prefix collision costs little); the
    /// differential run showed Bulwark and OpenSSL (at its default level) both accepting them.
    @Test(arguments: [1, 2])
    func sha1SignatureIsRefused(signed position: Int) async throws {
        let decision = try await Self.evaluate { blueprints in
            blueprints[position - 1].privateKey = Self.rsaKey
            blueprints[position].signatureAlgorithm = .sha1WithRSAEncryption
        }
        #expect(!decision.isTrusted, "certificate \(position) signed with SHA-1 was trusted")
        #expect("\(decision.reasons)".contains("SHA-1"), "\(decision.reasons)")
    }

    @Test(arguments: [1, 2])
    func sha256WithRSASignatureIsTrusted(signed position: Int) async throws {
        let decision = try await Self.evaluate { blueprints in
            blueprints[position - 1].privateKey = Self.rsaKey
            blueprints[position].signatureAlgorithm = .sha256WithRSAEncryption
        }
        #expect(decision.isTrusted, "\(decision.reasons)")
    }
}
