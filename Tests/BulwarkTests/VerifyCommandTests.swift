import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

/// `bulwark verify`: its output pinned for a trusted chain, and its verdicts for an expired, a revoked and a
/// wrong-host chain and for bad input. These tests spawn the `bulwark` binary, so they belong to `CLITests`.
extension CLITests {
    static let verifyHost = "api.bulwark.test"

    /// The chain's leaf, intermediate and root as files, and the arguments that name them.
    struct VerifyFiles {
        var leaf: String
        var intermediate: String
        var root: String
        var paths: [String] { [self.leaf, self.intermediate, self.root] }
        var arguments: [String] { [self.leaf, "--untrusted", self.intermediate, "--roots", self.root] }

        init(_ chain: TestChain) throws {
            self.leaf = try CLI.write(chain.leaf.certificatePEM, name: "leaf.pem")
            self.intermediate = try CLI.write(chain.intermediate!.certificatePEM, name: "intermediate.pem")
            self.root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        }

        func remove() { for path in self.paths { try? FileManager.default.removeItem(atPath: path) } }
    }

    @Test func verifyPrintsTheVerifiedPathWithPins() async throws {
        let chain = try TestChain.make(.valid, host: Self.verifyHost)
        let files = try VerifyFiles(chain)
        defer { files.remove() }
        let result = try await CLI.run(["verify"] + files.arguments + ["--host", Self.verifyHost])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        var expected = ["Verdict: trusted for \(Self.verifyHost)", "Verified path (3):"]
        for (index, certificate) in [chain.leaf, chain.intermediate!, chain.root].map(\.certificate).enumerated() {
            let summary = CertificateSummary(certificate)
            expected += [
                "  [\(index)] \(summary.subject)",
                "      valid:      \(summary.notValidBefore.formatted(.iso8601)) to "
                    + "\(summary.notValidAfter.formatted(.iso8601))",
                "      key pin:    \(summary.publicKeyPin)",
            ]
        }
        #expect(result.stdout.split(separator: "\n").map(String.init) == expected, "\(result.stdout)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")

        let json = try await CLI.run(["verify"] + files.arguments + ["--host", Self.verifyHost, "--json"])
        #expect(json.status == 0)
        let object = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "trusted")
        #expect(
            (object["path"] as? [[String: String]])?.first?["keyPin"] == "\(Pin.publicKey(of: chain.leaf.certificate))"
        )
    }

    @Test func verifyRefusesAnExpiredLeafWithExitStatus5() async throws {
        let files = try VerifyFiles(try TestChain.make(.expiredLeaf, host: Self.verifyHost))
        defer { files.remove() }
        let result = try await CLI.run(["verify"] + files.arguments + ["--host", Self.verifyHost])
        #expect(result.status == 5, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "Verdict: refused for \(Self.verifyHost)", "\(result.stdout)")
        #expect(lines.dropFirst().first?.hasPrefix("  certificate CN=\(Self.verifyHost)") == true, "\(result.stdout)")
        #expect(lines.dropFirst().first?.contains(" expired at ") == true, "\(result.stdout)")
    }

    @Test func verifyRefusesACertificateARevocationListFileRevokes() async throws {
        let chain = try TestChain.make(.valid, host: Self.verifyHost)
        let files = try VerifyFiles(chain)
        defer { files.remove() }
        let now = Date()
        func list(by issuer: TestIdentity, revoking: [Certificate], name: String) throws -> String {
            var builder = CRLBuilder(
                issuer: issuer.certificate.subject,
                thisUpdate: now - 3_600,
                nextUpdate: now + 86_400
            )
            builder.entries = revoking.map { .init($0.serialNumber, revokedAt: now - 600, reason: 1) }
            let url = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-\(UUID())-\(name)")
            try Data(try builder.der(signedBy: issuer)).write(to: url)
            return url.path
        }
        let rootList = try list(by: chain.root, revoking: [], name: "root.crl")
        let revoking = try list(by: chain.intermediate!, revoking: [chain.leaf.certificate], name: "revoking.crl")
        let clean = try list(by: chain.intermediate!, revoking: [], name: "clean.crl")
        defer { for path in [rootList, revoking, clean] { try? FileManager.default.removeItem(atPath: path) } }

        let revoked = try await CLI.run(["verify"] + files.arguments + ["--crl", rootList, "--crl", revoking])
        #expect(revoked.status == 5, "\(revoked.stdout)\(revoked.stderr)")
        #expect(revoked.stdout.hasPrefix("Verdict: refused\n  certificate CN=\(Self.verifyHost)"), "\(revoked.stdout)")
        #expect(revoked.stdout.contains("was revoked at") && revoked.stdout.contains("(reason: key compromise)"))

        let good = try await CLI.run(["verify"] + files.arguments + ["--crl", rootList, "--crl", clean])
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        #expect(
            good.stdout.contains("Revocation (hard, 2 list files read):\n  CN=\(Self.verifyHost)"),
            "\(good.stdout)"
        )
        #expect(good.stdout.contains(": not revoked (according to \(chain.intermediate!.certificate.subject)) [CRL]"))

        // A list under the intermediate's name that its key did not sign is left out, and said to be.
        let forgedURL = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-\(UUID())-forged.crl")
        try Data(
            try CRLBuilder(issuer: chain.intermediate!.certificate.subject, thisUpdate: now, nextUpdate: now + 86_400)
                .der(signedWith: P256.Signing.PrivateKey())
        ).write(to: forgedURL)
        defer { try? FileManager.default.removeItem(at: forgedURL) }
        let forged = try await CLI.run(
            ["verify"] + files.arguments + ["--crl", rootList, "--crl", revoking, "--crl", forgedURL.path]
        )
        #expect(forged.status == 5, "\(forged.stdout)")
        let counted = try await CLI.run(
            ["verify"] + files.arguments + ["--crl", rootList, "--crl", clean, "--crl", forgedURL.path]
        )
        #expect(counted.status == 0, "\(counted.stdout)")
        #expect(
            counted.stdout.contains(
                "Revocation (hard, 3 list files read, 1 signed by no given certificate of its issuer's name):"
            ),
            "\(counted.stdout)"
        )

        // Hard by default when a list is given: the intermediate's status is unknown without the root's list.
        let partial = try await CLI.run(["verify"] + files.arguments + ["--crl", clean])
        #expect(partial.status == 5, "\(partial.stdout)")
        #expect(partial.stdout.contains("could not be established"), "\(partial.stdout)")
        let soft = try await CLI.run(["verify"] + files.arguments + ["--crl", clean, "--revocation", "soft"])
        #expect(soft.status == 0, "\(soft.stdout)")
        #expect(soft.stdout.contains(": unknown: "), "\(soft.stdout)")
    }

    @Test func verifyRefusesAWrongHostUnderTheWebPKIProfileOnly() async throws {
        let chain = try TestChain.make(.wrongHost, host: Self.verifyHost)
        let files = try VerifyFiles(chain)
        defer { files.remove() }
        let result = try await CLI.run(["verify"] + files.arguments + ["--host", Self.verifyHost])
        #expect(result.status == 5, "\(result.stdout)")
        #expect(result.stdout.hasPrefix("Verdict: refused for \(Self.verifyHost)\n"), "\(result.stdout)")
        #expect(result.stdout.contains(Self.verifyHost) && result.stdout.contains("not valid for"), "\(result.stdout)")
        // Without a host, the same chain is trusted: only the name was wrong.
        let unnamed = try await CLI.run(["verify"] + files.arguments)
        #expect(unnamed.status == 0, "\(unnamed.stdout)")
        #expect(unnamed.stdout.hasPrefix("Verdict: trusted (no host name checked)\n"), "\(unnamed.stdout)")
    }

    @Test func verifyNamesTheFileOrOptionOfBadInputWithExitStatus64() async throws {
        let files = try VerifyFiles(try TestChain.make(.valid, host: Self.verifyHost))
        let text = try CLI.write("this is not a certificate\n", name: "notes.txt")
        let empty = try CLI.write("", name: "empty.pem")
        defer {
            files.remove()
            for path in [text, empty] { try? FileManager.default.removeItem(atPath: path) }
        }
        let cases: [([String], [String])] = [
            ([text, "--roots", files.root], ["LEAF", text]),
            ([files.leaf, "--roots", empty], ["--roots", empty, "no certificate found"]),
            ([files.leaf, "--roots", files.root, "--at", "yesterday"], ["--at", "\"yesterday\"", "ISO 8601"]),
            ([files.leaf, "--roots", files.root, "--crl", text], ["--crl", text]),
            ([files.leaf, "--roots", files.root, "--profile", "browser"], ["--profile", "webpki or rfc5280"]),
            ([files.leaf], ["--roots FILE is required"]),
        ]
        for (arguments, words) in cases {
            let result = try await CLI.run(["verify"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stdout)\(result.stderr)")
            for word in words { #expect(result.stderr.contains(word), "\(arguments): \(result.stderr)") }
            #expect(!result.stderr.contains("Error Domain") && !result.stderr.contains("ASN1Error"), "\(result.stderr)")
            #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")
        }
    }
}
