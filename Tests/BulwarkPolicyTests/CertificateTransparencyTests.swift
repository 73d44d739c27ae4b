import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

/// Certificate Transparency (issue 40) on real data: the 14 `online::` cases of x509-limbo are real web certificates
/// with embedded SCTs, and `../shared/testdata/ct/ct-logs.json` holds 47 public logs' keys (25 of the 38 SCTs come from
/// them, 13 from logs it does not list).
@Suite("Certificate Transparency on real certificates")
struct CertificateTransparencyTests {
    struct OnlineCase {
        var id: String
        var leaf: Certificate
        var intermediates: [Certificate]
        var roots: [Certificate]
        var time: Date
        var host: String
    }

    static let shared = PolicyExamples.root.deletingLastPathComponent().appending(path: "shared/testdata")

    static let logs: CertificateTransparencyLogList = {
        let data = try! Data(contentsOf: shared.appending(path: "ct/ct-logs.json"))
        return try! CertificateTransparencyLogList(jsonData: data)
    }()

    static let online: [OnlineCase] = {
        let data = try! Data(contentsOf: shared.appending(path: "limbo/limbo.json"))
        let root = try! JSONSerialization.jsonObject(with: data) as! [String: Any]
        var cases: [OnlineCase] = []
        for item in root["testcases"] as! [[String: Any]] {
            let id = item["id"] as! String
            guard id.hasPrefix("online::") else { continue }
            func certificates(_ pems: [String]) -> [Certificate] {
                pems.flatMap { try! CertificateLoader.certificates(fromPEM: $0, source: id) }
            }
            cases.append(
                OnlineCase(
                    id: id,
                    leaf: certificates([item["peer_certificate"] as! String])[0],
                    intermediates: certificates(item["untrusted_intermediates"] as! [String]),
                    roots: certificates(item["trusted_certs"] as! [String]),
                    // A day after limbo's time (the leaf's notBefore): the logs' SCTs are up to an hour later than
                    // that backdated notBefore, and an SCT from the future does not count.
                    time: try! Date(item["validation_time"] as! String, strategy: .iso8601) + 86_400,
                    host: ((item["expected_peer_name"] as? [String: Any])?["value"] as? String) ?? ""
                )
            )
        }
        return cases
    }()

