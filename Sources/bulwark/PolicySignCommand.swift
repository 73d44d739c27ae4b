import ArgumentParser
import BulwarkPolicy
import Foundation

/// `bulwark policy sign --key NAME.key [--key …] --version N --expires YYYY-MM-DD POLICY -o BUNDLE`.
struct PolicySignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a policy file into a bundle (its exact bytes, a version, an expiry, Ed25519 signatures).",
        discussion: """
            The policy must decode exactly as every client decodes a bundle's policy: without a directory, so \
            every path it names is absolute. A policy with a lint error (bulwark policy lint, severity error) is \
            signed only when it says "insecure": true, since clients refuse it otherwise. Each --key signs once; \
            a client accepts the bundle when as many distinct trusted keys as its threshold signed it. With \
            --new-trusted-keys the bundle also replaces the trusted-key set (key rotation): sign it with the keys \
            trusted today and with every new key (each new key proves it holds its private key).
            """
    )

    @Argument(help: "The policy file.")
    var policy: String

    @Option(name: .customLong("key"), help: "A private key file written by keygen (repeatable).")
    var keyFiles: [String] = []

    @Option(help: "The bundle's version: a client refuses one older than the highest it accepted.")
    var version: UInt64

    @Option(help: ArgumentHelp("The last day the bundle is valid (UTC).", valueName: "YYYY-MM-DD"))
    var expires: String

    @Option(name: [.customShort("o"), .long], help: "The bundle file to write.")
    var output: String

    @Option(help: "A file of public key lines: the trusted-key set this bundle installs (key rotation).")
    var newTrustedKeys: String?

    @Option(help: "How many keys of --new-trusted-keys must sign later bundles.")
    var newThreshold: Int = 1

    @Option(
        help: "The channel (audience) the bundle is for, such as production; updaters configured for another refuse it."
    )
    var channel: String?

    @Flag(
        help: """
            Sign a policy that says "insecure": true (its lint errors are printed). Clients apply such a bundle only \
            when their updater allows insecure policies.
            """
    )
    var allowInsecure = false

    func run() throws {
        guard !self.keyFiles.isEmpty else { throw ValidationError("give at least one --key") }
        guard PolicyFile.parseDay(self.expires) != nil else {
            throw ValidationError("--expires takes YYYY-MM-DD, got \"\(self.expires)\"")
        }
        let bytes = try PolicyFile.readFile(self.policy, maximumSize: PolicyFile.maximumSize, pointer: "")
        let file: PolicyFile
        do {
            // As clients decode a bundle's policy: no base directory.
            file = try PolicyFile(jsonBytes: bytes, baseDirectory: nil)
        } catch {
            printError("bulwark policy sign: \(self.policy): \(error)")
            throw ExitCode(3)
        }
        if file.insecure {
            let errors = PolicyLinter().lint(file).filter { $0.rule.severity == .error }
            for finding in errors { printError("bulwark policy sign: \(self.policy): \(finding)") }
            guard self.allowInsecure else {
                printError(
                    "bulwark policy sign: \(self.policy) says \"insecure\": true, so whoever holds the signing keys "
                        + "can turn validation off with it; sign it only with --allow-insecure; nothing was signed"
                )
                throw ExitCode(3)
            }
            printError(
                "warning: \(self.policy) says \"insecure\": true (signed with --allow-insecure); clients apply it only "
                    + "when their updater allows insecure policies"
            )
        }
        let findings = PolicyLinter().findingsRequiringInsecure(in: file)
        if !findings.isEmpty {
            for finding in findings { printError("bulwark policy sign: \(self.policy): \(finding)") }
            printError(
                "bulwark policy sign: \(self.policy): clients refuse a bundle whose policy has a lint error unless "
                    + "it says \"insecure\": true; nothing was signed"
            )
            throw ExitCode(3)
        }
        var keys: [PolicySigningKey] = []
        for file in self.keyFiles {
            let secret = try SecretBytes(contentsOfFile: file, trimmingTrailingNewlines: false, maximumSize: 4096)
            do {
                keys.append(try PolicySigningKey(keyFile: secret))
            } catch {
                throw ValidationError("--key \(file): \(error)")
            }
        }
        var trustedKeys: PolicyTrustedKeys?
        if let file = self.newTrustedKeys {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ValidationError("--new-trusted-keys: cannot read \(file)")
            }
            trustedKeys = try PolicyTrustedKeys(fileContents: text, threshold: self.newThreshold)
        }
        var bundle = PolicyBundle(policy: bytes, version: self.version, expires: self.expires, trustedKeys: trustedKeys)
        bundle.channel = self.channel
        let signed = try bundle.signed(by: keys)
        guard FileManager.default.createFile(atPath: self.output, contents: Data(signed)) else {
            throw ValidationError("cannot write \(self.output)")
        }
        var signers: [PolicyPublicKey] = []
        for key in keys where !signers.contains(key.publicKey) { signers.append(key.publicKey) }
        let channel = self.channel.map { ", channel \($0)" } ?? ""
        print(
            "wrote \(self.output): version \(self.version), expires \(self.expires)\(channel), \(signers.count) "
                + "distinct signer\(signers.count == 1 ? "" : "s")"
        )
        for key in signers { print("  signed by \(key)") }
        if let trustedKeys {
            let missing = trustedKeys.keys.filter { !signers.contains($0) }
            if !missing.isEmpty {
                printError(
                    "warning: \(missing.count) key\(missing.count == 1 ? "" : "s") of --new-trusted-keys did not sign; "
                        + "clients refuse a rotation until every new key signs it (rotation_not_proven)"
                )
            }
        }
    }
}
