import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import Testing
import X509

/// The committed policy files: the README's example, and the valid and invalid examples the schema test uses.
enum PolicyExamples {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // BulwarkPolicyTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    static let readmeExample = root.appending(path: "examples/bulwark-policy.json").path
    static let schema = root.appending(path: "schemas/bulwark-policy-1.schema.json").path
    static let valid = root.appending(path: "schemas/examples/valid")
    static let invalid = root.appending(path: "schemas/examples/invalid")

    /// Every invalid example, with the code and JSON pointer of the decoder's error.
    static let expectedErrors: [String: (PolicyFileError.Code, String)] = [
        "bad-date": (.invalidValue, "/hosts/api.example.com/expires"),
        "bad-pattern": (.invalidPattern, "/hosts/a*.example.com"),
        "bad-pin": (.invalidPin, "/hosts/api.example.com/pins/1"),
        "bad-revocation-mode": (.invalidValue, "/hosts/api.example.com/revocation/mode"),
        "bad-scope-name": (.invalidValue, "/credentialScopes/my scope"),
        "disabled-in-composite": (.insecureOptionNotAllowed, "/hosts/dev.example.com/evaluators/1/evaluator"),
        "disabled-without-insecure": (.insecureOptionNotAllowed, "/hosts/dev.example.com/evaluator"),
        "empty-composite": (.invalidValue, "/hosts/api.example.com/evaluators"),
        "fractional-hops": (.wrongType, "/redirects/maximumHops"),
        "https-to-http-without-insecure": (.insecureOptionNotAllowed, "/redirects/allowHTTPSToHTTP"),
        "missing-hosts": (.missingKey, "/hosts"),
        "no-anchors": (.invalidValue, "/hosts/api.example.com/roots"),
        "pins-on-default": (.unknownKey, "/hosts/api.example.com/pins"),
        "port-out-of-range": (.invalidValue, "/allowlist/0/ports/0"),
        "proxy-bad-scheme": (.invalidValue, "/proxy/hosts/api.example.com/use"),
        "proxy-ca-file-with-http-proxy": (.invalidValue, "/proxy/caFile"),
        "proxy-credentials-in-url": (.secretInPolicy, "/proxy/use"),
        "proxy-credentials-with-environment": (.invalidValue, "/proxy/credentialsFile"),
        "proxy-port-out-of-range": (.invalidValue, "/proxy/use"),
        "secret-in-policy": (.secretInPolicy, "/clientCertificates/api.example.com/key"),
        "single-pin": (.invalidPin, "/hosts/api.example.com/pins"),
        "string-for-bool": (.wrongType, "/insecure"),
        "unknown-evaluator-key": (.unknownKey, "/hosts/api.example.com/pin"),
        "unknown-evaluator-kind": (.invalidValue, "/hosts/api.example.com/evaluator"),
        "unknown-top-level-key": (.unknownKey, "/extra"),
        "wrong-format": (.unsupportedFormat, "/format"),
        "wrong-type-pins": (.wrongType, "/hosts/api.example.com/pins"),
    ]

    static func files(in directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
    }

    static func decode(_ text: String, directory: String? = nil) throws(PolicyFileError) -> PolicyFile {
        try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: directory)
    }
}