    /// The serialized v1 SCT with `sct`'s fields, or the ones given instead.
    static func serialized(
        _ sct: SignedCertificateTimestamp,
        logID: [UInt8]? = nil,
        timestamp: UInt64? = nil,
        signature: [UInt8]? = nil
    ) -> [UInt8] {
        var bytes = [sct.version] + (logID ?? sct.logID)
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: (timestamp ?? sct.timestamp) >> UInt64(shift)))
        }
        bytes += [UInt8(sct.extensions.count >> 8), UInt8(sct.extensions.count & 0xff)] + sct.extensions
        bytes += [sct.hashAlgorithm, sct.signatureAlgorithm]
        let signature = signature ?? sct.signature
        return bytes + [UInt8(signature.count >> 8), UInt8(signature.count & 0xff)] + signature
    }

    /// A chain whose leaf carries `value` as its SCT list extension, and an evaluator enforcing CT against `logs`.
    static func chain(
        sctExtension value: [UInt8],
        host: String
    ) throws -> (leaf: Certificate, chain: [Certificate], evaluator: CertificateTransparencyTrustEvaluator) {
        let root = try CertificateFactory.makeRoot()
        let intermediate = try CertificateFactory.issueIntermediate(from: root)
        var blueprint = TestTransparencyLog.leafBlueprint(host: host, lifetime: 86_400)
        blueprint.extraExtensions = [
            Certificate.Extension(
                oid: SignedCertificateTimestamp.listExtensionOID,
                critical: false,
                value: ArraySlice(value)
            )
        ]
        let leaf = try blueprint.issue(issuer: intermediate)
        let evaluator = CertificateTransparencyTrustEvaluator(
            .default(roots: .custom([root.certificate])),
            logs: Self.logs
        )
        return (leaf.certificate, [leaf.certificate, intermediate.certificate], evaluator)
    }

    /// Chrome's rule on `testCase` against `logs`, at the case's time.
    static func check(
        _ testCase: OnlineCase,
        logs: CertificateTransparencyLogList = Self.logs
    ) throws
        -> CertificateTransparencyCheck
    {
        CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: try Self.issuer(of: testCase),
            logs: logs,
            at: testCase.time
        )
    }

    static func issuer(of testCase: OnlineCase) throws -> Certificate {
        try #require(testCase.intermediates.first { $0.subject == testCase.leaf.issuer })
    }

    @Test("every SCT of a known log verifies with its key: 25 verified, 13 from unknown logs, none bad")
    func realSCTsVerify() throws {
        #expect(Self.logs.logs.count == 47)
        #expect(Self.online.count == 14)
        var verdicts: [SignedCertificateTimestamp.Verdict: Int] = [:]
        for testCase in Self.online {
            let check = try Self.check(testCase)
            #expect(!check.entries.isEmpty, "\(testCase.id)")
            for entry in check.entries { verdicts[entry.verdict, default: 0] += 1 }
            print("[ct] \(testCase.id): \(check)")
        }
        #expect(verdicts[.verified] == 25, "\(verdicts)")
        #expect(verdicts[.unknownLog] == 13, "\(verdicts)")
        #expect(verdicts[.badSignature] == nil, "\(verdicts)")
    }

    @Test("a changed SCT, another issuer's key or another log's key is a bad signature")
    func tamperedSCTsDoNotVerify() throws {
        let testCase = try #require(Self.online.first { $0.id == "online::google.com" })
        let issuer = try Self.issuer(of: testCase)
        let scts = try #require(try SignedCertificateTimestamp.embedded(in: testCase.leaf))
        let tbs = try SignedCertificateTimestamp.precertificateTBS(of: testCase.leaf)
        let issuerKeyHash = Array(SHA256.hash(data: issuer.subjectPublicKeyInfoDER))
        let known = try #require(scts.first { Self.logs.log(withID: $0.logID) != nil })
        let log = try #require(Self.logs.log(withID: known.logID))
        #expect(known.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: log.key))
        // Another issuer key: the SCT was for this issuer's precertificate.
        let otherKey = Array(SHA256.hash(data: testCase.leaf.subjectPublicKeyInfoDER))
        #expect(!known.isSigned(forTBSCertificate: tbs, issuerKeyHash: otherKey, logKey: log.key))
        // The certificate's own TBSCertificate (with the SCT list) is not what the log signed.
        #expect(
            !known.isSigned(
                forTBSCertificate: Array(testCase.leaf.tbsCertificateBytes),
                issuerKeyHash: issuerKeyHash,
                logKey: log.key
            )
        )
        // Another log's key.
        let other = try #require(Self.logs.logs.first { $0.logID != log.logID })
        #expect(!known.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: other.key))
        // One bit of the timestamp changed.
        let changed = try SignedCertificateTimestamp(
            serialized: Self.serialized(known, timestamp: known.timestamp ^ 1)[...]
        )
        #expect(changed.timestamp == known.timestamp ^ 1)
        #expect(!changed.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: log.key))
    }

    @Test("enforced: a real chain whose SCTs do not meet the policy is refused with the SCTs and logs named")
    func enforcedAndReportOnlyOnRealChains() async throws {
        var met = 0
        var notMet = 0
        for testCase in Self.online {
            let base = DefaultTrustEvaluator(roots: .custom(testCase.roots))
            let chain = [testCase.leaf] + testCase.intermediates
            let plain = await base.evaluate(chain, forHost: testCase.host, at: testCase.time)
            #expect(plain.isTrusted, "\(testCase.id): \(String(describing: plain.refusal))")
            let enforced = await CertificateTransparencyTrustEvaluator(base, logs: Self.logs, mode: .enforce)
                .evaluate(chain, forHost: testCase.host, at: testCase.time)
            let report = await CertificateTransparencyTrustEvaluator(base, logs: Self.logs, mode: .reportOnly)
                .evaluate(chain, forHost: testCase.host, at: testCase.time)
            let reported = try #require(report.trustedChain, "\(testCase.id)")
            let check = try #require(reported.notices.compactMap(\.certificateTransparency).first)
            if check.isCompliant {
                met += 1
                #expect(enforced.isTrusted, "\(testCase.id)")
                #expect(!reported.notices.contains { $0.code == "ct_policy_not_met" })
            } else {
                notMet += 1
                let refusal = try #require(enforced.refusal, "\(testCase.id)")
                #expect(refusal.reasons.map(\.code) == ["ct_policy_not_met"])
                let words = "\(refusal)"
                #expect(words.contains("SCTs found:") && words.contains("the policy needs"), "\(words)")
                if check.entries.contains(where: { $0.verdict == .unknownLog }) {
                    #expect(words.contains("unknown log "), "\(words)")
                }
                #expect(reported.notices.contains { $0.code == "ct_policy_not_met" })
            }
            // Off checks nothing.
            let off = await CertificateTransparencyTrustEvaluator(base, logs: Self.logs, mode: .off)
                .evaluate(chain, forHost: testCase.host, at: testCase.time)
            #expect(off.trustedChain?.notices.contains { $0.code == "ct_checked" } == false)
        }
        print(
            "[ct] policy met by \(met) of \(Self.online.count) real chains against the partial list, not met by \(notMet)"
        )
        #expect(met > 0 && notMet > 0)
    }

    @Test("a stale log list reports instead of enforcing, and says so")
    func staleListOnlyReports() async throws {
        let testCase = try #require(
            Self.online.first { testCase in
                let check = CertificateTransparencyPolicy.chrome.check(
                    testCase.leaf,
                    issuer: try! Self.issuer(of: testCase),
                    logs: Self.logs,
                    at: testCase.time
                )
                return !check.isCompliant
            }
        )
        let stale = CertificateTransparencyLogList(logs: Self.logs.logs, expires: testCase.time - 86_400)
        let base = DefaultTrustEvaluator(roots: .custom(testCase.roots))
        let decision = await CertificateTransparencyTrustEvaluator(base, logs: stale, mode: .enforce)
            .evaluate([testCase.leaf] + testCase.intermediates, forHost: testCase.host, at: testCase.time)
        let trusted = try #require(decision.trustedChain)
        let notice = try #require(trusted.notices.first { $0.code == "ct_policy_not_met" })
        #expect("\(notice)".contains("the log list expired"), "\(notice)")
    }

    @Test("a retired log's SCT counts only if issued before the retirement; SCTs in the future do not count")
    func retiredLogsAndFutureSCTs() throws {
        let testCase = try #require(Self.online.first { $0.id == "online::google.com" })
        let issuer = try Self.issuer(of: testCase)
        let baseline = CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: issuer,
            logs: Self.logs,
            at: testCase.time
        )
        let counted = baseline.entries.filter(\.counts)
        let first = try #require(counted.first)
        var retired = Self.logs
        let index = try #require(retired.logs.firstIndex { $0.logID == first.sct.logID })
        retired.logs[index].state = .retired(at: first.sct.date - 1)
        let after = CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: issuer,
            logs: retired,
            at: testCase.time
        )
        #expect(after.counted == baseline.counted - 1)
        #expect(after.entries.contains { $0.whyNotCounted?.contains("retired") == true })
        retired.logs[index].state = .retired(at: first.sct.date + 1)
        #expect(
            CertificateTransparencyPolicy.chrome.check(testCase.leaf, issuer: issuer, logs: retired, at: testCase.time)
                .counted == baseline.counted
        )
        // Judged a day before the SCTs were issued, none counts.
        let early = CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: issuer,
            logs: Self.logs,
            at: first.sct.date - 86_400
        )
        #expect(early.counted == 0)
        #expect(early.entries.contains { $0.whyNotCounted == "dated in the future" })
    }

    @Test(
        "a malformed SCT list is a refusal reason in words, not a crash",
        arguments: [
            [0x04, 0x00] as [UInt8],  // an empty OCTET STRING
            [0x04, 0x02, 0x00, 0x05],  // a list that claims 5 bytes and has none
            [0x04, 0x06, 0x00, 0x04, 0x00, 0x02, 0x00, 0x00],  // an SCT of 2 bytes
            [0x02, 0x01, 0x00],  // not an OCTET STRING
        ]
    )
    func malformedListsAreRefusedInWords(value: [UInt8]) async throws {
        let (_, chain, evaluator) = try Self.chain(sctExtension: value, host: "ct.example.test")
        let decision = await evaluator.evaluate(chain, forHost: "ct.example.test", at: Date())
        let refusal = try #require(decision.refusal)
        #expect(refusal.reasons.map(\.code) == ["ct_policy_not_met"])
        #expect("\(refusal)".contains("SCT list is malformed"), "\(refusal)")
    }

    @Test("the public log list's v3 form: operators, states, temporal intervals; a wrong log_id is refused")
    func readsTheV3LogListForm() throws {
        let key = Self.logs.logs[0].key
        func json(logID: String) -> Data {
            Data(
                """
                {"version": "3.0", "operators": [{"name": "Example", "email": [], "logs": [
                  {"description": "Example 2026", "log_id": "\(logID)", "key": "\(Data(key).base64EncodedString())",
                   "url": "https://ct.example/", "mmd": 86400,
                   "state": {"retired": {"timestamp": "2026-03-01T00:00:00Z"}},
                   "temporal_interval": {"start_inclusive": "2026-01-01T00:00:00Z", "end_exclusive": "2027-01-01T00:00:00Z"}}
                ]}]}
                """.utf8
            )
        }
        let list = try CertificateTransparencyLogList(
            jsonData: json(logID: Data(Self.logs.logs[0].logID).base64EncodedString())
        )
        let log = try #require(list.logs.first)
        #expect(log.operatorName == "Example" && log.name == "Example 2026")
        #expect(log.state == .retired(at: try Date("2026-03-01T00:00:00Z", strategy: .iso8601)))
        #expect(log.temporalInterval?.lowerBound == (try Date("2026-01-01T00:00:00Z", strategy: .iso8601)))
        #expect(throws: CertificateTransparencyError.self) {
            try CertificateTransparencyLogList(
                jsonData: json(logID: Data(repeating: 1, count: 32).base64EncodedString())
            )
        }
        #expect(throws: CertificateTransparencyError.self) {
            try CertificateTransparencyLogList(jsonData: Data("[]".utf8))
        }
    }
}

