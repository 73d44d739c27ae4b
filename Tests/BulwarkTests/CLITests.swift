import Bulwark
import BulwarkAudit
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing

/// Runs the built `bulwark` executable (from this package's .build) and pins its output.
enum CLI {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The debug build's `bulwark`, or the binary `BULWARK_CLI_BINARY` names (to run these tests against the
    /// installed build, `scripts/build-cli`).
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["BULWARK_CLI_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appending(path: ".build/debug/bulwark")
    }

    static func run(_ arguments: [String]) async throws -> Result {
        let result = try await ProcessRunner.run(Self.binary, arguments, timeout: .seconds(300))
        return Result(status: result.status, stdout: result.output, stderr: result.stderr)
    }

    static func write(_ text: String, name: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-\(UUID())-\(name)")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }
}

@Suite("The bulwark command", .tags(.externalPeers))
struct CLITests {
    @Test func pinPrintsEveryCertificateWithOpenSSLsValues() async throws {
        let rsa = try CertificateFactory.issueLeaf(
            from: nil,
            commonName: "rsa.bulwark.test",
            dnsNames: ["rsa.bulwark.test"],
            key: .rsa2048
        )
        let chain = try TestChain.make(host: Harness.host)
        let file = try CLI.write(rsa.certificatePEM + chain.leaf.certificatePEM, name: "bundle.pem")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try await CLI.run(["pin", file])
        #expect(result.status == 0, "\(result.stderr)")
        var expected: [String] = []
        for (index, certificate) in [rsa.certificate, chain.leaf.certificate].enumerated() {
            let summary = CertificateSummary(certificate)
            expected += [
                "\(file) [\(index + 1)/2]",
                "  subject:     \(summary.subject)",
                "  issuer:      \(summary.issuer)",
                "  not before:  \(summary.notValidBefore.formatted(.iso8601))",
                "  not after:   \(summary.notValidAfter.formatted(.iso8601))",
                "  names:       \(summary.subjectAlternativeNames.joined(separator: ", "))",
                "  key pin:     \(summary.publicKeyPin)",
                "  sha256:      \(summary.certificatePin.fingerprint)",
            ]
        }
        #expect(result.stdout == expected.joined(separator: "\n") + "\n")
    }

    @Test func pinReportsUnreadableAndMalformedFilesByName() async throws {
        let garbage = try CLI.write("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", name: "bad.pem")
        defer { try? FileManager.default.removeItem(atPath: garbage) }
        let result = try await CLI.run(["pin", garbage, "/nonexistent/cert.pem"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(garbage): malformed PEM certificate"))
        #expect(result.stderr.contains("/nonexistent/cert.pem: cannot read file"))
    }

    @Test func fetchSendsABearerTokenFromAFileInScopeOnly() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        let token = try CLI.write("cli-secret-token\n", name: "token")
        defer {
            try? FileManager.default.removeItem(atPath: root)
            try? FileManager.default.removeItem(atPath: token)
        }
        let resolve = "\(Harness.host):\(server.port):127.0.0.1"
        let base = ["--ca", root, "--resolve", resolve, "--bearer-token-file", token]

        let inScope = try await CLI.run(["fetch", Harness.url(server, "/headers")] + base)
        #expect(inScope.status == 0, "\(inScope.stderr)")
        #expect(try RedirectHarness.headers(inScope.stdout)["authorization"] == "Bearer cli-secret-token")

        let scoped = base + ["--credential-scope", Harness.url(server, "/api/")]
        let outOfScope = try await CLI.run(["fetch", Harness.url(server, "/headers")] + scoped)
        #expect(outOfScope.status == 0, "\(outOfScope.stderr)")
        #expect(try RedirectHarness.headers(outOfScope.stdout)["authorization"] == nil)

        let missing = try await CLI.run([
            "fetch", Harness.url(server, "/headers"), "--bearer-token-file", "/nonexistent/token",
        ])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("/nonexistent/token"))
        #expect(server.requests.count == 2, "the missing file is reported before any request")
        for result in [inScope, outOfScope] {
            #expect(!result.stderr.contains("cli-secret-token"))
        }
    }

    @Test func fetchUnderPolicyAndItsExitCodes() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let url = Harness.url(server, "/hello")
        let resolve = "\(Harness.host):\(server.port):127.0.0.1"

        let ok = try await CLI.run(["fetch", url, "--ca", root, "--resolve", resolve])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout == "hello")
        #expect(ok.stderr.contains("200 OK"))
        // The status line names the protocol by its ALPN identifier, as it did when the version was a string.
        #expect(ok.stderr.contains("h2 200 OK\n"), "\(ok.stderr)")
        #expect(ok.stderr.contains("trusted; verified chain:"))

