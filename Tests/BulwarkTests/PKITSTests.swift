import BulwarkPolicy
import BulwarkTestHelpers
import Foundation
import Testing
import X509

/// NIST PKITS through `bulwark verify`'s library path (``OfflineChainVerifier``: RFC 5280 profile, any purpose, hard
/// revocation with every list of the suite) and through `openssl verify`, section by section (issue 41). No
/// "Invalid" case may be trusted; a "Valid" case refused must be refused for a feature listed below, in the words the
/// list gives; and the table of the article HowBulwarkIsTested.md must be the one this run computes.
@Suite("NIST PKITS through bulwark verify and openssl verify", .tags(.externalPeers))
struct PKITSTests {
    /// What Bulwark deliberately does not do, the "Valid" cases that need it, and words their refusal must contain.
    struct Unsupported {
        var feature: String
        var cases: [String]
        var refusalSays: String
    }

    static let unsupported: [Unsupported] = [
        Unsupported(
            feature: "DSA keys and signatures (swift-certificates reads no DSA key)",
            cases: ["ValidDSASignaturesTest4", "ValidDSAParameterInheritanceTest5"],
            refusalSays: "unsupportedPublicKeyAlgorithm"
        ),
        Unsupported(
            feature:
                "unique identifiers in a certificate (swift-certificates cannot read issuerUniqueID/subjectUniqueID)",
            cases: ["ValidNameUIDsTest6"],
            refusalSays: "cannot be read"
        ),
        Unsupported(
            feature: "names compared after RFC 4518 preparation (case, spaces, PrintableString against UTF8String): "
                + "swift-certificates links an issuer to a subject byte for byte",
            cases: [
                "ValidNameChainingWhitespaceTest3", "ValidNameChainingWhitespaceTest4",
                "ValidNameChainingCapitalizationTest5", "ValidRolloverfromPrintableStringtoUTF8StringTest10",
                "ValidUTF8StringCaseInsensitiveMatchTest11",
            ],
            refusalSays: "the chain stops at"
        ),
        Unsupported(
            feature: "a revocation list with a negative serial number: refused whole as malformed (issue 39, item 4)",
            cases: ["ValidNegativeSerialNumberTest14"],
            refusalSays: "no revocation list of CN=Negative Serial Number CA"
        ),
        Unsupported(
            feature: "a revocation list signed by another key of the CA (a separate CRL-signing certificate, a key "
                + "rollover): a list must verify with the key of the certificate's issuer on the path",
            cases: [
                "ValidSeparateCertificateandCRLKeysTest19", "ValidBasicSelfIssuedOldWithNewTest1",
                "ValidSelfIssuedpathLenConstraintTest15", "ValidSelfIssuedpathLenConstraintTest17",
            ],
            refusalSays: "(another key)"
        ),
        Unsupported(
            feature: "distribution points named by a directory name or relative to the issuer: Bulwark matches "
                + "distribution points by URI",
            cases: [
                "ValidBasicSelfIssuedNewWithOldTest3", "ValidBasicSelfIssuedNewWithOldTest4",
                "ValidBasicSelfIssuedCRLSigningKeyTest6", "ValiddistributionPointTest1", "ValiddistributionPointTest4",
                "ValiddistributionPointTest5", "ValiddistributionPointTest7", "ValidcRLIssuerTest28",
                "ValidcRLIssuerTest29",
            ],
            refusalSays: "directory name or a name relative to the issuer"
        ),
        Unsupported(
            feature: "indirect revocation lists and lists limited to some reasons (refused when loaded)",
            cases: [
                "ValidIDPwithindirectCRLTest22", "ValidIDPwithindirectCRLTest24", "ValidIDPwithindirectCRLTest25",
                "ValidcRLIssuerTest30", "ValidcRLIssuerTest33", "ValidonlySomeReasonsTest18",
                "ValidonlySomeReasonsTest19",
            ],
            refusalSays: "is loaded and the certificate names no CRL distribution point"
        ),
        Unsupported(
            feature: "directoryName name constraints (swift-certificates)",
            cases: [
                "ValidDNnameConstraintsTest1", "ValidDNnameConstraintsTest4", "ValidDNnameConstraintsTest5",
                "ValidDNnameConstraintsTest6", "ValidDNnameConstraintsTest11", "ValidDNnameConstraintsTest14",
                "ValidDNnameConstraintsTest18", "ValidDNnameConstraintsTest19", "ValidDNandRFC822nameConstraintsTest27",
            ],
            refusalSays: "directoryName name constraints are not supported"
        ),
        Unsupported(
            feature: "rfc822Name constraints on a host or domain, and URI constraints: swift-certificates matches "
                + "them more narrowly than RFC 5280 (fails closed)",
            cases: [
                "ValidRFC822nameConstraintsTest21", "ValidRFC822nameConstraintsTest23",
                "ValidRFC822nameConstraintsTest25", "ValidURInameConstraintsTest36",
            ],
            refusalSays: "not permitted by the name constraints"
        ),
        Unsupported(
            feature: "certificate policies: a path in which a CA requires an explicit policy is refused",
            cases: [
                "ValidrequireExplicitPolicyTest1", "ValidrequireExplicitPolicyTest2", "ValidrequireExplicitPolicyTest4",
                "ValidSelfIssuedrequireExplicitPolicyTest6", "ValidPolicyMappingTest1", "ValidPolicyMappingTest3",
                "ValidPolicyMappingTest5", "ValidPolicyMappingTest6", "ValidPolicyMappingTest9",
                "ValidPolicyMappingTest11", "ValidPolicyMappingTest12", "ValidPolicyMappingTest13",
                "ValidPolicyMappingTest14", "ValidinhibitPolicyMappingTest2", "ValidinhibitPolicyMappingTest4",
                "ValidSelfIssuedinhibitPolicyMappingTest7", "ValidinhibitAnyPolicyTest2",
                "ValidSelfIssuedinhibitAnyPolicyTest7", "ValidSelfIssuedinhibitAnyPolicyTest9",
            ],
            refusalSays: "requires an explicit certificate policy"
        ),
        Unsupported(
            feature: "delta revocation lists: a base list that names deltas cannot show a certificate good",
            cases: ["ValiddeltaCRLTest2", "ValiddeltaCRLTest7", "ValiddeltaCRLTest8"],
            refusalSays: "delta CRLs"
        ),
        Unsupported(
            feature: "delta revocation lists: a certificate on hold in a base list stays revoked (the delta that "
                + "releases it is not read)",
            cases: ["ValiddeltaCRLTest5"],
            refusalSays: "(reason: certificate hold)"
        ),
    ]

