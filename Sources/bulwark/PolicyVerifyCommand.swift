import ArgumentParser
import BulwarkPolicy
import Foundation

/// `bulwark policy verify BUNDLE --trusted-keys FILE [--threshold K]`.
struct PolicyVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a signed policy bundle against trusted keys.",
        discussion: """
            Exit status 0 only when at least --threshold distinct keys of --trusted-keys (all of them unless \
            --threshold is given) signed the bundle, every key a rotation installs signed it too, it has not \
            expired, its version is not older than --highest-version and, with --channel, it names that channel; \
            otherwise 1, with the reason (too_large, malformed, unsupported_format, signature_invalid, \
            unknown_key, below_threshold, rotation_not_proven, wrong_channel, rollback, expired). 64: bad \
            arguments, such as a trusted-key file naming a weak key (a small-order point, with which anyone can \
            sign, or a non-canonical encoding).
            """
    )

    @Argument(help: "The bundle file.")
    var bundle: String

    @Option(help: "A file of public key lines (one per line, as keygen writes them).")
    var trustedKeys: String

    @Option(help: "How many distinct trusted keys must have signed it (by default, every key of --trusted-keys).")
    var threshold: Int?

    @Option(help: "The channel the bundle must name; a bundle for another channel, or none, is refused.")
    var channel: String?

    @Option(help: "The highest version accepted before: an older bundle is refused as a rollback.")
    var highestVersion: UInt64?

    @Option(name: .customLong("write-policy"), help: "Write the verified policy's exact bytes to this file.")
    var policyOutput: String?

    @Flag(
        help: """
            Accept a bundle whose policy says "insecure": true, as an updater that allows insecure policies does; \
            without it such a bundle is refused (insecure_policy), as every updater does by default.
            """
    )
    var allowInsecure = false

    func run() throws {
        guard let text = try? String(contentsOfFile: self.trustedKeys, encoding: .utf8) else {
            throw ValidationError("--trusted-keys: cannot read \(self.trustedKeys)")
        }
        let trusted: PolicyTrustedKeys
        do {
            if let threshold = self.threshold {
                trusted = try PolicyTrustedKeys(fileContents: text, threshold: threshold)
            } else {
                let all = try PolicyTrustedKeys(fileContents: text)
                trusted = try PolicyTrustedKeys(keys: all.keys, threshold: all.keys.count)
            }
        } catch {
            throw ValidationError("--trusted-keys \(self.trustedKeys): \(error)")
        }
        var verifier = PolicyBundleVerifier(trustedKeys: trusted, highestVersion: self.highestVersion)
        verifier.channel = self.channel
        // One byte over the cap is enough to refuse a larger file without reading all of it.
        guard let handle = FileHandle(forReadingAtPath: self.bundle),
            let data = try? handle.read(upToCount: verifier.maximumSize + 1)
        else {
            throw ValidationError("cannot read \(self.bundle)")
        }
        try? handle.close()
        switch verifier.verify(Array(data)) {
        case .success(let verified):
            // What a client does next with the policy: decode it as a bundle's (no directory), then refuse lint errors
            // without "insecure": true, and "insecure": true unless allowed.
            if let refusal = self.policyRefusal(verified.bundle) {
                print("refused: \(refusal.reason)")
                printError("bulwark policy verify: \(refusal)")
                throw ExitCode(1)
            }
            let digest = verified.bundle.policySHA256
            let channel = verified.bundle.channel.map { ", channel \($0)" } ?? ""
            print("verified: version \(verified.bundle.version), expires \(verified.bundle.expires)\(channel)")
            print("policy: \(verified.bundle.policy.count) bytes, sha256 \(digest)")
            for signer in verified.signers { print("signed by \(signer)") }
            if (try? PolicyFile(jsonBytes: verified.bundle.policy, baseDirectory: nil))?.insecure == true {
                print("insecure: the policy says \"insecure\": true (accepted with --allow-insecure)")
            }
            if let keys = verified.bundle.trustedKeys {
                print("rotates the trusted keys to \(keys.keys.count) key(s), threshold \(keys.threshold):")
                for key in keys.keys { print("  \(key.line)") }
            }
            if let output = self.policyOutput {
                guard FileManager.default.createFile(atPath: output, contents: Data(verified.bundle.policy)) else {
                    throw ValidationError("cannot write \(output)")
                }
            }
        case .failure(let refusal):
            print("refused: \(refusal.reason)")
            printError("bulwark policy verify: \(refusal)")
            throw ExitCode(1)
        }
    }

    /// Why a client would refuse the verified bundle's policy, or nil.
    private func policyRefusal(_ bundle: PolicyBundle) -> PolicyBundleRefusal? {
        let file: PolicyFile
        do {
            file = try PolicyFile(jsonBytes: bundle.policy, baseDirectory: nil)
        } catch {
            return PolicyBundleRefusal(.invalidPolicy, "the policy is not a valid policy file: \(error)")
        }
        let findings = PolicyLinter().findingsRequiringInsecure(in: file)
        if !findings.isEmpty {
            return PolicyBundleRefusal(
                .insecurePolicy,
                "the policy weakens trust without saying \"insecure\": true: "
                    + findings.map { "\($0.rule) at \($0.pointer) (\($0.message))" }.joined(separator: "; ")
            )
        }
        if file.insecure && !self.allowInsecure {
            return PolicyBundleRefusal(
                .insecurePolicy,
                "the policy says \"insecure\": true, which can turn certificate validation off; updaters refuse it "
                    + "unless they allow insecure policies (--allow-insecure here)"
            )
        }
        return nil
    }
}
