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
    @Test func certificateTransparencyThroughFetchAndInspect() async throws {
        let host = "ct.bulwark.test"
        let root = try CertificateFactory.makeRoot()
        let intermediate = try CertificateFactory.issueIntermediate(from: root)
        let blueprint = TestTransparencyLog.leafBlueprint(host: host, lifetime: 30 * 86_400)
        let first = TestTransparencyLog(operatorName: "Operator A", name: "Test Log A")
        let second = TestTransparencyLog(operatorName: "Operator B", name: "Test Log B")
        let leaf = try TestTransparencyLog.issue(
            blueprint,
            issuer: intermediate,
            logs: [first, second],
            at: Date() - 600
        )
        let chain = TestChain(
            root: root,
            intermediate: intermediate,
            leaf: leaf,
            presentedChain: [leaf.certificate, intermediate.certificate]
        )
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

        let inspected = try await CLI.run(["inspect", "\(host):\(server.port)", "--ct-logs", oneLog] + common)
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(inspected.stdout.contains("Certificate Transparency (2 SCTs):"), "\(inspected.stdout)")
        #expect(inspected.stdout.contains("  Test Log A (Operator A) at "), "\(inspected.stdout)")
        #expect(inspected.stdout.contains(": verified"), "\(inspected.stdout)")
        #expect(inspected.stdout.contains("unknown log"), "\(inspected.stdout)")
        #expect(inspected.stdout.contains("  policy: not met: "), "\(inspected.stdout)")
    }
}
