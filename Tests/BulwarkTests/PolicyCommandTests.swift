import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing

/// `bulwark policy lint|keygen|sign|verify` and `--policy FILE` on `fetch` and `inspect`, run as the built executable.
@Suite("The bulwark policy commands", .tags(.externalPeers))
struct PolicyCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let example = root.appending(path: "examples/bulwark-policy.json").path
    static let pinA = "sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg="
    static let pinB = "sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U="

    static func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-policy-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func theReadmeExampleLintsClean() async throws {
        let result = try await CLI.run(["policy", "lint", Self.example, "--date", "2026-11-24"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout == "\(Self.example): 0 errors, 0 warnings, 0 notes\n")
    }

    @Test func lintExitStatusFollowsSeverityInEveryFormat() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let warning = directory.appending(path: "warning.json").path
        try """
        {
          "format": "bulwark-policy/1",
          "hosts": {
            "a.example.com": {
              "evaluator": "publicKeys",
              "pins": ["\(Self.pinA)", "\(Self.pinB)"],
              "reportOnly": true,
              "revocation": { "mode": "soft" }
            }
          }
        }
        """.write(toFile: warning, atomically: true, encoding: .utf8)
        let error = directory.appending(path: "error.json").path
        try #"{"format":"bulwark-policy/1","hosts":{"**.com":{"evaluator":"default"}}}"#
            .write(toFile: error, atomically: true, encoding: .utf8)
        let invalid = directory.appending(path: "invalid.json").path
        try #"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default","pins":[]}}}"#
            .write(toFile: invalid, atomically: true, encoding: .utf8)

        let text = try await CLI.run(["policy", "lint", warning])
        #expect(text.status == 1)
        #expect(
            text.stdout.hasPrefix(
                "\(warning):7: warning BWP009 report-only /hosts/a.example.com/reportOnly: a.example.com: pin "
                    + "mismatches are only reported\n"
            ),
            "\(text.stdout)"
        )
        let json = try await CLI.run(["policy", "lint", error, "--format", "json"])
        #expect(json.status == 2)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let findings = try #require(object["findings"] as? [[String: Any]])
        #expect(findings.first?["code"] as? String == "BWP010")
        #expect(findings.first?["pointer"] as? String == "/hosts/**.com")
        #expect(object["errors"] as? Int == 1)
        let sarif = try await CLI.run(["policy", "lint", invalid, "--format", "sarif"])
        #expect(sarif.status == 3)
        let log = try #require(try JSONSerialization.jsonObject(with: Data(sarif.stdout.utf8)) as? [String: Any])
        #expect(log["version"] as? String == "2.1.0")
        // With the certificates the host serves, pins on two leaf keys are recognized as such.
        let first = try TestChain.make(host: "a.example.com")
        let second = try TestChain.make(host: "a.example.com")
        let chains = directory.appending(path: "chains.pem").path
        try (first.leaf.certificatePEM + second.leaf.certificatePEM)
            .write(toFile: chains, atomically: true, encoding: .utf8)
        let leafPins = [first, second].map { Pin.publicKey(of: $0.leaf.certificate).description }
        let leaves = directory.appending(path: "leaves.json").path
        try """
        {"format": "bulwark-policy/1", "hosts": {"a.example.com": {"evaluator": "publicKeys",
          "pins": ["\(leafPins[0])", "\(leafPins[1])"], "revocation": {"mode": "soft"}}}}
        """.write(toFile: leaves, atomically: true, encoding: .utf8)
        let withoutChains = try await CLI.run(["policy", "lint", leaves])
        #expect(withoutChains.status == 0, "\(withoutChains.stdout)")
        let withChains = try await CLI.run(["policy", "lint", leaves, "--certificates", chains])
        #expect(withChains.status == 1)
        #expect(withChains.stdout.contains("warning BWP002 leaf-pins-only /hosts/a.example.com/pins"))
        let missing = try await CLI.run(["policy", "lint", directory.appending(path: "absent.json").path])
        #expect(missing.status == 3)
        #expect(missing.stdout.contains("BWP000 invalid-policy"))
    }

    @Test func keygenSignVerify() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = directory.appending(path: "a").path
        let b = directory.appending(path: "b").path
        for name in [a, b] {
            let made = try await CLI.run(["policy", "keygen", "--out", name])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: a + ".key")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let publicLine = try String(contentsOfFile: a + ".pub", encoding: .utf8)
        #expect(publicLine.hasPrefix("bulwark-policy-key/1 ed25519 "))
        #expect(publicLine.filter { $0 == "\n" }.count == 1 && publicLine.hasSuffix(" a\n"))
        let again = try await CLI.run(["policy", "keygen", "--out", a])
        #expect(again.status != 0, "an existing key is never overwritten")
        let privateText = try String(contentsOfFile: a + ".key", encoding: .utf8)
        let secret = String(privateText.split(separator: " ").last ?? "").trimmingCharacters(in: .newlines)
        #expect(secret.count == 44)

        let bundle = directory.appending(path: "policy.bundle").path
        let signed = try await CLI.run([
            "policy", "sign", "--key", a + ".key", "--version", "7", "--expires", "2099-12-31", Self.example,
            "-o", bundle,
        ])
        #expect(signed.status == 0, "\(signed.stderr)")
        let trusted = directory.appending(path: "trusted").path
        try (publicLine + (try String(contentsOfFile: b + ".pub", encoding: .utf8)))
            .write(toFile: trusted, atomically: true, encoding: .utf8)
        // Two keys in the file, one signed: --threshold 1 (the default is every key of the file).
        let verified = try await CLI.run(["policy", "verify", bundle, "--trusted-keys", trusted, "--threshold", "1"])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.hasPrefix("verified: version 7, expires 2099-12-31\n"))
        let twoNeeded = try await CLI.run(["policy", "verify", bundle, "--trusted-keys", trusted, "--threshold", "2"])
        #expect(twoNeeded.status == 1)
        #expect(twoNeeded.stdout == "refused: below_threshold\n")
        let onlyB = directory.appending(path: "only-b").path
        try FileManager.default.copyItem(atPath: b + ".pub", toPath: onlyB)
        let unknown = try await CLI.run(["policy", "verify", bundle, "--trusted-keys", onlyB])
        #expect(unknown.stdout == "refused: unknown_key\n")
        let rollback = try await CLI.run([
            "policy", "verify", bundle, "--trusted-keys", trusted, "--threshold", "1", "--highest-version", "8",
        ])
        #expect(rollback.stdout == "refused: rollback\n")
        for result in [signed, verified, twoNeeded, unknown, rollback] {
            #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret))
        }
        let huge = directory.appending(path: "huge.bundle").path
        var padded = try #require(FileManager.default.contents(atPath: bundle))
        padded.append(Data(repeating: 0x20, count: 10 << 20))
        try padded.write(to: URL(fileURLWithPath: huge))
        let tooLarge = try await CLI.run(["policy", "verify", huge, "--trusted-keys", trusted, "--threshold", "1"])
        #expect(tooLarge.stdout == "refused: too_large\n")
        let invalidPolicy = directory.appending(path: "invalid.json").path
        try #"{"format":"bulwark-policy/1"}"#.write(toFile: invalidPolicy, atomically: true, encoding: .utf8)
        let refusedSigning = try await CLI.run([
            "policy", "sign", "--key", a + ".key", "--version", "8", "--expires", "2099-12-31", invalidPolicy,
            "-o", directory.appending(path: "never.bundle").path,
        ])
        #expect(refusedSigning.status == 3)
        #expect(refusedSigning.stderr.contains("/hosts"))
        let written = directory.appending(path: "out.json").path
        let extracted = try await CLI.run([
            "policy", "verify", bundle, "--trusted-keys", trusted, "--threshold", "1", "--write-policy", written,
        ])
        #expect(extracted.status == 0)
        #expect(FileManager.default.contents(atPath: written) == FileManager.default.contents(atPath: Self.example))
    }

    @Test func fetchAndInspectTakeAPolicyFile() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain)
        defer { Task { try? await server.shutdown() } }
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try chain.root.certificatePEM.write(
            to: directory.appending(path: "root.pem"),
            atomically: true,
            encoding: .utf8
        )
        let intermediate = Pin.publicKey(of: try #require(chain.intermediate).certificate).description
        func policy(_ pins: [String]) throws -> String {
            let path = directory.appending(path: "policy-\(UUID()).json").path
            try """
            {
              "format": "bulwark-policy/1",
              "hosts": {
                "\(Harness.host)": {
                  "evaluator": "publicKeys",
                  "pins": [\(pins.map { "\"\($0)\"" }.joined(separator: ", "))],
                  "roots": { "system": false, "certificates": [{ "file": "root.pem" }] }
                }
              }
            }
            """.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let resolve = "\(Harness.host):\(server.port):127.0.0.1"
        let good = try policy([intermediate, Self.pinA])
        let fetched = try await CLI.run([
            "fetch", Harness.url(server, "/hello"), "--policy", good, "--resolve", resolve,
        ])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stdout == "hello")
        let inspected = try await CLI.run([
            "inspect", "\(Harness.host):\(server.port)", "--policy", good, "--resolve", resolve,
        ])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(inspected.stdout.contains("Verdict: trusted"))

        let wrong = try policy([Self.pinA, Self.pinB])
        let refused = try await CLI.run([
            "fetch", Harness.url(server, "/hello"), "--policy", wrong, "--resolve", resolve,
        ])
        #expect(refused.status == 5)
        #expect(refused.stderr.contains("Certificate pinning failure!"))

        let both = try await CLI.run(["fetch", Harness.url(server, "/hello"), "--policy", good, "--pin", Self.pinA])
        #expect(both.status != 0)
        #expect(both.stderr.contains("--policy replaces --ca, --cacert, --pin"))

        let broken = directory.appending(path: "broken.json").path
        try #"{"format":"bulwark-policy/1","hosts":{"x":{"evaluator":"publicKeys","pins":["sha256/x"]}}}"#
            .write(toFile: broken, atomically: true, encoding: .utf8)
        let invalid = try await CLI.run(["fetch", Harness.url(server, "/hello"), "--policy", broken])
        #expect(invalid.status == 64)
        #expect(invalid.stderr.contains("policy line 1, /hosts/x/pins/0: invalid pin"), "\(invalid.stderr)")
    }

    @Test func checkPredictsLockoutsAndExpiringPinSets() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let names = ["pass.bulwark.test", "locked.bulwark.test", "expiring.bulwark.test"]
        var servers: [TestHTTPSServer] = []
        var chains: [TestChain] = []
        for name in names {
            let chain = try TestChain.make(host: name)
            chains.append(chain)
            servers.append(try await Harness.server(chain))
        }
        defer { for server in servers { Task { try? await server.shutdown() } } }
        var hosts: [String] = []
        for (index, name) in names.enumerated() {
            let chain = chains[index]
            let file = "root-\(index).pem"
            try chain.root.certificatePEM.write(to: directory.appending(path: file), atomically: true, encoding: .utf8)
            let intermediate = Pin.publicKey(of: try #require(chain.intermediate).certificate).description
            // The locked host's pins name keys its chain does not carry: its certificates were rotated.
            let pins = index == 1 ? [Self.pinA, Self.pinB] : [intermediate, Self.pinA]
            let expires = index == 2 ? #", "expires": "\#(Self.day(in: 10))""# : ""
            hosts.append(
                #""\#(name)": { "evaluator": "publicKeys", "pins": ["\#(pins[0])", "\#(pins[1])"]\#(expires), "#
                    + #""roots": { "system": false, "certificates": [{ "file": "\#(file)" }] } }"#
            )
        }
        let policy = directory.appending(path: "policy.json").path
        let text =
            #"{"format": "bulwark-policy/1", "hosts": {"# + hosts.joined(separator: ", ")
            + #", "**.wild.bulwark.test": {"evaluator": "default"}}}"#
        try text.write(toFile: policy, atomically: true, encoding: .utf8)
        var arguments = ["policy", "check", policy]
        for (index, name) in names.enumerated() {
            arguments += ["--resolve", "\(name):\(servers[index].port):127.0.0.1"]
        }
        let result = try await CLI.run(arguments)
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        let output = result.stdout
        let intermediate = Pin.publicKey(of: try #require(chains[0].intermediate).certificate).description
        #expect(
            output.contains("pass.bulwark.test:\(servers[0].port)\n  trusted: today's chain satisfies the policy\n")
        )
        #expect(output.contains("  pin matched: \(intermediate) ("), "\(output)")
        #expect(
            output.contains("locked.bulwark.test:\(servers[1].port)\n  LOCKED OUT: the policy refuses today's chain\n")
        )
        #expect(
            output.contains("expiring.bulwark.test:\(servers[2].port)\n  trusted: today's chain satisfies the policy\n")
        )
        #expect(output.contains("  WARNING: the pin set expires on \(Self.day(in: 10)), in 10 days\n"), "\(output)")
        #expect(
            output.hasSuffix(
                "3 hosts checked: 2 trusted, 1 would be locked out or unreachable, 1 with a pin set expiring within "
                    + "30 days; 1 wildcard pattern not checked\n"
            ),
            "\(output)"
        )
    }

    /// `YYYY-MM-DD`, `days` days from today (UTC).
    static func day(in days: Int) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let start = calendar.startOfDay(for: Date())
        let date = calendar.date(byAdding: .day, value: days, to: start)!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }
}
