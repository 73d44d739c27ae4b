import ArgumentParser
import Foundation

@main
struct BulwarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bulwark",
        abstract: "Pin certificates, test trust policies and audit HTTPS servers.",
        discussion: """
            Bulwark is an HTTPS client whose TLS handshakes, redirects and credentials follow an explicit security \
            policy. This tool shows that policy at work and helps you write one.
            """,
        subcommands: [
            DemoCommand.self, FetchCommand.self, InspectCommand.self, PinCommand.self, LimboCommand.self,
            LogCommand.self, RedirectCheckCommand.self, PolicyCommand.self, AuditCommand.self, VerifyCommand.self,
        ]
    )

    /// Parses and runs the command, as ArgumentParser's `main()` does, after refusing a password joined to curl's
    /// `-u`, `-U` or `-E` (`-uuser:password`): ArgumentParser would read such a word as a group of short flags and
    /// repeat it, password and all, in its error.
    static func main() async {
        if let refusal = CurlOptions.joinedSecretRefusal(Array(CommandLine.arguments.dropFirst())) {
            printError("Error: \(refusal)")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
