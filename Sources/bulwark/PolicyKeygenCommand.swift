import ArgumentParser
import BulwarkPolicy
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `bulwark policy keygen --out NAME`.
struct PolicyKeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make an Ed25519 key pair for signing policy bundles: NAME.key (mode 0600) and NAME.pub (one line).",
        discussion: """
            NAME.key is created new (an existing file is never overwritten) with mode 0600 and holds the private \
            key; NAME.pub holds the public key line, `bulwark-policy-key/1 ed25519 BASE64 NAME`, which goes into \
            the trusted-key file of `bulwark policy verify` and of clients.
            """
    )

    @Option(
        name: .customLong("out"),
        help: ArgumentHelp("The path of the two files, without extension.", valueName: "name")
    )
    var name: String

    func run() throws {
        let keyPath = self.name + ".key"
        let publicPath = self.name + ".pub"
        let label = URL(fileURLWithPath: self.name).lastPathComponent
        let key = PolicySigningKey.generate(name: label)
        let contents = key.keyFileContents()
        let descriptor = open(keyPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ValidationError("cannot create \(keyPath) (it may exist already; keys are never overwritten)")
        }
        let written = contents.withUnsafeBytes { bytes in write(descriptor, bytes.baseAddress, bytes.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == contents.count, synced == 0 else {
            unlink(keyPath)
            throw ValidationError("cannot write \(keyPath)")
        }
        guard FileManager.default.createFile(atPath: publicPath, contents: Data((key.publicKey.line + "\n").utf8))
        else {
            throw ValidationError("cannot write \(publicPath)")
        }
        print("wrote \(keyPath) (private key, mode 0600) and \(publicPath):")
        print(key.publicKey.line)
    }
}