extension CertificateTransparencyTests {
    static func fastly() throws -> (OnlineCase, Certificate) {
        let testCase = try #require(Self.online.first { $0.id == "online::fastly.com" })
        return (testCase, try Self.issuer(of: testCase))
    }

    @Test("at least one SCT must come from a log that is not retired (review 1)")
    func oneSCTFromALogNotRetired() throws {
        let (testCase, issuer) = try Self.fastly()
        let met = CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: issuer,
            logs: Self.logs,
            at: testCase.time
        )
        #expect(met.isCompliant)
        var retired = Self.logs
        for index in retired.logs.indices { retired.logs[index].state = .retired(at: testCase.time - 3_600) }
        let check = CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: issuer,
            logs: retired,
            at: testCase.time
        )
        #expect(!check.isCompliant, "\(check)")
        #expect(check.failure?.contains("not retired") == true, "\(check)")
    }

    @Test("a qualified log's SCT counts, as in Chrome (review 4)")
    func qualifiedLogsCount() throws {
        let (testCase, issuer) = try Self.fastly()
        let first = try #require(try SignedCertificateTimestamp.embedded(in: testCase.leaf)?.first)
        let json = """
            {"operators":[{"name":"X","logs":[
            """
            + Self.logs.logs.map { log in
                let state =
                    log.logID == first.logID
                    ? #"{"qualified":{"timestamp":"2025-01-01T00:00:00Z"}}"#
                    : #"{"usable":{"timestamp":"2025-01-01T00:00:00Z"}}"#
                return
                    #"{"description":"\#(log.name)","key":"\#(Data(log.key).base64EncodedString())","state":\#(state)}"#
            }.joined(separator: ",") + "]}]}"
        // One operator name for all in this list: rename per original operator afterwards.
        var list = try CertificateTransparencyLogList(jsonData: Data(json.utf8))
        for index in list.logs.indices { list.logs[index].operatorName = Self.logs.logs[index].operatorName }
        let check = CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: issuer,
            logs: list,
            at: testCase.time
        )
        #expect(check.isCompliant, "\(check)")
    }

    @Test(
        "the v3 reader refuses what it cannot read instead of skipping it (review 2, 3)",
        arguments: [
            #"{"operators":[{"name":"A","logs":[{"key":"KEY","state":"rejected"}]}]}"#,
            #"{"operators":[{"name":"A","logs":"none"}]}"#,
            #"{"operators":[{"name":"A","logs":[7]}]}"#,
            #"{"operators":[{"name":"A","logs":[{"key":"KEY","log_id":7}]}]}"#,
            #"{"operators":[{"name":"A","logs":[{"key":"KEY","temporal_interval":"2026"}]}]}"#,
            #"{"operators":[{"name":"A","logs":[{"key":"KEY"},{"key":"KEY"}]}]}"#,
            #"{"operators":[{"name":"A","logs":[{"key":"KEY"}]}],"logs":[]}"#,
            #"{"operators":[{"name":"A","logs":[{"key":"AAAA"}]}]}"#,
        ]
    )
    func strictLogListReader(json: String) {
        let key = Data(Self.logs.logs[0].key).base64EncodedString()
        let text = json.replacingOccurrences(of: "KEY", with: key)
        #expect(throws: CertificateTransparencyError.self) {
            try CertificateTransparencyLogList(jsonData: Data(text.utf8))
        }
    }

    @Test(
        "a list of more SCTs than any certificate carries is refused as malformed, in words of bounded length (review 5)"
    )
    func tooManySCTs() throws {
        var list: [UInt8] = []
        for _ in 0..<100 { list += [0, 1, 7] }  // 100 SCTs of an unknown version, one byte each
        list = [UInt8(list.count >> 8), UInt8(list.count & 0xff)] + list
        #expect(throws: CertificateTransparencyError.self) { try SignedCertificateTimestamp.list(list) }
    }

    @Test("an SCT dated after the time of the check does not count, even by a second (review 7)")
    func noFutureSCT() throws {
        let (testCase, issuer) = try Self.fastly()
        let scts = try #require(try SignedCertificateTimestamp.embedded(in: testCase.leaf))
        let latest = try #require(scts.map(\.date).max())
        let check = CertificateTransparencyPolicy.chrome.check(
            testCase.leaf,
            issuer: issuer,
            logs: Self.logs,
            at: latest - 1
        )
        #expect(check.entries.contains { $0.whyNotCounted == "dated in the future" })
    }
}

