import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import Testing
import X509

/// One test per lint rule: a policy that breaks the rule, and the finding it gets.
@Suite("Policy lint rules")
struct PolicyLintTests {
    static let pinA = "sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg="
    static let pinB = "sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U="
    static let today = PolicyFile.parseDay("2026-11-24")!

    /// The findings for a policy whose `hosts` member is `hosts` (and whose other members are `extra`).
    static func findings(
        hosts: String,
        extra: String = "",
        known: [Certificate] = []
    ) throws -> [PolicyLintFinding] {
        let text = #"{"format":"bulwark-policy/1","hosts":{"# + hosts + "}" + extra + "}"
        return PolicyLinter(now: Self.today, knownCertificates: known).lint(try PolicyExamples.decode(text))
    }

    /// The one finding of `rule` among `findings`.
    static func only(_ rule: PolicyLintRule, in findings: [PolicyLintFinding]) throws -> PolicyLintFinding {
        let matching = findings.filter { $0.rule == rule }
        #expect(matching.count == 1, "\(findings)")
        return try #require(matching.first)
    }

    static let revoked = #""revocation":{"mode":"soft"}"#

    @Test func singlePin() throws {
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(Self.pinA)"],"allowSinglePin":true,"#
                + Self.revoked + "}"
        )
        let finding = try Self.only(.singlePin, in: findings)
        #expect(finding.rule.code == "BWP001")
        #expect(finding.rule.severity == .error)
        #expect(finding.pointer == "/hosts/a.example.com/pins")
        #expect(finding.line == 1)
    }

    @Test func leafPinsOnly() throws {
        let first = try TestChain.make(host: "a.example.com")
        let second = try TestChain.make(host: "a.example.com")
        let leafPins = [first.leaf.certificate, second.leaf.certificate].map { Pin.publicKey(of: $0).description }
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(leafPins[0])","\#(leafPins[1])"],"#
                + Self.revoked + "}",
            known: first.presentedChain + second.presentedChain
        )
        #expect(try Self.only(.leafPinsOnly, in: findings).pointer == "/hosts/a.example.com/pins")
        // With an intermediate's key among the pins, the set survives a leaf renewal.
        let intermediate = Pin.publicKey(of: try #require(first.intermediate).certificate).description
        let mixed = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(leafPins[0])","\#(intermediate)"],"#
                + Self.revoked + "}",
            known: first.presentedChain
        )
        #expect(!mixed.contains { $0.rule == .leafPinsOnly })
        // Pinned certificates that are all leaves.
        let leaf = PolicyJSON.quotedForTests(first.leaf.certificatePEM)
        let pinned = try Self.findings(
            hosts: #""b.example.com":{"evaluator":"pinnedCertificates","certificates":[{"pem":\#(leaf)}],"#
                + Self.revoked + "}"
        )
        #expect(try Self.only(.leafPinsOnly, in: pinned).pointer == "/hosts/b.example.com/certificates")
    }

    @Test func pinSetExpired() throws {
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(Self.pinA)","\#(Self.pinB)"],"#
                + #""expires":"2026-11-01","# + Self.revoked + "}"
        )
        let finding = try Self.only(.pinSetExpired, in: findings)
        #expect(finding.pointer == "/hosts/a.example.com/expires")
        #expect(finding.message == "a.example.com: the pin set expired on 2026-11-01")
    }

    @Test func pinSetExpiringWithin30Days() throws {
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(Self.pinA)","\#(Self.pinB)"],"#
                + #""expires":"2026-12-04","# + Self.revoked + "}"
        )
        let finding = try Self.only(.pinSetExpiring, in: findings)
        #expect(finding.message == "a.example.com: the pin set expires on 2026-12-04, in 10 days")
        #expect(finding.rule.severity == .warning)
        let later = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(Self.pinA)","\#(Self.pinB)"],"#
                + #""expires":"2027-01-24","# + Self.revoked + "}"
        )
        #expect(later.isEmpty, "\(later)")
    }

    @Test func validationDisabled() throws {
        let findings = try Self.findings(
            hosts: #""dev.example.com":{"evaluator":"disabled"}"#,
            extra: #","insecure":true"#
        )
        #expect(try Self.only(.validationDisabled, in: findings).pointer == "/hosts/dev.example.com/evaluator")
    }

    @Test func hostNotValidated() throws {
        // validateHost false weakens trust by construction: a policy says "insecure": true to have it at all.
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"default","validateHost":false}"#,
            extra: #","insecure":true"#
        )
        #expect(try Self.only(.hostNotValidated, in: findings).pointer == "/hosts/a.example.com/validateHost")
    }

    @Test func defaultValidationSkipped() throws {
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(Self.pinA)","\#(Self.pinB)"],"#
                + #""performDefaultValidation":false,"# + Self.revoked + "}"
        )
        let finding = try Self.only(.defaultValidationSkipped, in: findings)
        #expect(finding.pointer == "/hosts/a.example.com/performDefaultValidation")
    }

    @Test func httpsToHTTPRedirect() throws {
        let findings = try Self.findings(
            hosts: "",
            extra: #","insecure":true,"redirects":{"allowHTTPSToHTTP":true}"#
        )
        #expect(try Self.only(.httpsToHTTPRedirect, in: findings).pointer == "/redirects/allowHTTPSToHTTP")
    }

    @Test func reportOnly() throws {
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"publicKeys","pins":["\#(Self.pinA)","\#(Self.pinB)"],"#
                + #""reportOnly":true,"# + Self.revoked + "}"
        )
        #expect(try Self.only(.reportOnly, in: findings).pointer == "/hosts/a.example.com/reportOnly")
    }

    @Test func broadPattern() throws {
        let findings = try Self.findings(
            hosts: #""**.com":{"evaluator":"default"},"*.co.uk":{"evaluator":"default"},"#
                + #""**.example.com":{"evaluator":"default"}"#
        )
        let broad = findings.filter { $0.rule == .broadPattern }
        #expect(broad.map(\.pointer) == ["/hosts/**.com", "/hosts/*.co.uk"])
        #expect(broad[0].message == "**.com covers every host under the top-level domain com, whoever owns it")
    }

    @Test func shadowedPattern() throws {
        let findings = try Self.findings(
            hosts: #""**.example.com":{"evaluator":"publicKeys","pins":["\#(Self.pinA)","\#(Self.pinB)"],"#
                + Self.revoked + #"},"legacy.example.com":{"evaluator":"default"}"#
        )
        let finding = try Self.only(.shadowedPattern, in: findings)
        #expect(finding.pointer == "/hosts/legacy.example.com")
        #expect(
            finding.message
                == "legacy.example.com is decided by its own default entry, not by the publicKeys entry of "
                + "**.example.com that also covers it"
        )
    }

    @Test func allowlistedHostWithoutEvaluator() throws {
        let findings = try Self.findings(
            hosts: #""api.example.com":{"evaluator":"default"}"#,
            extra: #","allowlist":["api.example.com","**.example.com"]"#
        )
        #expect(try Self.only(.allowlistedHostWithoutEvaluator, in: findings).pointer == "/allowlist/1")
    }

    @Test func pinnedWithoutRevocation() throws {
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"composite","evaluators":[{"evaluator":"default"},"#
                + #"{"evaluator":"publicKeys","pins":["\#(Self.pinA)","\#(Self.pinB)"]}]}"#
        )
        #expect(try Self.only(.pinnedWithoutRevocation, in: findings).pointer == "/hosts/a.example.com")
    }

    @Test func cleartextProxyCredentials() throws {
        let findings = try Self.findings(
            hosts: #""a.example.com":{"evaluator":"default"}"#,
            extra: #","proxy":{"use":"http://p.example:3128","credentialsFile":"/etc/creds","hosts":{"# + "\n"
                + #""b.example.com":{"use":"https://p.example:3129","credentialsFile":"/etc/creds","caFile":"/etc/ca.pem"},"#
                + #""c.example.com":{"use":"socks5h://p.example","credentialsFile":"/etc/creds"},"#
                + #""d.example.com":{"use":"http://p.example:3128"}}}"#
        )
        let matching = findings.filter { $0.rule == .cleartextProxyCredentials }
        #expect(matching.map(\.pointer) == ["/proxy/credentialsFile", "/proxy/hosts/c.example.com/credentialsFile"])
        #expect(
            matching.first?.message == "http://p.example:3128: the proxy credentials travel to the proxy in cleartext"
        )
        #expect(matching.first?.rule.severity == .warning)
    }

    @Test func invalidPolicyIsAFindingWithExitStatus3() throws {
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyFile(contentsOfFile: PolicyExamples.invalid.appending(path: "bad-pin.json").path)
        }
        let report = PolicyLintReport(file: "bad-pin.json", error: try #require(error))
        #expect(report.findings.map(\.rule) == [.invalidPolicy])
        #expect(report.exitStatus == 3)
        #expect(report.text.hasPrefix("bad-pin.json:8: error BWP000 invalid-policy /hosts/api.example.com/pins/1: "))
    }

    @Test func rulesHaveStableDistinctCodesAndOneSentenceEach() {
        let codes = PolicyLintRule.all.map(\.code)
        #expect(codes == (0..<PolicyLintRule.all.count).map { String(format: "BWP%03d", $0) })
        #expect(Set(PolicyLintRule.all.map(\.name)).count == PolicyLintRule.all.count)
        for rule in PolicyLintRule.all {
            #expect(rule.explanation.hasSuffix("."), "\(rule)")
            #expect(rule.explanation.filter { $0 == "." }.count <= 1 || rule.explanation.contains("**.com"), "\(rule)")
        }
    }

    @Test func exitStatusFollowsTheWorstSeverity() throws {
        let clean = PolicyLintReport(file: "p.json", findings: [])
        let warning = PolicyLintReport(
            file: "p.json",
            findings: [.init(rule: .reportOnly, pointer: "/x", line: 1, message: "m")]
        )
        let error = PolicyLintReport(
            file: "p.json",
            findings: [
                .init(rule: .reportOnly, pointer: "/x", line: 1, message: "m"),
                .init(rule: .singlePin, pointer: "/y", line: 2, message: "m"),
            ]
        )
        #expect(clean.exitStatus == 0)
        #expect(warning.exitStatus == 1)
        #expect(error.exitStatus == 2)
        #expect(error.text.hasSuffix("p.json: 1 error, 1 warning, 0 notes\n"))
    }
}