        let intermediatePin = Pin.publicKey(of: chain.intermediate!.certificate).description
        let pinned = try await CLI.run([
            "fetch", url, "--ca", root, "--resolve", resolve, "--pin", intermediatePin, "--allow-single-pin",
        ])
        #expect(pinned.status == 0, "\(pinned.stderr)")

        let wrongPin = "sha256/" + Data(repeating: 3, count: 32).base64EncodedString()
        let wrongPin2 = "sha256/" + Data(repeating: 4, count: 32).base64EncodedString()
        let refused = try await CLI.run([
            "fetch", url, "--ca", root, "--resolve", resolve, "--pin", wrongPin, "--pin", wrongPin2,
        ])
        #expect(refused.status == 5)
        #expect(refused.stderr.contains("Certificate pinning failure!"))
        #expect(refused.stderr.contains(wrongPin))

        let single = try await CLI.run(["fetch", url, "--ca", root, "--resolve", resolve, "--pin", wrongPin])
        #expect(single.status == 64)
        #expect(single.stderr.contains("backup pin"))

        let notAllowed = try await CLI.run([
            "fetch", url, "--ca", root, "--resolve", resolve, "--allow-host", "*.elsewhere.test",
        ])
        #expect(notAllowed.status == 5)
        #expect(notAllowed.stderr.contains("host_not_allowed (\(Harness.host))"))

        let untrusted = try await CLI.run(["fetch", url, "--resolve", resolve])
        #expect(untrusted.status == 5)

        let closedPort = try await CLI.run([
            "fetch", "https://\(Harness.host):1/", "--resolve", "\(Harness.host):1:127.0.0.1",
        ])
        #expect(closedPort.status == 3)

        let output = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-\(UUID())-body").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let download = try await CLI.run([
            "fetch", Harness.url(server, "/bytes/2000000"), "--ca", root, "--resolve", resolve, "-o", output,
        ])
        #expect(download.status == 0, "\(download.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == Data(TestHTTPSServer.bytesBody(count: 2_000_000)))
        #expect(download.stderr.contains("1.9 MiB / 1.9 MiB"))
        #expect(server.requests.count == 3, "only the three trusted fetches may reach the server")
    }

    @Test func logVerifyReportsTheFirstBrokenLine() async throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-\(UUID()).jsonl").path
        let keyPath = try CLI.write("a key of at least sixteen bytes", name: "key")
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: keyPath)
        }
        let log = try TamperEvidentLog(path: path, key: try TamperEvidentLog.Key(contentsOfFile: keyPath))
        for index in 1...5 {
            try log.append(SecurityEvent(kind: .trustEvaluated, host: "h\(index).test", message: "event \(index)"))
        }
        try log.close()
        let intact = try await CLI.run(["log", "verify", path, "--key-file", keyPath])
        #expect(intact.status == 0)
        let head = try TamperEvidentLogVerifier.verify(path: path).head
        #expect(
            intact.stdout == """
                \(path): 5 records and 1 checkpoint verified (hash chain and HMAC)
                head: --expect-count 6 --expect-head \(head)
                end: a close checkpoint (line 6)

                """
        )
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[2] = lines[2].replacingOccurrences(of: "event 3", with: "event 9")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let edited = try await CLI.run(["log", "verify", path])
        #expect(edited.status == 1)
        #expect(edited.stdout.contains("line 3: edited_record"))
        let wrongKey = try CLI.write("another key, sixteen bytes or more", name: "wrong")
        defer { try? FileManager.default.removeItem(atPath: wrongKey) }
        let refused = try await CLI.run(["log", "verify", path, "--key-file", wrongKey])
        #expect(refused.status == 1)
        #expect(refused.stdout.contains("line 1: bad_hmac"))
    }

    @Test func inspectShowsChainsAndVerdictWithoutSendingARequest() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        defer { Task { try? await server.shutdown() } }
        let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let target = "\(Harness.host):\(server.port)"
        let resolve = "\(target):127.0.0.1"

        let trusted = try await CLI.run(["inspect", target, "--ca", root, "--resolve", resolve])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout.contains("Presented chain (2):"))
        #expect(trusted.stdout.contains("Verdict: trusted"))
        #expect(trusted.stdout.contains("Verified chain (3):"))
        #expect(trusted.stdout.contains("key pin:    \(Pin.publicKey(of: chain.intermediate!.certificate))"))

        let refused = try await CLI.run(["inspect", target, "--resolve", resolve])
        #expect(refused.status == 5)
        #expect(refused.stdout.contains("Presented chain (2):"))
        #expect(refused.stdout.contains("Verdict: refused"))
        #expect(server.receivedApplicationBytes == 0)
        #expect(server.requests.isEmpty)
    }
}
