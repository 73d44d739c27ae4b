import Bulwark
import BulwarkPolicy
import BulwarkTestHelpers
import Foundation
import Testing

/// Issue 38 (Hardening II a) on the command line: the forged bundle of the issue (the identity point as a trusted
/// key, and its second encoding counted as a second signer), the threshold's default, what `sign` prints and refuses.
@Suite("The bulwark policy commands under attack", .tags(.externalPeers))
struct PolicyCommandHardeningTests {
    static let identity = "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
    static let identityAgain = "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA="
    static let policy = #"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default"}}}"#

    static func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-policy-attack-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The issue's forged bundle: any payload, "signed" by the identity point (and by its second encoding) with the
    /// signature `AQ` + 84 × `A` + `==`.
    static func forgedBundle() throws -> Data {
        let payload: [String: Any] = [
            "format": "bulwark-policy-bundle-payload/1", "version": 9, "expires": "2099-12-31",
            "policy": Data(Self.policy.utf8).base64EncodedString(),
        ]
        let signed = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let signature = "AQ" + String(repeating: "A", count: 84) + "=="
        let file: [String: Any] = [
            "format": "bulwark-policy-bundle/1", "signed": signed.base64EncodedString(),
            "signatures": [
                ["key": Self.identity, "signature": signature], ["key": Self.identityAgain, "signature": signature],
            ],
        ]
        return try JSONSerialization.data(withJSONObject: file, options: [.sortedKeys])
    }

    @Test func theForgedBundleIsRefusedNamingTheWeakKey() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appending(path: "forged.json").path
        try Self.forgedBundle().write(to: URL(fileURLWithPath: bundle))
        let trusted = directory.appending(path: "t.pub").path
        try
            "bulwark-policy-key/1 ed25519 \(Self.identity) one\nbulwark-policy-key/1 ed25519 \(Self.identityAgain) two\n"
            .write(toFile: trusted, atomically: true, encoding: .utf8)
        let result = try await CLI.run([
            "policy", "verify", bundle, "--trusted-keys", trusted, "--threshold", "2",
        ])
        #expect(result.status == 64, "\(result.stdout)\(result.stderr)")
        #expect(!result.stdout.contains("verified"), "\(result.stdout)")
        #expect(
            result.stderr.contains(
                "line 1: the key \(Self.identity) is a small-order point: a signature that verifies under it can be "
                    + "made without any private key"
            ),
            "\(result.stderr)"
        )
        // Only the second encoding listed: refused as well, as a non-canonical encoding.
        try "bulwark-policy-key/1 ed25519 \(Self.identityAgain)\n".write(
            toFile: trusted,
            atomically: true,
            encoding: .utf8
        )
        let second = try await CLI.run(["policy", "verify", bundle, "--trusted-keys", trusted])
        #expect(second.status == 64, "\(second.stdout)\(second.stderr)")
        #expect(second.stderr.contains(Self.identityAgain), "\(second.stderr)")
    }

    @Test func signCountsDistinctSignersAndVerifyNeedsAllKeysByDefault() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = directory.appending(path: "a").path
        let b = directory.appending(path: "b").path
        for name in [a, b] {
            let made = try await CLI.run(["policy", "keygen", "--out", name])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let policy = directory.appending(path: "policy.json").path
        try Self.policy.write(toFile: policy, atomically: true, encoding: .utf8)
        let bundle = directory.appending(path: "policy.bundle").path
        let signed = try await CLI.run([
            "policy", "sign", "--key", a + ".key", "--key", a + ".key", "--version", "3", "--expires", "2099-12-31",
            "--channel", "production", policy, "-o", bundle,
        ])
        #expect(signed.status == 0, "\(signed.stderr)")
        #expect(
            signed.stdout.hasPrefix(
                "wrote \(bundle): version 3, expires 2099-12-31, channel production, 1 distinct signer\n"
            ),
            "\(signed.stdout)"
        )
        let trusted = directory.appending(path: "trusted").path
        try
            (try String(contentsOfFile: a + ".pub", encoding: .utf8)
            + String(contentsOfFile: b + ".pub", encoding: .utf8))
            .write(toFile: trusted, atomically: true, encoding: .utf8)
        // Two keys in the file and no --threshold: both must have signed.
        let byDefault = try await CLI.run(["policy", "verify", bundle, "--trusted-keys", trusted])
        #expect(byDefault.status == 1, "\(byDefault.stdout)")
        #expect(byDefault.stdout == "refused: below_threshold\n")
        let one = try await CLI.run([
            "policy", "verify", bundle, "--trusted-keys", trusted, "--threshold", "1", "--channel", "production",
        ])
        #expect(one.status == 0, "\(one.stdout)\(one.stderr)")
        #expect(one.stdout.hasPrefix("verified: version 3, expires 2099-12-31, channel production\n"), "\(one.stdout)")
        let otherChannel = try await CLI.run([
            "policy", "verify", bundle, "--trusted-keys", trusted, "--threshold", "1", "--channel", "staging",
        ])
        #expect(otherChannel.stdout == "refused: wrong_channel\n")
    }

    @Test func signValidatesAsClientsDecode() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = directory.appending(path: "a").path
        #expect(try await CLI.run(["policy", "keygen", "--out", a]).status == 0)
        // A relative path resolves next to the file on this machine, but every client decodes a bundle's policy
        // without a directory: refused at signing, naming the pointer.
        let relative = directory.appending(path: "relative.json").path
        try
            #"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default"}},"clientCertificates":{"a.example.com":{"certificate":"client.pem","key":"client.key"}}}"#
            .write(toFile: relative, atomically: true, encoding: .utf8)
        let refused = try await CLI.run([
            "policy", "sign", "--key", a + ".key", "--version", "1", "--expires", "2099-12-31", relative,
            "-o", directory.appending(path: "never.bundle").path,
        ])
        #expect(refused.status == 3, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("/clientCertificates/a.example.com/certificate"), "\(refused.stderr)")
        // A lint error without "insecure": true: every client would refuse it, so it is not signed.
        let expired = directory.appending(path: "expired.json").path
        try #"{"format":"bulwark-policy/1","hosts":{"**.com":{"evaluator":"default"}}}"#
            .write(toFile: expired, atomically: true, encoding: .utf8)
        let lint = try await CLI.run([
            "policy", "sign", "--key", a + ".key", "--version", "1", "--expires", "2099-12-31", expired,
            "-o", directory.appending(path: "never.bundle").path,
        ])
        #expect(lint.status == 3, "\(lint.stdout)\(lint.stderr)")
        #expect(lint.stderr.contains("BWP010"), "\(lint.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.appending(path: "never.bundle").path))
    }
}

