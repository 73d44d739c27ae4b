import ArgumentParser
import BulwarkPolicy
import Foundation

/// `bulwark policy verify BUNDLE --trusted-keys FILE [--threshold K]`.
struct PolicyVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a signed policy bundle against trusted keys.",
        discussion: """
            Exit status 0 only when at least --threshold distinct keys of --trusted-keys signed the bundle, it \
            has not expired, and its version is not older than --highest-version; otherwise 1, with the reason \
            (too_large, malformed, unsupported_format, signature_invalid, unknown_key, below_threshold, rollback, \
            expired). 2: bad arguments.
            """
    )

    @Argument(help: "The bundle file.")
    var bundle: String

    @Option(help: "A file of public key lines (one per line, as keygen writes them).")
    var trustedKeys: String

    @Option(help: "How many distinct trusted keys must have signed it.")
    var threshold: Int = 1

    @Option(help: "The highest version accepted before: an older bundle is refused as a rollback.")
    var highestVersion: UInt64?

    @Option(name: .customLong("write-policy"), help: "Write the verified policy's exact bytes to this file.")
    var policyOutput: String?

    func run() throws {
        guard let text = try? String(contentsOfFile: self.trustedKeys, encoding: .utf8) else {
            throw ValidationError("--trusted-keys: cannot read \(self.trustedKeys)")
        }
        let trusted: PolicyTrustedKeys
        do {
            trusted = try PolicyTrustedKeys(fileContents: text, threshold: self.threshold)
        } catch {
            throw ValidationError("--trusted-keys \(self.trustedKeys): \(error)")
        }
        let verifier = PolicyBundleVerifier(trustedKeys: trusted, highestVersion: self.highestVersion)
        // One byte over the cap is enough to refuse a larger file without reading all of it.
        guard let handle = FileHandle(forReadingAtPath: self.bundle),
            let data = try? handle.read(upToCount: verifier.maximumSize + 1)
        else {
            throw ValidationError("cannot read \(self.bundle)")
        }
        try? handle.close()
        switch verifier.verify(Array(data)) {
        case .success(let verified):
            let digest = verified.bundle.policySHA256
            print("verified: version \(verified.bundle.version), expires \(verified.bundle.expires)")
            print("policy: \(verified.bundle.policy.count) bytes, sha256 \(digest)")
            for signer in verified.signers { print("signed by \(signer)") }
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
}
