import BulwarkTestSupport
import Crypto
import Foundation
import Testing

@testable import BulwarkPolicy

/// Issue 38 (Hardening II a): the signed-bundle verifier under attack. Weak Ed25519 keys (the identity point, every
/// small-order point, non-canonical encodings), threshold counting, key rotation without proof of possession, one
/// version with two payloads, a bundle meant for another channel, and lint errors inside a signed policy.
@Suite("Policy bundles under attack")
struct PolicyBundleHardeningTests {
    static let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default"}}}"#.utf8)
    static let today = PolicyFile.parseDay("2026-11-24")!

    let a = PolicySigningKey.generate(name: "a")
    let b = PolicySigningKey.generate(name: "b")
    let c = PolicySigningKey.generate(name: "c")

    /// The eight points of Ed25519's torsion subgroup (orders 1, 2, 4 and 8), each in its canonical encoding.
    static let torsionPoints = [
        "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",  // the identity (order 1), the key of the issue
        "7P///////////////////////////////////////38=",  // (0, -1), order 2
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",  // (sqrt(-1), 0), order 4
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA=",  // (-sqrt(-1), 0), order 4
        "JuiVj8KyJ7BFw/SJ8u+Y8NXfrAXTxjM5sTgCiG1T/AU=",  // order 8
        "JuiVj8KyJ7BFw/SJ8u+Y8NXfrAXTxjM5sTgCiG1T/IU=",  // order 8
        "xxdqcD1N2E+6PAt2DRBnDyogU/osOczGTsf9d5KsA3o=",  // order 8
        "xxdqcD1N2E+6PAt2DRBnDyogU/osOczGTsf9d5KsA/o=",  // order 8
    ]

    /// Encodings that no canonical encoder writes: y ≥ p (p = 2^255 - 19, with and without the sign bit), and
    /// x = 0 written with its sign bit set (the issue's second encoding of the identity, and of (0, -1)).
    static let nonCanonical = [
        "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA=",  // the identity, its sign bit set (the issue's second key)
        "7P////////////////////////////////////////8=",  // (0, -1), its sign bit set
        "7f///////////////////////////////////////38=",  // y = p
        "7f////////////////////////////////////////8=",  // y = p, sign bit set
        "7v///////////////////////////////////////38=",  // y = p + 1 (the identity again)
        "7v////////////////////////////////////////8=",  // y = p + 1, sign bit set
        "8P///////////////////////////////////////38=",  // y = p + 3
        "/////////////////////////////////////////38=",  // y = 2^255 - 1
        "//////////////////////////////////////////8=",  // y = 2^255 - 1, sign bit set
    ]

    func refusal(_ result: Result<PolicyBundleVerifier.Verified, PolicyBundleRefusal>) -> PolicyBundleRefusal.Reason? {
        if case .failure(let refusal) = result { return refusal.reason }
        return nil
    }

    func verifier(_ keys: [PolicySigningKey], threshold: Int = 1, highest: UInt64? = nil) throws -> PolicyBundleVerifier
    {
        PolicyBundleVerifier(
            trustedKeys: try PolicyTrustedKeys(keys: keys.map(\.publicKey), threshold: threshold),
            highestVersion: highest
        )
    }

    /// A bundle file whose signatures are exactly `signatures` (key, signature), over a payload of `policy`.
    static func forged(signatures: [(String, String)], version: UInt64 = 2) throws -> [UInt8] {
        let payload: [String: Any] = [
            "format": "bulwark-policy-bundle-payload/1", "version": version, "expires": "2026-12-31",
            "policy": Data(Self.policy).base64EncodedString(),
        ]
        let signed = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let file: [String: Any] = [
            "format": "bulwark-policy-bundle/1",
            "signed": signed.base64EncodedString(),
            "signatures": signatures.map { ["key": $0.0, "signature": $0.1] },
        ]
        return Array(try JSONSerialization.data(withJSONObject: file, options: [.sortedKeys]))
    }

    // MARK: - Weak keys

