import ArgumentParser

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
}
