import ArgumentParser
import BulwarkPolicy
import Foundation

/// `bulwark policy sign --key NAME.key [--key …] --version N --expires YYYY-MM-DD POLICY -o BUNDLE`.
struct PolicySignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a policy file into a bundle (its exact bytes, a version, an expiry, Ed25519 signatures).",
        discussion: """
            The policy must decode. Each --key signs once; a client accepts the bundle when as many distinct \
            trusted keys as its threshold signed it. With --new-trusted-keys the bundle also replaces the \
            trusted-key set (key rotation): sign it with the keys trusted today.
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

    func run() throws {
        guard !self.keyFiles.isEmpty else { throw ValidationError("give at least one --key") }
        guard PolicyFile.parseDay(self.expires) != nil else {
            throw ValidationError("--expires takes YYYY-MM-DD, got \"\(self.expires)\"")
        }
        do {
            _ = try PolicyFile(contentsOfFile: self.policy)
        } catch {
            printError("bulwark policy sign: \(self.policy): \(error)")
            throw ExitCode(3)
        }
        let bytes = try PolicyFile.readFile(self.policy, maximumSize: PolicyFile.maximumSize, pointer: "")
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
        let bundle = PolicyBundle(policy: bytes, version: self.version, expires: self.expires, trustedKeys: trustedKeys)
        let signed = try bundle.signed(by: keys)
        guard FileManager.default.createFile(atPath: self.output, contents: Data(signed)) else {
            throw ValidationError("cannot write \(self.output)")
        }
        print("wrote \(self.output): version \(self.version), expires \(self.expires), \(keys.count) signature(s)")
        for key in keys { print("  signed by \(key.publicKey)") }
    }
}