extension CertificateTransparencyTests {
    @Test("mutations of a real certificate's SCTs are caught: a signature byte, the extension removed")
    func realMutationsAreCaught() throws {
        let (testCase, issuer) = try Self.fastly()
        let scts = try #require(try SignedCertificateTimestamp.embedded(in: testCase.leaf))
        let tbs = try SignedCertificateTimestamp.precertificateTBS(of: testCase.leaf)
        let issuerKeyHash = Array(SHA256.hash(data: issuer.subjectPublicKeyInfoDER))
        for sct in scts {
            let log = try #require(Self.logs.log(withID: sct.logID))
            #expect(sct.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: log.key))
            // Every byte of the signature, one at a time: the last bytes of an ECDSA signature are the s value.
            for index in stride(from: 8, to: sct.signature.count, by: 7) {
                var signature = sct.signature
                signature[index] ^= 0x01
                let changed = try SignedCertificateTimestamp(
                    serialized: Self.serialized(sct, signature: signature)[...]
                )
                #expect(!changed.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: log.key))
            }
        }
        // A certificate that carries no SCT list (the issuing CA's own): nothing to count.
        let check = CertificateTransparencyPolicy.chrome.check(
            issuer,
            issuer: issuer,
            logs: Self.logs,
            at: testCase.time
        )
        #expect(check.failure?.contains("carries no SCT") == true, "\(check)")
    }