extension PolicyCommandHardeningTests {
    /// The review's findings 2 and 9: `sign` signed an insecure policy without a word, and `verify` said "verified"
    /// for a bundle every client with the default configuration refuses.
    @Test func anInsecurePolicyIsSignedAndVerifiedOnlyWhenAskedFor() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = directory.appending(path: "a").path
        #expect(try await CLI.run(["policy", "keygen", "--out", a]).status == 0)
        let insecure = directory.appending(path: "insecure.json").path
        try
            #"{"format":"bulwark-policy/1","insecure":true,"hosts":{"a.example.com":{"evaluator":"default"}},"otherHosts":{"evaluator":"disabled"}}"#
            .write(toFile: insecure, atomically: true, encoding: .utf8)
        let bundle = directory.appending(path: "insecure.bundle").path
        let sign = [
            "policy", "sign", "--key", a + ".key", "--version", "1", "--expires", "2099-12-31", insecure, "-o", bundle,
        ]
        let refused = try await CLI.run(sign)
        #expect(refused.status == 3, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("BWP005"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--allow-insecure"), "\(refused.stderr)")
        let signed = try await CLI.run(sign + ["--allow-insecure"])
        #expect(signed.status == 0, "\(signed.stdout)\(signed.stderr)")
        #expect(signed.stderr.contains("BWP005"), "\(signed.stderr)")
        let trusted = a + ".pub"
        let verify = try await CLI.run(["policy", "verify", bundle, "--trusted-keys", trusted])
        #expect(verify.status == 1, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout == "refused: insecure_policy\n", "\(verify.stdout)")
        let allowed = try await CLI.run(["policy", "verify", bundle, "--trusted-keys", trusted, "--allow-insecure"])
        #expect(allowed.status == 0, "\(allowed.stdout)\(allowed.stderr)")
        #expect(allowed.stdout.contains("insecure"), "\(allowed.stdout)")
    }
}