    @Test func theIdentityPointIsRefusedAsATrustedKey() throws {
        let identity = Self.torsionPoints[0]
        let line = "bulwark-policy-key/1 ed25519 \(identity) forged"
        let error = #expect(throws: PolicyBundleError.self) { try PolicyTrustedKeys(fileContents: line) }
        #expect(error?.code == .invalidTrustedKeys)
        #expect(error?.description.contains(identity) == true, "\(String(describing: error))")
        #expect(error?.description.contains("small-order") == true, "\(String(describing: error))")
    }

    @Test func everyTorsionPointIsRefused() throws {
        for key in Self.torsionPoints {
            let bytes = try #require(Data(base64Encoded: key))
            let error = #expect(throws: PolicyBundleError.self, "\(key)") {
                try PolicyPublicKey(rawRepresentation: Array(bytes))
            }
            #expect(error?.code == .invalidPublicKey, "\(key)")
            #expect(error?.description.contains("small-order") == true, "\(key): \(String(describing: error))")
        }
    }

    @Test func everyNonCanonicalEncodingIsRefused() throws {
        for key in Self.nonCanonical {
            let bytes = try #require(Data(base64Encoded: key), "\(key)")
            #expect(bytes.count == 32)
            let error = #expect(throws: PolicyBundleError.self, "\(key)") {
                try PolicyPublicKey(rawRepresentation: Array(bytes))
            }
            #expect(error?.code == .invalidPublicKey, "\(key)")
        }
    }

    @Test func aRotationToAWeakKeyIsRefusedAsMalformed() throws {
        // The rotation payload names the identity point; it is signed properly by the current key.
        let payload: [String: Any] = [
            "format": "bulwark-policy-bundle-payload/1", "version": 3, "expires": "2026-12-31",
            "policy": Data(Self.policy).base64EncodedString(),
            "trustedKeys": ["keys": ["bulwark-policy-key/1 ed25519 \(Self.torsionPoints[0])"], "threshold": 1],
        ]
        let signed = Array(try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
        let signature = self.a.signature(for: Array("bulwark-policy-bundle/1\n".utf8) + signed)
        let file: [String: Any] = [
            "format": "bulwark-policy-bundle/1", "signed": Data(signed).base64EncodedString(),
            "signatures": [["key": self.a.publicKey.base64, "signature": Data(signature).base64EncodedString()]],
        ]
        let bytes = Array(try JSONSerialization.data(withJSONObject: file))
        let result = try self.verifier([self.a]).verify(bytes, at: Self.today)
        #expect(self.refusal(result) == .malformed)
        if case .failure(let refusal) = result {
            #expect(refusal.description.contains("small-order"), "\(refusal)")
        }
    }

    @Test func aRotationThatTheNewKeysDidNotSignIsRefused() throws {
        let next = try PolicyTrustedKeys(keys: [self.b.publicKey, self.c.publicKey], threshold: 2)
        let bundle = PolicyBundle(policy: Self.policy, version: 3, expires: "2026-12-31", trustedKeys: next)
        // Signed by the current key only: b and c never proved they hold their private keys.
        let unproven = try bundle.signed(by: [self.a])
        let result = try self.verifier([self.a]).verify(unproven, at: Self.today)
        #expect(self.refusal(result) == .rotationNotProven)
        if case .failure(let refusal) = result {
            #expect(refusal.description.contains(self.b.publicKey.base64), "\(refusal)")
        }
        // One new key of two signed: still unproven (every new key signs).
        let partial = try bundle.signed(by: [self.a, self.b])
        #expect(self.refusal(try self.verifier([self.a]).verify(partial, at: Self.today)) == .rotationNotProven)
        // Every new key signed too: accepted.
        let proven = try bundle.signed(by: [self.a, self.b, self.c])
        let verified = try self.verifier([self.a]).verify(proven, at: Self.today).get()
        #expect(verified.bundle.trustedKeys == next)
        #expect(verified.signers == [self.a.publicKey])
    }

    @Test func aRotationThatKeepsACurrentKeyNeedsOnlyTheNewKeysProof() throws {
        let next = try PolicyTrustedKeys(keys: [self.a.publicKey, self.b.publicKey], threshold: 2)
        let bundle = PolicyBundle(policy: Self.policy, version: 3, expires: "2026-12-31", trustedKeys: next)
        #expect(
            self.refusal(try self.verifier([self.a]).verify(try bundle.signed(by: [self.a]), at: Self.today))
                == .rotationNotProven
        )
        #expect(throws: Never.self) {
            try self.verifier([self.a]).verify(try bundle.signed(by: [self.a, self.b]), at: Self.today).get()
        }
    }

    // MARK: - One version, one payload

    @Test func theSameVersionWithAnotherPayloadIsVersionReused() throws {
        let first = try PolicyBundle(policy: Self.policy, version: 5, expires: "2026-12-31").signed(by: [self.a])
        let accepted = try self.verifier([self.a]).verify(first, at: Self.today).get()
        var verifier = try self.verifier([self.a], highest: 5)
        verifier.highestVersionPayloadSHA256 = accepted.payloadSHA256
        // The same payload, signed again (another signature set): accepted, it is the same bundle.
        #expect(throws: Never.self) { try verifier.verify(first, at: Self.today).get() }
        let other = Array(#"{"format":"bulwark-policy/1","hosts":{"b.example.com":{"evaluator":"default"}}}"#.utf8)
        let reused = try PolicyBundle(policy: other, version: 5, expires: "2026-12-31").signed(by: [self.a])
        let result = verifier.verify(reused, at: Self.today)
        #expect(self.refusal(result) == .versionReused)
        if case .failure(let refusal) = result {
            #expect(refusal.description.contains("version 5"), "\(refusal)")
        }
        // Another expiry is another payload too.
        let extended = try PolicyBundle(policy: Self.policy, version: 5, expires: "2027-01-31").signed(by: [self.a])
        #expect(self.refusal(verifier.verify(extended, at: Self.today)) == .versionReused)
    }

    // MARK: - Channels

    @Test func aBundleForAnotherChannelIsRefused() throws {
        var bundle = PolicyBundle(policy: Self.policy, version: 2, expires: "2026-12-31")
        bundle.channel = "staging"
        let staging = try bundle.signed(by: [self.a])
        var production = try self.verifier([self.a])
        production.channel = "production"
        #expect(self.refusal(production.verify(staging, at: Self.today)) == .wrongChannel)
        // A bundle naming no channel is refused by a verifier that expects one.
        let unnamed = try PolicyBundle(policy: Self.policy, version: 2, expires: "2026-12-31").signed(by: [self.a])
        #expect(self.refusal(production.verify(unnamed, at: Self.today)) == .wrongChannel)
        // The right channel verifies, and says so.
        var stagingVerifier = try self.verifier([self.a])
        stagingVerifier.channel = "staging"
        #expect(try stagingVerifier.verify(staging, at: Self.today).get().bundle.channel == "staging")
    }

    @Test func newRefusalsHaveTheirOwnCodes() {
        let codes = [
            PolicyBundleRefusal.Reason.rotationNotProven, .versionReused, .wrongChannel,
        ].map(\.code)
        #expect(codes == ["rotation_not_proven", "version_reused", "wrong_channel"])
    }

    // MARK: - Lint errors in a signed policy

    /// A policy for each lint rule of severity error (BWP000, a file that does not decode, aside), without
    /// `"insecure": true`, and the same with it.
    static func weakeningPolicies(insecure: Bool) -> [(PolicyLintRule, String)] {
        let flag = insecure ? #""insecure":true,"# : ""
        let pins =
            #"["sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=","sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U="]"#
        return [
            (
                .singlePin,
                #"{"format":"bulwark-policy/1",\#(flag)"hosts":{"a.example.com":{"evaluator":"publicKeys","pins":["sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg="],"allowSinglePin":true,"revocation":{"mode":"soft"}}}}"#
            ),
            (
                .pinSetExpired,
                #"{"format":"bulwark-policy/1",\#(flag)"hosts":{"a.example.com":{"evaluator":"publicKeys","pins":\#(pins),"expires":"2020-01-01","revocation":{"mode":"soft"}}}}"#
            ),
            (
                .validationDisabled,
                #"{"format":"bulwark-policy/1",\#(flag)"hosts":{"a.example.com":{"evaluator":"disabled"}}}"#
            ),
            (
                .hostNotValidated,
                #"{"format":"bulwark-policy/1",\#(flag)"hosts":{"a.example.com":{"evaluator":"default","validateHost":false}}}"#
            ),
            (
                .httpsToHTTPRedirect,
                #"{"format":"bulwark-policy/1",\#(flag)"hosts":{"a.example.com":{"evaluator":"default"}},"redirects":{"allowHTTPSToHTTP":true}}"#
            ),
            (.broadPattern, #"{"format":"bulwark-policy/1",\#(flag)"hosts":{"**.com":{"evaluator":"default"}}}"#),
        ]
    }

    @Test func everyErrorRuleIsCoveredAndNeedsInsecure() {
        let covered = Set(Self.weakeningPolicies(insecure: false).map(\.0.code))
        let errors = PolicyLintRule.all.filter { $0.severity == .error && $0 != .invalidPolicy }
        #expect(Set(errors.map(\.code)) == covered)
        #expect(errors.allSatisfy { $0.requiresInsecure })
        #expect(PolicyLintRule.all.filter(\.requiresInsecure) == errors)
    }

    @Test func aSignedPolicyWithALintErrorAndNoInsecureFlagIsRefused() throws {
        for (rule, text) in Self.weakeningPolicies(insecure: false) {
            let decoded = Result { () throws(PolicyFileError) -> PolicyFile in
                try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil)
            }
            switch decoded.map({ PolicyLinter(now: Self.today).findingsRequiringInsecure(in: $0) }) {
            case .failure(let error):
                // The decoder itself refuses the options that weaken by construction.
                #expect(
                    [PolicyLintRule.validationDisabled, .hostNotValidated, .httpsToHTTPRedirect].contains(rule),
                    "\(rule): \(error)"
                )
            case .success(let list):
                #expect(list.map(\.rule).contains(rule), "\(rule): \(list)")
            }
        }
        for (rule, text) in Self.weakeningPolicies(insecure: true) {
            let file = try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil)
            #expect(PolicyLinter(now: Self.today).findingsRequiringInsecure(in: file) == [], "\(rule) with insecure")
            // The linter still reports it.
            #expect(PolicyLinter(now: Self.today).lint(file).map(\.rule).contains(rule), "\(rule) with insecure")
        }
    }

    @Test func validateHostFalseNeedsInsecureInAnyPolicyFile() throws {
        let text =
            #"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default","validateHost":false}}}"#
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil)
        }
        #expect(error?.code == .insecureOptionNotAllowed)
        #expect(error?.pointer == "/hosts/a.example.com/validateHost")
    }
}

