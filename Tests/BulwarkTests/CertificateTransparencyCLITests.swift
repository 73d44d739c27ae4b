import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

/// `bulwark fetch --ct` and `bulwark inspect` against `openssl s_server` presenting a certificate whose SCTs two test
/// logs signed (issue 40). These tests spawn programs, so they belong to `CLITests`.
extension CLITests {
    /// A chain for `host`, valid for `lifetime`, whose leaf carries an SCT from each of two test logs (two operators),
    /// issued ten minutes ago.
    static func chainWithSCTs(
        host: String,
        lifetime: TimeInterval
    ) throws
        -> (chain: TestChain, logs: [TestTransparencyLog], issued: Date)
    {
        let root = try CertificateFactory.makeRoot()
        let intermediate = try CertificateFactory.issueIntermediate(from: root)
        let logs = [
            TestTransparencyLog(operatorName: "Operator A", name: "Test Log A"),
            TestTransparencyLog(operatorName: "Operator B", name: "Test Log B"),
        ]
        let issued = Date() - 600
        let leaf = try TestTransparencyLog.issue(
            TestTransparencyLog.leafBlueprint(host: host, lifetime: lifetime),
            issuer: intermediate,
            logs: logs,
            at: issued
        )
        let chain = TestChain(
            root: root,
            intermediate: intermediate,
            leaf: leaf,
            presentedChain: [leaf.certificate, intermediate.certificate]
        )
        return (chain, logs, issued)
    }

