import ArgumentParser
import BulwarkPolicy
import Foundation

/// `bulwark redirect-check`: one redirect hop decided offline by the same ``RedirectPolicy`` the client uses.
///
/// The command parses its own arguments (captured whole, then parsed as ``Options``) so that every bad argument
/// exits with 2, as documented, rather than with ArgumentParser's usage status.
struct RedirectCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redirect-check",
        abstract: "Decide one redirect hop offline, as the Bulwark client would.",
        usage: """
            bulwark redirect-check --allow PATTERN… --from URL [--location VALUE] [--status 302] [--method GET] \
            [--hop 1] [--header "Name: value"]… [--allow-port PORT]… [--max-hops 5] [--json]
            """,
        discussion: """
            The request to --from (with --method and --header) got a --status response \
            whose Location header is --location (omit it for a response without one); \
            --hop is the number of this redirect in its chain (1 for the first). The \
            policy is Bulwark's default (https only, at most --max-hops hops, no port \
            change unless --allow-port lists the new port, credentials stripped after \
            an origin change) with the host patterns of --allow added to the host of \
            --from.

            With --json the decision is exactly one JSON object on one line:
              {"decision":"follow","url":…,"method":…,"headers":{…},"stripped":[…]}
              {"decision":"refuse","reason":LABEL,"detail":SENTENCE}
            "headers" holds the headers kept (lower-case names), "stripped" the names \
            removed (credentials after an origin change, body headers when the method \
            becomes GET). Exit status: 0 follow, 1 refuse, 2 bad arguments.

            Options:
              --allow PATTERN…   hosts a redirect may lead to (example.com,
                                 *.example.com, **.example.com)
              --from URL         the URL of the request that got the redirect
              --location VALUE   the Location header (absent: there was none)
              --status N         the response status (default 302)
              --method M         the request's method (default GET); any other
                                 than GET and HEAD is taken to have a body
              --hop N            the number of this redirect (default 1)
              --header "N: v"    a request header (repeatable)
              --allow-port PORT  a port the redirect may move to (repeatable)
              --max-hops N       the hop limit (default 5)
              --json             print the decision as one JSON object
            """
    )

    @Argument(parsing: .captureForPassthrough, help: .hidden)
    var arguments: [String] = []

    /// The real options, parsed in ``run()``.
    struct Options: ParsableArguments {
        @Option(parsing: .upToNextOption, help: "Hosts a redirect may lead to: host patterns.")
        var allow: [String] = []

        @Option(help: "The URL of the request that got the redirect.")
        var from: String

        @Option(help: "The Location header; absent when the response had none.")
        var location: String?

        @Option(help: "The response status.")
        var status: Int = 302

        @Option(help: "The request's method.")
        var method: String = "GET"

        @Option(help: "The number of this redirect in its chain, 1 for the first.")
        var hop: Int = 1

        @Option(name: .customLong("header"), help: "A request header, \"Name: value\".")
        var headers: [String] = []

        @Option(name: .customLong("allow-port"), help: "A port the redirect may move to.")
        var allowedPorts: [Int] = []

        @Option(help: "The most redirects followed in a chain.")
        var maxHops: Int = 5

        @Flag(help: "Print the decision as one JSON object.")
        var json = false
    }

    /// The exit status for arguments that cannot be used.
    static let badArguments: Int32 = 2

    func run() throws {
        let options: Options
        do {
            options = try Options.parse(self.arguments)
        } catch {
            if Options.exitCode(for: error) == .success {
                print(Self.helpMessage())
                return
            }
            throw Self.fail(Options.message(for: error))
        }
        let decision = try Self.decide(options)
        if options.json {
            print(decision.json)
        } else {
            Self.printText(decision)
        }
        if decision.refusal != nil {
            throw ExitCode(1)
        }
    }

    /// The policy's decision for the hop `options` describe.
    static func decide(_ options: Options) throws -> RedirectDecision {
        var policy: RedirectPolicy
        do {
            policy = try RedirectPolicy(allowing: options.allow, maximumHops: options.maxHops)
        } catch {
            throw Self.fail("--allow: \(error)")
        }
        guard options.maxHops >= 0 else { throw Self.fail("--max-hops must be 0 or more") }
        guard options.allowedPorts.allSatisfy({ (1...65535).contains($0) }) else {
            throw Self.fail("--allow-port takes a port from 1 to 65535")
        }
        policy.allowedPorts = Set(options.allowedPorts)
        guard let from = URL(string: options.from) else {
            throw Self.fail("--from: \"\(options.from)\" is not a URL")
        }
        let chain = RedirectChain(startingAt: from, followedCount: options.hop - 1)
        guard chain.initialHost != nil else {
            throw Self.fail("--from must be an absolute http or https URL with a valid host and no user information")
        }
        guard (100...599).contains(options.status) else { throw Self.fail("--status takes a status from 100 to 599") }
        guard options.hop >= 1 else { throw Self.fail("--hop takes 1 or more") }
        guard HTTPToken.isToken(options.method) else {
            throw Self.fail("--method takes an HTTP method token, got \"\(options.method)\"")
        }
        var headers: [HeaderField] = []
        for header in options.headers {
            guard let colon = header.firstIndex(of: ":") else {
                throw Self.fail("--header takes \"Name: value\", got \"\(header)\"")
            }
            let name = String(header[..<colon]).trimmingCharacters(in: .whitespaces)
            guard HTTPToken.isToken(name) else {
                throw Self.fail("--header takes \"Name: value\", got \"\(header)\"")
            }
            let value = String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            headers.append(HeaderField(name: name, value: value))
        }
        let request = RedirectRequest(
            method: options.method,
            url: from,
            headers: headers,
            body: options.method == "GET" || options.method == "HEAD" ? .none : .replayable
        )
        let hop = RedirectHop(
            request: request,
            status: options.status,
            locations: options.location.map { [$0] } ?? [],
            chain: chain
        )
        return policy.decide(hop)
    }

    private static func printText(_ decision: RedirectDecision) {
        switch decision {
        case .follow(let follow):
            print("follow: \(follow.method) \(follow.url.absoluteString)")
            for field in follow.headers {
                print("  kept: \(field.lowercasedName)")
            }
            for name in follow.strippedHeaders {
                print("  stripped: \(name)")
            }
        case .refuse(let refusal):
            print("refuse (\(refusal.shortDescription)): \(refusal.detail)")
            print("  from: \(refusal.from)")
            print("  to: \(refusal.to ?? "(no Location)")")
        }
    }

    /// Prints `message` on standard error; the returned error exits with ``badArguments``.
    private static func fail(_ message: String) -> ExitCode {
        printError("bulwark redirect-check: \(message)")
        return ExitCode(Self.badArguments)
    }
}
