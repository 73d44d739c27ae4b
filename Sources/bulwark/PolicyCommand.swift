import ArgumentParser

/// `bulwark policy`: the policy file's tools.
struct PolicyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Lint, check, sign and verify policy files (bulwark-policy.json, format bulwark-policy/1).",
        discussion: """
            A policy file says which hosts are trusted with which pins, roots and revocation checks, the TLS \
            minimum, the allowlist, the redirect policy and the client certificates; `fetch` and `inspect` take it \
            with --policy FILE. `lint` checks it for what weakens it or can lock users out; `check` connects to its \
            hosts and predicts lockouts; `keygen`, `sign` and `verify` make and check signed bundles of it.
            """,
        subcommands: [
            PolicyLintCommand.self, PolicyCheckCommand.self, PolicyKeygenCommand.self, PolicySignCommand.self,
            PolicyVerifyCommand.self,
        ]
    )
}