    @Test func certificateTransparencyThroughFetchAndInspect() async throws {
        let host = "ct.bulwark.test"
        let (chain, logs, issued) = try Self.chainWithSCTs(host: host, lifetime: 30 * 86_400)
        let (root, first, second) = (chain.root, logs[0], logs[1])
        let server = try await OpenSSLServer.start(chain: chain)
        defer { server.stop() }
        let rootFile = try CLI.write(root.certificatePEM, name: "root.pem")
        let bothLogs = try CLI.write(TestTransparencyLog.listJSON([first, second]), name: "logs.json")
        let oneLog = try CLI.write(TestTransparencyLog.listJSON([first]), name: "one-log.json")
        defer { for path in [rootFile, bothLogs, oneLog] { try? FileManager.default.removeItem(atPath: path) } }
        let url = "https://\(host):\(server.port)/"
        let common = ["--ca", rootFile, "--resolve", "\(host):\(server.port):127.0.0.1"]

        let met = try await CLI.run(["fetch", url, "--ct", "enforce", "--ct-logs", bothLogs] + common)
        #expect(met.status == 0, "\(met.stderr)")

        let notMet = try await CLI.run(["fetch", url, "--ct", "enforce", "--ct-logs", oneLog] + common)
        #expect(notMet.status == 5, "\(notMet.stderr)")
        #expect(notMet.stderr.contains("does not meet the Certificate Transparency policy"), "\(notMet.stderr)")
        #expect(notMet.stderr.contains("Test Log A (Operator A)"), "\(notMet.stderr)")
        #expect(notMet.stderr.contains("unknown log "), "\(notMet.stderr)")
        #expect(notMet.stderr.contains("the policy needs 2 from 2 distinct operators"), "\(notMet.stderr)")

        let reported = try await CLI.run(["fetch", url, "--ct", "report", "--ct-logs", oneLog] + common)
        #expect(reported.status == 0, "\(reported.stderr)")

        let noList = try await CLI.run(["fetch", url, "--ct", "enforce"] + common)
        #expect(noList.status == 64, "\(noList.stderr)")
        #expect(noList.stderr.contains("--ct enforce needs --ct-logs FILE"), "\(noList.stderr)")

        // policy check: the rule against the policy's list, for a host that only reports it.
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-ct-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try root.certificatePEM.write(to: directory.appending(path: "root.pem"), atomically: true, encoding: .utf8)
        for (name, logs) in [("one.json", [first]), ("both.json", [first, second])] {
            let entries = logs.map { log in
                #"{"key":"\#(Data(log.key.publicKey.derRepresentation).base64EncodedString())","operator":"\#(log.operatorName)","description":"\#(log.name)"}"#
            }
            let policy =
                #"{"format":"bulwark-policy/1","hosts":{"\#(host)":{"evaluator":"default","certificateTransparency":"report","#
                + #""roots":{"system":false,"certificates":[{"file":"root.pem"}]}}},"#
                + #""certificateTransparency":{"expires":"2099-01-01","logs":[\#(entries.joined(separator: ","))]}}"#
            try policy.write(to: directory.appending(path: name), atomically: true, encoding: .utf8)
        }
        let resolve = ["--resolve", "\(host):\(server.port):127.0.0.1"]
        let failing = try await CLI.run(["policy", "check", directory.appending(path: "one.json").path] + resolve)
        #expect(failing.status == 1, "\(failing.stdout)\(failing.stderr)")
        #expect(failing.stdout.contains("  WARNING: Certificate Transparency: not met: 1 SCT from 1 operator counted"))
        #expect(failing.stdout.contains(", 1 failing the Certificate Transparency rule\n"), "\(failing.stdout)")
        // With --policy, the policy's list decides: a --ct-logs beside it is refused, not silently ignored.
        let both = try await CLI.run(
            ["fetch", url, "--policy", directory.appending(path: "one.json").path, "--ct-logs", bothLogs] + resolve
        )
        #expect(both.status == 64, "\(both.stderr)")
        #expect(both.stderr.contains("--ct and --ct-logs do not apply with --policy"), "\(both.stderr)")
        let passing = try await CLI.run(["policy", "check", directory.appending(path: "both.json").path] + resolve)
        #expect(passing.status == 0, "\(passing.stdout)\(passing.stderr)")
        #expect(passing.stdout.contains("  Certificate Transparency: met (2 SCTs, 2 operators)\n"), "\(passing.stdout)")

        let inspected = try await CLI.run(["inspect", "\(host):\(server.port)", "--ct-logs", oneLog] + common)
        #expect(inspected.status == 0, "\(inspected.stderr)")
        // The Certificate Transparency block, line by line: both SCTs (issued at `issued`, in whole milliseconds).
        let when = Date(timeIntervalSince1970: (issued.timeIntervalSince1970 * 1_000).rounded(.down) / 1_000)
        let secondID = Data(SHA256.hash(data: Array(second.key.publicKey.derRepresentation))).base64EncodedString()
        let lines = inspected.stdout.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex(of: "Certificate Transparency (2 SCTs):"), "\(inspected.stdout)")
        let stamp = when.formatted(.iso8601)
        let verifiedLine = "  Test Log A (Operator A) at \(stamp): verified"
        let unknown = "  unknown log \(secondID) at \(stamp): unknown log"
        let found = "Test Log A (Operator A) at \(stamp): verified; unknown log \(secondID) at \(stamp): unknown log"
        let policyLine =
            "  policy: not met: 1 SCT from 1 operator counted, and the policy needs 2 from 2 distinct operators "
            + "(SCTs found: \(found)) (advisory: this connection did not check Certificate Transparency)"
        let block: [String] = Array(lines[(start + 1)...].prefix(3))
        #expect(block == [verifiedLine, unknown, policyLine], "\(inspected.stdout)")
    }

    @Test func certificateTransparencyAgainstNginx() async throws {
        let (chain, logs, _) = try Self.chainWithSCTs(host: "localhost", lifetime: 200 * 86_400)
        let (root, first, second) = (chain.root, logs[0], logs[1])
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let rootFile = try CLI.write(root.certificatePEM, name: "root.pem")
        let bothLogs = try CLI.write(TestTransparencyLog.listJSON([first, second]), name: "logs.json")
        defer { for path in [rootFile, bothLogs] { try? FileManager.default.removeItem(atPath: path) } }
        let url = "https://localhost:\(nginx.port)/hello"
        // Valid for 200 days: the rule wants 3 SCTs, and the leaf carries 2.
        let enforced = try await CLI.run(["fetch", url, "--ca", rootFile, "--ct", "enforce", "--ct-logs", bothLogs])
        #expect(enforced.status == 5, "\(enforced.stderr)")
        #expect(enforced.stderr.contains("the policy needs 3 from 2 distinct operators"), "\(enforced.stderr)")
        let reported = try await CLI.run(["fetch", url, "--ca", rootFile, "--ct", "report", "--ct-logs", bothLogs])
        #expect(reported.status == 0, "\(reported.stderr)")
        #expect(reported.stdout == "hello from nginx\n")
    }
}