    @Test("an SCT verifies only with the key its log ID names: the log ID is not signed (found by the sct fuzz target)")
    func logIDIsBoundToTheKey() throws {
        let (testCase, issuer) = try Self.fastly()
        let scts = try #require(try SignedCertificateTimestamp.embedded(in: testCase.leaf))
        let tbs = try SignedCertificateTimestamp.precertificateTBS(of: testCase.leaf)
        let issuerKeyHash = Array(SHA256.hash(data: issuer.subjectPublicKeyInfoDER))
        let first = scts[0]
        let log = try #require(Self.logs.log(withID: first.logID))
        let other = try #require(Self.logs.log(withID: scts[1].logID))
        // The same SCT naming the other log: its own log's key must not verify it any more.
        let renamed = try SignedCertificateTimestamp(serialized: Self.serialized(first, logID: other.logID)[...])
        #expect(first.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: log.key))
        #expect(!renamed.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: log.key))
        #expect(!renamed.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: other.key))
    }

    @Test("a remembered certificate's SCTs verify from memory only for its exact bytes, issuer key and log keys")
    func rememberedSignaturesAreBoundToTheirInputs() throws {
        let root = try CertificateFactory.makeRoot()
        let issuing = try CertificateFactory.issueIntermediate(from: root)
        let intermediate = issuing.certificate
        let otherIntermediate = try CertificateFactory.issueIntermediate(from: root).certificate
        let logs = [
            TestTransparencyLog(operatorName: "Operator A", name: "memo log a"),
            TestTransparencyLog(operatorName: "Operator B", name: "memo log b"),
        ]
        let list = CertificateTransparencyLogList(logs: logs.map(\.log))
        let blueprint = TestTransparencyLog.leafBlueprint(host: "memo.example.test", lifetime: 86_400)
        let leaf = try TestTransparencyLog.issue(
            blueprint,
            issuer: issuing,
            logs: logs,
            at: Date() - 60
        ).certificate
        // A memo of its own: the shared one serves the other suites running alongside.
        let memo = EmbeddedSCTMemo()
        func verdicts(_ certificate: Certificate, issuer: Certificate) -> [SignedCertificateTimestamp.Verdict] {
            CertificateTransparencyPolicy.chrome.check(certificate, issuer: issuer, logs: list, at: Date(), memo: memo)
                .entries.map(\.verdict)
        }
        // A failure is not remembered: the wrong issuer first, then the right one.
        #expect(verdicts(leaf, issuer: otherIntermediate) == [.badSignature, .badSignature])
        #expect(verdicts(leaf, issuer: intermediate) == [.verified, .verified])
        let remembered = memo.leaf(of: leaf)
        #expect(memo.count == 1)
        let issuerKey = intermediate.subjectPublicKeyInfoDER[...]
        #expect(remembered.hasVerified(0, issuerKey: issuerKey, logKey: logs[0].log.key))
        #expect(remembered.hasVerified(1, issuerKey: issuerKey, logKey: logs[1].log.key))
        // Each success is bound to its SCT, its log's key and its issuer's key.
        #expect(!remembered.hasVerified(0, issuerKey: issuerKey, logKey: logs[1].log.key))
        #expect(!remembered.hasVerified(1, issuerKey: issuerKey, logKey: logs[0].log.key))
        let otherKey = otherIntermediate.subjectPublicKeyInfoDER[...]
        #expect(!remembered.hasVerified(0, issuerKey: otherKey, logKey: logs[0].log.key))
        #expect(verdicts(leaf, issuer: intermediate) == [.verified, .verified])
        #expect(verdicts(leaf, issuer: otherIntermediate) == [.badSignature, .badSignature])
        // One signature per SCT, however many checks verified it side by side (review helper-31).
        #expect(remembered.verifiedCount == 2)
        remembered.rememberVerified(0, issuerKey: issuerKey, logKey: logs[0].log.key)
        remembered.rememberVerified(7, issuerKey: issuerKey, logKey: logs[0].log.key)
        #expect(remembered.verifiedCount == 2)
        // The same bytes parsed again (other memory): the same entry.
        var serializer = DER.Serializer()
        try serializer.serialize(leaf)
        let der = serializer.serializedBytes
        #expect(memo.leaf(of: try Certificate(derEncoded: der)) === remembered)
        // One byte of the first SCT's signature changed: other bytes, checked afresh, and that SCT does not verify.
        let scts = try #require(try SignedCertificateTimestamp.embedded(in: leaf))
        let signature = try #require(der.firstRange(of: scts[0].signature))
        var changed = der
        changed[signature.upperBound - 1] ^= 0x01
        let mutated = try Certificate(derEncoded: changed)
        #expect(memo.leaf(of: mutated) !== remembered)
        #expect(verdicts(mutated, issuer: intermediate) == [.badSignature, .verified])
        #expect(verdicts(leaf, issuer: intermediate) == [.verified, .verified])
    }