/// Issue 38, items 6 and 7: the files a policy names. Relative paths without the policy's directory are refused
/// wherever a path appears; certificate files are read only when they are regular files of at most 1 MiB.
@Suite("Files a policy names")
struct PolicyFileReadingHardeningTests {
    static func decode(roots file: String) throws(PolicyFileError) -> PolicyFile {
        let text =
            #"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default","roots":{"system":false,"certificates":[{"file":"\#(file)"}]}}}}"#
        return try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil)
    }

    @Test func relativePathsAreRefusedWithoutTheDirectoryWhereverTheyAppear() {
        let cases: [(String, String)] = [
            (
                #""clientCertificates":{"a.example.com":{"certificate":"client.pem","key":"/etc/client.key"}}"#,
                "/clientCertificates/a.example.com/certificate"
            ),
            (
                #""clientCertificates":{"a.example.com":{"pkcs12":"/etc/c.p12","passphraseFile":"pass.txt"}}"#,
                "/clientCertificates/a.example.com/passphraseFile"
            ),
            (#""proxy":{"use":"https://proxy.example.com:3128","caFile":"ca.pem"}"#, "/proxy/caFile"),
            (
                #""proxy":{"use":"https://proxy.example.com:3128","credentialsFile":"credentials"}"#,
                "/proxy/credentialsFile"
            ),
        ]
        for (member, pointer) in cases {
            let text =
                #"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default"}},"#
                + member + "}"
            let error = #expect(throws: PolicyFileError.self, "\(pointer)") {
                try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil)
            }
            #expect(error?.pointer == pointer, "\(String(describing: error))")
            #expect(error?.description.contains("relative") == true, "\(String(describing: error))")
            // With the policy's directory they resolve.
            #expect(throws: Never.self, "\(pointer)") {
                try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: "/etc/bulwark")
            }
        }
    }

    @Test func aDirectoryIsNotACertificateFile() throws {
        let error = #expect(throws: PolicyFileError.self) { try Self.decode(roots: "/tmp") }
        #expect(error?.code == .invalidCertificate)
        #expect(error?.description.contains("not a regular file") == true, "\(String(describing: error))")
    }

    @Test func aCertificateFileOverOneMebibyteIsRefused() throws {
        let chain = try TestChain.make().root.certificatePEM + "\n"
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-big-\(UUID()).pem").path
        defer { unlink(path) }
        let padding = String(repeating: "# padding line of a comment that PEM parsers skip\n", count: 25_000)
        try (chain + padding).write(toFile: path, atomically: true, encoding: .utf8)
        let error = #expect(throws: PolicyFileError.self) { try Self.decode(roots: path) }
        #expect(error?.code == .invalidCertificate)
        #expect(error?.description.contains("larger than 1048576 bytes") == true, "\(String(describing: error))")
    }

    @Test func aFIFOIsRefusedWithoutWaitingForAWriter() async throws {
        let fifo = FileManager.default.temporaryDirectory.appending(path: "bulwark-fifo-\(UUID())").path
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let finished = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        Thread.detachNewThread {
            do {
                _ = try Self.decode(roots: fifo)
                outcome.set("decoded")
            } catch {
                outcome.set("\(error)")
            }
            finished.signal()
        }
        #expect(finished.wait(timeout: .now() + 10) == .success, "reading the FIFO blocked for 10 s")
        #expect(outcome.get()?.contains("not a regular file") == true, "\(String(describing: outcome.get()))")
    }

    @Test func aCharacterDeviceIsRefusedWithoutReadingIt() throws {
        let error = #expect(throws: PolicyFileError.self) { try Self.decode(roots: "/dev/zero") }
        #expect(error?.description.contains("not a regular file") == true, "\(String(describing: error))")
    }
}