@Suite("Policy files: decoding, errors, round trips")
struct PolicyFileTests {
    @Test func theReadmeExampleLoadsAndLintsClean() throws {
        let policy = try PolicyFile(contentsOfFile: PolicyExamples.readmeExample)
        #expect(policy.hosts.map(\.pattern.description) == ["api.example.com", "**.cdn.example.com"])
        #expect(policy.hosts[0].evaluator.pinSet?.pins.count == 2)
        #expect(policy.credentialScope(named: "api") == (try CredentialScope.under("https://api.example.com/v1/")))
        // Judged on a fixed day, so that the example's pin expiry (2027-12-31) does not make the test a time bomb.
        let findings = PolicyLinter(now: try #require(PolicyFile.parseDay("2026-11-24"))).lint(policy)
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test func everyInvalidExampleIsRefusedAtItsPointer() throws {
        let files = try PolicyExamples.files(in: PolicyExamples.invalid)
        #expect(Set(files.map { String($0.dropLast(5)) }) == Set(PolicyExamples.expectedErrors.keys))
        for file in files {
            let name = String(file.dropLast(5))
            let expected = try #require(PolicyExamples.expectedErrors[name])
            let error = #expect(throws: PolicyFileError.self, "\(name)") {
                try PolicyFile(contentsOfFile: PolicyExamples.invalid.appending(path: file).path)
            }
            #expect(error?.code == expected.0, "\(name): \(String(describing: error))")
            #expect(error?.pointer == expected.1, "\(name): \(String(describing: error))")
            #expect(error?.line != nil, "\(name)")
            if let error { Self.expectNoTypeNames(error.description) }
        }
    }

    @Test func everyValidExampleDecodesAndRoundTrips() throws {
        let files = try PolicyExamples.files(in: PolicyExamples.valid)
        #expect(files.count == 7)
        for file in files {
            let path = PolicyExamples.valid.appending(path: file).path
            let policy = try PolicyFile(contentsOfFile: path)
            let encoded = policy.encoded()
            let again = try PolicyFile(jsonBytes: encoded, baseDirectory: PolicyExamples.valid.path)
            #expect(again == policy, "\(file)")
            #expect(again.encoded() == encoded, "\(file): encoding is not stable")
        }
    }

    @Test func aBadPinNamesItsPointerAndLine() throws {
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyFile(contentsOfFile: PolicyExamples.invalid.appending(path: "bad-pin.json").path)
        }
        #expect(error?.line == 8)
        #expect(
            error?.description
                == "policy line 8, /hosts/api.example.com/pins/1: invalid pin \"sha256/abc=\": decodes to 2 bytes; "
                + "a SHA-256 digest is 32 bytes (44 base64 characters)"
        )
    }

    @Test func everyEvaluatorKindRoundTrips() throws {
        let pem = try TestChain.make().root.certificatePEM
        var pinned = PolicyFile.Evaluator(kind: .pinnedCertificates)
        pinned.certificates = [try .pem(pem)]
        pinned.acceptSelfSignedCertificates = true
        pinned.performDefaultValidation = false
        pinned.validateHost = false
        var keys = PolicyFile.Evaluator(kind: .publicKeys)
        keys.pinSet = try PinSet(
            [
                "sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=",
                "sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U=",
            ],
            expiration: PolicyFile.parseDay("2030-01-31"),
            enforcement: .reportOnly
        )
        keys.roots.system = false
        keys.roots.certificates = [try .pem(pem)]
        keys.options.maximumIntermediates = 1
        keys.options.requireServerAuthExtendedKeyUsage = false
        var defaultEvaluator = PolicyFile.Evaluator(kind: .default)
        defaultEvaluator.revocation = PolicyFile.Revocation()
        defaultEvaluator.revocation?.method = .ocsp
        defaultEvaluator.revocation?.mode = .soft
        var composite = PolicyFile.Evaluator(kind: .composite)
        composite.members = [defaultEvaluator, keys]
        var policy = PolicyFile()
        policy.insecure = true
        policy.hosts = [
            .init(pattern: try HostPattern("a.example.com"), evaluator: pinned),
            .init(pattern: try HostPattern("*.example.com"), evaluator: keys),
            .init(pattern: try HostPattern("**.example.org"), evaluator: composite),
            .init(pattern: try HostPattern("dev.example.net"), evaluator: .init(kind: .disabled)),
            .init(pattern: try HostPattern("c.example.net"), evaluator: defaultEvaluator),
        ]
        policy.otherHosts = .init(kind: .default)
        policy.minimumTLSVersion = .tls13
        policy.allowlist = [.init(pattern: try HostPattern("**.example.com"), schemes: ["https"], ports: [443])]
        var redirects = PolicyFile.Redirects()
        redirects.follow = false
        redirects.allowsHTTPSToHTTP = true
        redirects.maximumHops = 1
        policy.redirects = redirects
        let decoded = try PolicyFile(jsonBytes: policy.encoded(), baseDirectory: nil)
        #expect(decoded == policy)
        for (host, original) in zip(decoded.hosts, policy.hosts) {
            #expect(host.evaluator == original.evaluator, "\(host.pattern)")
        }
    }

    @Test func aRepeatedMemberIsRefusedWithItsLine() {
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyExamples.decode(
                """
                {
                  "format": "bulwark-policy/1",
                  "hosts": {
                    "api.example.com": { "evaluator": "default", "evaluator": "disabled" }
                  }
                }
                """
            )
        }
        #expect(error?.code == .syntax)
        #expect(error?.line == 4)
        #expect(error?.description.contains("\"evaluator\" appears twice") == true)
    }

    @Test func twoSpellingsOfOnePatternAreRefused() {
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyExamples.decode(
                #"{"format":"bulwark-policy/1","hosts":{"API.example.com":{"evaluator":"default"},"#
                    + #""api.example.com.":{"evaluator":"default"}}}"#
            )
        }
        #expect(error?.code == .invalidPattern)
        #expect(error?.pointer == "/hosts/api.example.com.")
    }

    @Test func aPointerEscapesSlashAndTilde() {
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyExamples.decode(#"{"format":"bulwark-policy/1","hosts":{"a/b~c":{"evaluator":"default"}}}"#)
        }
        #expect(error?.pointer == "/hosts/a~1b~0c")
    }

    @Test func aRelativeCertificateFileNeedsTheFilesDirectory() throws {
        let text =
            #"{"format":"bulwark-policy/1","hosts":{"a.example":{"evaluator":"pinnedCertificates","#
            + #""certificates":[{"file":"example-ca.pem"}]}}}"#
        let error = #expect(throws: PolicyFileError.self) { try PolicyExamples.decode(text) }
        #expect(error?.pointer == "/hosts/a.example/certificates/0/file")
        let policy = try PolicyExamples.decode(text, directory: PolicyExamples.valid.path)
        #expect(policy.hosts[0].evaluator.certificates[0].certificates.count == 1)
        let missing = #expect(throws: PolicyFileError.self) {
            try PolicyExamples.decode(text.replacingOccurrences(of: "example-ca", with: "absent"), directory: "/tmp")
        }
        #expect(missing?.code == .invalidCertificate)
    }

    @Test func aNetworkRevocationCheckNeedsAFetcher() throws {
        let policy = try PolicyFile(contentsOfFile: PolicyExamples.readmeExample)
        let error = #expect(throws: PolicyFileError.self) {
            try ServerTrustManager(policy: policy, revocationFetcher: nil)
        }
        #expect(error?.code == .revocationFetcherMissing)
        #expect(error?.pointer == "/hosts/api.example.com/revocation")
        #expect(error?.line == 13)
    }

    @Test func aManagerFromAPolicyDecidesRealChains() async throws {
        let chain = try TestChain.make(host: "api.example.com")
        let intermediate = try #require(chain.intermediate)
        let keyPin = Pin.publicKey(of: intermediate.certificate).description
        let backup = Pin.publicKey(of: chain.root.certificate).description
        let root = PolicyJSON.quotedForTests(chain.root.certificatePEM)
        let policy = try PolicyExamples.decode(
            """
            {
              "format": "bulwark-policy/1",
              "hosts": {
                "api.example.com": {
                  "evaluator": "publicKeys",
                  "pins": ["\(keyPin)", "\(backup)"],
                  "roots": { "system": false, "certificates": [{ "pem": \(root) }] }
                },
                "other.example.com": {
                  "evaluator": "publicKeys",
                  "pins": ["sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=", "\(backup)"],
                  "roots": { "system": false, "certificates": [{ "pem": \(root) }] }
                }
              }
            }
            """
        )
        let manager = try ServerTrustManager(policy: policy, revocationFetcher: nil)
        let trusted = await manager.evaluate(chain.presentedChain, forHost: "api.example.com")
        #expect(trusted.trustedChain != nil)
        let refused = await manager.evaluate(chain.presentedChain, forHost: "unlisted.example.com")
        #expect(refused.trustedChain == nil)
    }

    @Test func aClientCertificateIsNamedByPathOnly() throws {
        let policy = try PolicyFile(contentsOfFile: PolicyExamples.valid.appending(path: "client-settings.json").path)
        #expect(policy.clientCertificates.map(\.pattern.description) == ["api.example.com", "**.example.net"])
        #expect(policy.resolvedPath("client.pem") == PolicyExamples.valid.appending(path: "client.pem").path)
        #expect(policy.minimumTLSVersion == .tls13)
        #expect(policy.allowlist?.last?.ports == [443, 8443])
    }

    @Test func aProxyIsAURLOrNoneOrTheEnvironmentWithCredentialsFromAFile() throws {
        let policy = try PolicyFile(contentsOfFile: PolicyExamples.valid.appending(path: "proxy.json").path)
        let proxy = try #require(policy.proxy)
        #expect(
            proxy.setting == .init(use: .url("http://proxy.corp.example:3128"), credentialsFile: "proxy-credentials")
        )
        #expect(
            proxy.hosts.map(\.pattern.description) == [
                "**.internal.example", "partner.example.org", "*.example.org", "**.example.net",
            ]
        )
        #expect(
            proxy.hosts.map(\.setting.use) == [
                .none, .url("socks5h://[::1]:1080/"), .environment, .url("https://tls-proxy.corp.example:3129"),
            ]
        )
        #expect(proxy.hosts[1].setting.credentialsFile == "/run/secrets/socks")
        // An https proxy, with its own CA file (a path, like the credentials).
        #expect(
            proxy.hosts[3].setting
                == .init(
                    use: .url("https://tls-proxy.corp.example:3129"),
                    credentialsFile: "proxy-credentials",
                    caFile: "proxy-ca.pem"
                )
        )
        #expect(proxy.setting.caFile == nil)
        #expect(
            policy.resolvedPath("proxy-credentials") == PolicyExamples.valid.appending(path: "proxy-credentials").path
        )

        let refusals: [(String, PolicyFileError.Code, String, String)] = [
            (#"{"use": "HTTP://p.example"}"#, .invalidValue, "/proxy/use", "\"HTTP\" is not supported"),
            (#"{"use": "http://p.example/path"}"#, .invalidValue, "/proxy/use", "no path"),
            (#"{"use": "http://:8080"}"#, .invalidValue, "/proxy/use", "has no host"),
            (#"{"use": "proxy.example:8080"}"#, .invalidValue, "/proxy/use", "is not supported"),
            (#"{"use": "socks5://bob@p.example"}"#, .secretInPolicy, "/proxy/use", "user information"),
            (
                #"{"use": "none", "credentialsFile": "f"}"#, .invalidValue, "/proxy/credentialsFile",
                "go with a proxy URL"
            ),
            (#"{"credentialsFile": "f"}"#, .missingKey, "/proxy/use", "required"),
            (#"{"use": "none", "hosts": {"a.example": {}}}"#, .missingKey, "/proxy/hosts/a.example/use", "required"),
            (
                #"{"use": "none", "hosts": {"a.example": {"use": "none", "hosts": {}}}}"#, .unknownKey,
                "/proxy/hosts/a.example/hosts", "is not a member"
            ),
            (
                #"{"use": "none", "hosts": {"a.example": {"use": "none"}, "A.example": {"use": "none"}}}"#,
                .invalidPattern, "/proxy/hosts/A.example", "listed twice"
            ),
            (
                #"{"use": "http://p.example", "credentialsFile": "user:secret\n"}"#,
                .secretInPolicy, "/proxy/credentialsFile", "never written"
            ),
            (
                #"{"use": "socks5://p.example", "caFile": "ca.pem"}"#, .invalidValue, "/proxy/caFile",
                "goes with an https:// proxy URL or \"environment\", not with \"socks5://p.example\""
            ),
            (#"{"use": "none", "caFile": "ca.pem"}"#, .invalidValue, "/proxy/caFile", "not with \"none\""),
            (
                #"{"use": "none", "hosts": {"a.example": {"use": "http://p.example", "caFile": "ca.pem"}}}"#,
                .invalidValue, "/proxy/hosts/a.example/caFile", "a proxy reached over TLS"
            ),
            (
                #"{"use": "https://p.example", "caFile": "-----BEGIN CERTIFICATE-----\nMIIB\n"}"#,
                .secretInPolicy, "/proxy/caFile", "by path"
            ),
            (#"{"use": "https://p.example", "caFile": ""}"#, .invalidValue, "/proxy/caFile", "the path is empty"),
            (#"{"use": "https://p.example", "caFile": 3}"#, .wrongType, "/proxy/caFile", "expected a string"),
        ]
        for (proxy, code, pointer, phrase) in refusals {
            let text =
                #"{"format": "bulwark-policy/1", "hosts": {"a.example": {"evaluator": "default"}}, "proxy": "#
                + proxy + "}"
            let error = #expect(throws: PolicyFileError.self, "\(proxy)") { try PolicyExamples.decode(text) }
            #expect(error?.code == code, "\(proxy): \(String(describing: error))")
            #expect(error?.pointer == pointer, "\(proxy): \(String(describing: error))")
            #expect(error?.description.contains(phrase) == true, "\(proxy): \(String(describing: error))")
            // A refused secret is never repeated.
            #expect(error?.description.contains("user:secret") != true)
            #expect(error?.description.contains("bob@") != true)
        }
    }

    @Test func anHTTPSProxyAndItsCAFileDecodeAndRoundTrip() throws {
        for use in ["https://p.example:3129", "environment"] {
            let text =
                #"{"format": "bulwark-policy/1", "hosts": {"a.example": {"evaluator": "default"}}, "proxy": "#
                + #"{"use": "\#(use)", "caFile": "certs/proxy-ca.pem"}}"#
            let policy = try PolicyExamples.decode(text, directory: "/etc/bulwark")
            #expect(policy.proxy?.setting.caFile == "certs/proxy-ca.pem")
            #expect(policy.resolvedPath("certs/proxy-ca.pem") == "/etc/bulwark/certs/proxy-ca.pem")
            let again = try PolicyFile(jsonBytes: policy.encoded(), baseDirectory: "/etc/bulwark")
            #expect(again.proxy == policy.proxy)
        }
    }

    static func expectNoTypeNames(_ text: String) {
        for name in ["PolicyFile", "PolicyJSON", "HostPattern", "PinError", "Swift.", "Optional(", "Error("] {
            #expect(!text.contains(name), "\(text) names \(name)")
        }
    }
}

extension PolicyJSON {
    /// `text` as a JSON string literal, for building policies in tests.
    static func quotedForTests(_ text: String) -> String { Self.quoted(text) }
}