    @Test("a certificate with 1,000 SCTs in a 64 KiB extension is refused quickly, with a reason of bounded length")
    func thousandSCTsAreRefusedQuickly() async throws {
        var list: [UInt8] = []
        let sct: [UInt8] =
            [0] + [UInt8](repeating: 7, count: 32) + [UInt8](repeating: 0, count: 8) + [0, 0, 4, 3, 0, 16]
            + [UInt8](repeating: 1, count: 16)
        for _ in 0..<1_000 { list += [UInt8(sct.count >> 8), UInt8(sct.count & 0xff)] + sct }
        list = Array(list.prefix(65_533))
        list = [UInt8(list.count >> 8), UInt8(list.count & 0xff)] + list
        var octets = DER.Serializer()
        try octets.serialize(ASN1OctetString(contentBytes: list[...]))
        let (_, chain, evaluator) = try Self.chain(sctExtension: octets.serializedBytes, host: "many.example.test")
        let decision = await evaluator.evaluate(chain, forHost: "many.example.test", at: Date())
        let refusal = try #require(decision.refusal)
        #expect("\(refusal)".contains("more than 16 SCTs"), "\(refusal)")
        #expect("\(refusal)".count < 2_000)
    }
}

/// The log list and the per-host mode in the policy file (`bulwark-policy/1`, issue 40).
@Suite("Certificate Transparency in the policy file")
struct CertificateTransparencyPolicyFileTests {
    static func policy(hosts: String, logs: String? = nil) -> String {
        let list = logs.map { #","certificateTransparency":\#($0)"# } ?? ""
        return #"{"format":"bulwark-policy/1","hosts":\#(hosts)\#(list)}"#
    }

    static func logsJSON(_ logs: [CertificateTransparencyLog], expires: String = "2099-01-01") -> String {
        let items = logs.map { log in
            #"{"key":"\#(Data(log.key).base64EncodedString())","operator":"\#(log.operatorName)","description":"\#(log.name)"}"#
        }
        return #"{"expires":"\#(expires)","logs":[\#(items.joined(separator: ","))]}"#
    }

    @Test("the committed example decodes, and a policy encodes to a file that decodes equal")
    func decodesAndRoundTrips() throws {
        let url = PolicyExamples.valid.appending(path: "certificate-transparency.json")
        let policy = try PolicyFile(contentsOfFile: url.path)
        let list = try #require(policy.certificateTransparency)
        #expect(list.logs.count == 2)
        #expect(list.logs[1].state == .retired(at: try #require(PolicyFile.parseDay("2026-12-01"))))
        #expect(list.logs[1].temporalInterval != nil)
        #expect(policy.hosts.map { $0.evaluator.certificateTransparency } == [.enforce, .reportOnly])
        let again = try PolicyFile(jsonBytes: policy.encoded(), baseDirectory: nil)
        #expect(again.certificateTransparency == policy.certificateTransparency)
        #expect(again.hosts.map(\.evaluator.certificateTransparency) == [.enforce, .reportOnly])
    }

    @Test(
        "bad input is a clear error naming the member",
        arguments: [
            (
                #"{"a.example.com":{"evaluator":"default","certificateTransparency":"enforce"}}"#, nil as String?,
                "no \"certificateTransparency\" log list"
            ),
            (
                #"{"a.example.com":{"evaluator":"default","certificateTransparency":"always"}}"#, #"{"logs":[]}"#,
                "\"enforce\", \"report\" or \"off\""
            ),
            (
                #"{"a.example.com":{"evaluator":"default"}}"#, #"{"logs":[{"key":"!!","operator":"X"}]}"#,
                "SubjectPublicKeyInfo in base64"
            ),
            (
                #"{"a.example.com":{"evaluator":"default"}}"#, #"{"logs":[{"key":"AQID","operator":"X"}]}"#,
                "ECDSA P-256 or RSA"
            ),
            (#"{"a.example.com":{"evaluator":"default"}}"#, #"{"logs":[{"key":"AAAA"}]}"#, "operator"),
            (
                #"{"a.example.com":{"evaluator":"default"}}"#,
                #"{"logs":[{"key":"AAAA","operator":"X","state":"retired"}]}"#, "stateTimestamp"
            ),
            (
                #"{"a.example.com":{"evaluator":"default"}}"#,
                #"{"logs":[{"key":"AAAA","operator":"X"},{"key":"AAAA","operator":"Y"}]}"#, "listed twice"
            ),
        ]
    )
    func badInputIsAClearError(hosts: String, logs: String?, words: String) {
        // "AAAA" stands for a real log key.
        let key = Data(CertificateTransparencyTests.logs.logs[0].key).base64EncodedString()
        let list = logs?.replacingOccurrences(of: "AAAA", with: key)
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyFile(jsonBytes: Array(Self.policy(hosts: hosts, logs: list).utf8), baseDirectory: nil)
        }
        #expect(error.map { "\($0)".contains(words) } == true, "\(String(describing: error))")
    }

    @Test("lint: an empty list, a stale or undated one, and fewer than two operators are reported")
    func lintRules() throws {
        let logs = CertificateTransparencyTests.logs.logs
        let google = logs.filter { $0.operatorName == "Google" }
        let cases: [(String, PolicyLintRule?)] = [
            (#"{"expires":"2099-01-01","logs":[]}"#, .certificateTransparencyNoLogs),
            (
                Self.logsJSON(
                    Array(google.prefix(2)) + [logs.first { $0.operatorName == "DigiCert" }!],
                    expires: "2020-01-01"
                ), .certificateTransparencyStale
            ),
            (Self.logsJSON(Array(google.prefix(3))), .certificateTransparencySingleOperator),
            (Self.logsJSON(Array(google.prefix(2)) + [logs.first { $0.operatorName == "DigiCert" }!]), nil),
        ]
        for (list, rule) in cases {
            let text = Self.policy(
                hosts: #"{"a.example.com":{"evaluator":"default","certificateTransparency":"enforce"}}"#,
                logs: list
            )
            let policy = try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil)
            let found = PolicyLinter().lint(policy).map(\.rule).filter { $0.code >= "BWP015" }
            #expect(found == (rule.map { [$0] } ?? []), "\(list): \(found)")
        }
    }

    @Test("a trust manager built from the policy enforces CT on a real chain, with the policy's log list")
    func trustManagerFromThePolicyEnforces() async throws {
        for testCase in CertificateTransparencyTests.online.prefix(6) {
            let check = CertificateTransparencyPolicy.chrome.check(
                testCase.leaf,
                issuer: try CertificateTransparencyTests.issuer(of: testCase),
                logs: CertificateTransparencyTests.logs,
                at: testCase.time
            )
            let roots = try testCase.roots.map { try $0.serializeAsPEM().pemString + "\n" }.joined()
            let hosts =
                #"{"\#(testCase.host)":{"evaluator":"default","roots":{"system":false,"certificates":[{"pem":"\#(roots.replacingOccurrences(of: "\n", with: "\\n"))"}]},"certificateTransparency":"enforce"}}"#
            let text = Self.policy(hosts: hosts, logs: Self.logsJSON(CertificateTransparencyTests.logs.logs))
            let manager = try ServerTrustManager(
                policy: try PolicyFile(jsonBytes: Array(text.utf8), baseDirectory: nil),
                revocationFetcher: nil
            )
            let decision = await manager.evaluate(
                [testCase.leaf] + testCase.intermediates,
                forHost: testCase.host,
                at: testCase.time
            )
            #expect(decision.isTrusted == check.isCompliant, "\(testCase.id): \(String(describing: decision.refusal))")
        }
    }
}

extension CertificateTransparencyTests {
    /// The table of the 14 real certificates in the article CertificateTransparency.md: SCTs, verified, the logs the
    /// list does not hold, and the verdict under Chrome's rule (judged a day after x509-limbo's validation time). The
    /// test fails if the article differs.
    @Test("the article's table of the real certificates is the one this run computes")
    func readmeTableOfRealCertificates() throws {
        var lines = [
            "| Certificate | SCTs | verified | from logs the list does not hold | Chrome's rule |",
            "|---|---|---|---|---|",
        ]
        for testCase in Self.online {
            let check = try Self.check(testCase)
            let verified = check.entries.filter { $0.verdict == .verified }.count
            let unknown = check.entries.filter { $0.verdict == .unknownLog }
                .map { "`" + String($0.sct.logIDBase64.prefix(8)) + "…`" }
            let verdict =
                check.isCompliant
                ? "met: \(check.counted) SCTs, \(check.operators.count) operators (\(check.required) needed)"
                : "not met: \(check.counted) counted, \(check.operators.count) operator\(check.operators.count == 1 ? "" : "s") (\(check.required) SCTs from 2 operators needed)"
            let name = testCase.id.replacingOccurrences(of: "online::", with: "")
            lines.append(
                "| \(name) | \(check.entries.count) | \(verified) | \(unknown.isEmpty ? "–" : unknown.joined(separator: ", ")) | \(verdict) |"
            )
        }
        let table = lines.joined(separator: "\n") + "\n"
        let article = "Sources/BulwarkPolicy/BulwarkPolicy.docc/CertificateTransparency.md"
        let readme = try String(contentsOf: PolicyExamples.root.appending(path: article), encoding: .utf8)
        let committed = ReadmeBlock.committed("ct-online", in: readme)
        #expect(committed == table, "the article's table differs from this run's:\n\(table)")
    }
}