/// What a thread hands back to a test.
private final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    func set(_ value: String) { self.lock.withLock { self.value = value } }
    func get() -> String? { self.lock.withLock { self.value } }
}

/// The attack review of issue 38: what a network attacker or a key holder can still do with a signed bundle.
@Suite("Policy bundles: the review's findings")
struct PolicyBundleReviewTests {
    static let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default"}}}"#.utf8)
    static let today = PolicyFile.parseDay("2026-11-24")!
    let a = PolicySigningKey.generate(name: "a")

    /// Finding 5: a bogus signature item put in front of a good one by the same key made a good bundle
    /// `signature_invalid`, blaming the signers; a key counts when any of its items verifies.
    @Test func aBogusItemBeforeAGoodSignatureOfTheSameKeyDoesNotHideIt() throws {
        let bytes = try PolicyBundle(policy: Self.policy, version: 2, expires: "2026-12-31").signed(by: [self.a])
        var file = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        var items = try #require(file["signatures"] as? [[String: String]])
        items.insert(["key": self.a.publicKey.base64, "signature": "AA=="], at: 0)
        file["signatures"] = items
        let tampered = Array(try JSONSerialization.data(withJSONObject: file))
        let verifier = PolicyBundleVerifier(trustedKeys: try PolicyTrustedKeys(keys: [self.a.publicKey]))
        let verified = try verifier.verify(tampered, at: Self.today).get()
        #expect(verified.signers == [self.a.publicKey])
    }