    struct Outcome: Sendable {
        var testCase: PKITSSuite.Case
        var bulwark: (trusted: Bool, reason: String)
        var openssl: (trusted: Bool, output: String)
    }

    /// How many cases are judged at once.
    static let concurrency = 4

    @Test func everyCaseAgainstBulwarkAndOpenSSL() async throws {
        let suite = try PKITSSuite.load()
        let openssl = try ExternalPeers.findTool("openssl")
        let files = suite.opensslFiles
        // A few cases at a time: each waits on an `openssl verify` process (one case after another took 40-70 s of a
        // 2-core machine's test run, as the slowest test of its process).
        var outcomes: [Outcome] = []
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            func judge(_ testCase: PKITSSuite.Case) {
                group.addTask {
                    let ours = await suite.bulwark(testCase)
                    let theirs = try await suite.openssl(testCase, openssl: openssl, files: files)
                    return Outcome(testCase: testCase, bulwark: ours, openssl: theirs)
                }
            }
            var pending = suite.cases.makeIterator()
            for _ in 0..<Self.concurrency {
                guard let testCase = pending.next() else { break }
                judge(testCase)
            }
            while let outcome = try await group.next() {
                outcomes.append(outcome)
                if let testCase = pending.next() { judge(testCase) }
            }
        }
        outcomes.sort { ($0.testCase.section, $0.testCase.name) < ($1.testCase.section, $1.testCase.name) }
        #expect(outcomes.count == suite.cases.count)
        // The sections as the PKITS document numbers them (4.8.1 reuses 4.1.1's certificate).
        for (section, count) in PKITSSuite.documentedCounts {
            let found = outcomes.filter { $0.testCase.section == section }.count
            #expect(found == count - (section == 8 ? 1 : 0), "4.\(section): \(found) cases")
        }
        var explained: [String: Unsupported] = [:]
        for entry in Self.unsupported { for name in entry.cases { explained[name] = entry } }
        for outcome in outcomes {
            let name = outcome.testCase.name
            switch (outcome.testCase.expectedValid, outcome.bulwark.trusted) {
            case (false?, true):
                Issue.record("an Invalid case was trusted: 4.\(outcome.testCase.section) \(name)")
            case (true?, false):
                let entry = try #require(
                    explained[name],
                    "4.\(outcome.testCase.section) \(name) refused: \(outcome.bulwark.reason)"
                )
                #expect(outcome.bulwark.reason.contains(entry.refusalSays), "\(name): \(outcome.bulwark.reason)")
            case (true?, true):
                #expect(explained[name] == nil, "\(name) is trusted now: take it off the list of unsupported features")
            case (nil, true):
                // Settings-dependent (policy) cases: Bulwark, which processes no policies, trusts none that OpenSSL,
                // which does, refuses under the same default settings.
                #expect(outcome.openssl.trusted, "\(name): trusted by Bulwark, refused by OpenSSL")
            default: break
            }
        }
        let table = Self.table(outcomes)
        let article = "Sources/Bulwark/Bulwark.docc/HowBulwarkIsTested.md"
        let readme = try String(contentsOf: ExternalPeers.repositoryRoot.appending(path: article), encoding: .utf8)
        let committed = ReadmeBlock.committed("pkits", in: readme)
        #expect(committed == table, "the article's PKITS table differs from this run's:\n\(table)")
    }

    /// The table of the article HowBulwarkIsTested.md: per section, the cases, how many Bulwark judged as PKITS says,
    /// how many it refused for a listed unsupported feature, how many it got wrong, and how many OpenSSL judged as
    /// PKITS says.
    static func table(_ outcomes: [Outcome]) -> String {
        var lines = [
            "| Section | Cases (valid / invalid / by settings) | Bulwark correct | Bulwark refused: unsupported | "
                + "Bulwark wrong | OpenSSL correct |",
            "|---|---|---|---|---|---|",
        ]
        var totals = [0, 0, 0, 0, 0, 0, 0, 0]
        for section in 1...16 {
            let cases = outcomes.filter { $0.testCase.section == section }
            let valid = cases.filter { $0.testCase.expectedValid == true }
            let invalid = cases.filter { $0.testCase.expectedValid == false }
            let bySettings = cases.count - valid.count - invalid.count
            let correct = valid.filter(\.bulwark.trusted).count + invalid.filter { !$0.bulwark.trusted }.count
            let unsupported = valid.filter { !$0.bulwark.trusted }.count
            let wrong = invalid.filter(\.bulwark.trusted).count
            let opensslCorrect = valid.filter(\.openssl.trusted).count + invalid.filter { !$0.openssl.trusted }.count
            let row = [
                cases.count, valid.count, invalid.count, bySettings, correct, unsupported, wrong, opensslCorrect,
            ]
            for index in row.indices { totals[index] += row[index] }
            lines.append(
                "| 4.\(section) \(PKITSSuite.sectionTitles[section]!) | \(row[0]) (\(row[1]) / \(row[2]) / \(row[3])) | "
                    + "\(row[4]) | \(row[5]) | \(row[6]) | \(row[7]) |"
            )
        }
        lines.append(
            "| **All** | \(totals[0]) (\(totals[1]) / \(totals[2]) / \(totals[3])) | \(totals[4]) | \(totals[5]) | "
                + "\(totals[6]) | \(totals[7]) |"
        )
        lines.append("")
        lines.append("OpenSSL's verdicts that differ from PKITS's:")
        lines.append("")
        for outcome in outcomes {
            guard let expected = outcome.testCase.expectedValid, outcome.openssl.trusted != expected else { continue }
            let verdict = outcome.openssl.trusted ? "trusted" : "refused"
            lines.append(
                "- 4.\(outcome.testCase.section) `\(outcome.testCase.name)`: OpenSSL \(verdict); Bulwark "
                    + (outcome.bulwark.trusted ? "trusted" : "refused")
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