    /// Finding 3: a key with a small-order component (A + T) is a second key for the holder of A. The vectors were
    /// computed independently (Python integers over the curve's formulas): A = [a]B for random a, then A + T for T
    /// of order 8, 4 and 2, and two `y` with no point on the curve; the review's own three keys too.
    @Test func keysOutsideThePrimeOrderSubgroupAreRefused() throws {
        let mixed = [
            "Dbqozj3OcaeBtwZvRBA/ICQS7Oo4LCyuFPOnGjemZ4U=", "4Iwdl8gaDgLPZU37WRLiGFewbnGTW/zL8I9HENjg+VU=",
            "Z2UGtH2wBGt7OX5Jw6zseUdTUG3YI+y1RyjVkHWutIg=",
            "2pnii6Upzd41ol+6kFnnjsruI5+ZdVubGqT2XfAIA+I=", "lZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZk=",
            "4WTnAU029sNVL8XNMdRIYdFi4fhwwG6sScUOGY7M3io=",
        ]
        for key in mixed {
            let error = #expect(throws: PolicyBundleError.self, "\(key)") {
                try PolicyPublicKey(rawRepresentation: Array(try #require(Data(base64Encoded: key))))
            }
            #expect(error?.description.contains("small-order component") == true, "\(String(describing: error))")
        }
        for key in ["AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "BwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="] {
            let error = #expect(throws: PolicyBundleError.self, "\(key)") {
                try PolicyPublicKey(rawRepresentation: Array(try #require(Data(base64Encoded: key))))
            }
            #expect(error?.description.contains("not a point") == true, "\(String(describing: error))")
        }
        let valid = [
            "WGZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmY=",  // the base point
            "L9DYuWZzk5DsbfDsN2K8x0HTTY3CHbjhZfH3OltkJFw=", "7FhNtyiFsxeqhlBj42T72JLy8O/N+lgh1wyeLIA2Tgs=",
            "pDL1xMoGyuzdEDkfd8tEaLoheOR3CRBG72mAETlKOLs=",
        ]
        for key in valid {
            #expect(throws: Never.self, "\(key)") {
                try PolicyPublicKey(rawRepresentation: Array(try #require(Data(base64Encoded: key))))
            }
        }
        // Every key swift-crypto generates is one.
        for _ in 0..<50 {
            let raw = Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
            #expect(throws: Never.self) { try PolicyPublicKey(rawRepresentation: raw) }
        }
    }

    /// Finding 2: the broad-pattern rule ran on `/hosts` only; a wildcard over a public suffix in the allowlist,
    /// the redirect hosts, a credential scope, client certificates or proxy hosts is the same error.
    @Test func aWildcardOverAPublicSuffixIsAnErrorInEveryHostList() throws {
        let text = #"""
            {"format":"bulwark-policy/1","hosts":{"api.example.com":{"evaluator":"default"}},
             "allowlist":[{"pattern":"*.com","schemes":["https"]},"*.co.uk"],
             "redirects":{"allowedHosts":["**.com"]},
             "credentialScopes":{"api":{"hosts":["*.com"],"schemes":["https"]}},
             "clientCertificates":{"*.github.io":{"certificate":"/etc/c.pem","key":"/etc/c.key"}},
             "proxy":{"use":"none","hosts":{"**.net":{"use":"environment"}}}}
            """#
        let file = try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil)
        let broad = PolicyLinter(now: Self.today).lint(file).filter { $0.rule == .broadPattern }.map(\.pointer)
        #expect(
            broad == [
                "/allowlist/0", "/allowlist/1", "/redirects/allowedHosts/0", "/credentialScopes/api/hosts/0",
                "/clientCertificates/*.github.io", "/proxy/hosts/**.net",
            ],
            "\(broad)"
        )
        #expect(PolicyLinter(now: Self.today).findingsRequiringInsecure(in: file).count == 6)
    }
}
