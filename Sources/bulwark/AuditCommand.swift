import ArgumentParser
import Bulwark
import Foundation

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Check whether the trust policy refuses interception on the path through a proxy.",
        discussion: """
            Makes two TLS handshakes with the origin under the policy and sends no HTTP request on either: one \
            through the proxy, then one directly. It compares the chains the two presented. If they differ, the \
            proxy presented a chain of its own, and the verdict says whether the policy refused it. If they are \
            the same, the proxy tunnels the connection. Point --proxy at an intercepting proxy (Charles, \
            mitmproxy, a TLS inspection box) to see on one screen whether requests on that path would be refused \
            before a byte of them is sent. Without --proxy, the proxy section of the --policy file applies, and \
            without either, the environment's proxy variables (as for fetch). \
            Exit status: 0 no interception is accepted (the policy refused the proxy's certificate, the proxy \
            tunnels, or the policy refused the certificate presented through the proxy and no direct connection \
            was possible to compare); 1 INTERCEPTION ACCEPTED: the policy trusts a certificate the proxy presented \
            in place of the origin's; 64 bad options or files, or no proxy applies to the host; 3 the proxy could not be \
            reached, refused the tunnel or refused the proxy credentials; 4 the TLS handshake through the proxy \
            failed; 5 the policy refuses the origin's own certificate (or the host is not allowed); 6 a timeout \
            through the proxy; 9 undetermined: the policy trusted the certificate presented through the proxy, \
            and no direct connection was possible to compare it with the origin's.
            """
    )

    /// The exit status of an accepted interception.
    static let interceptionAcceptedExit: Int32 = 1
    /// The exit status of a check that cannot tell whether the proxy intercepts.
    static let undeterminedExit: Int32 = 9

    @Argument(help: "An https URL, or HOST:PORT (the port defaults to 443).")
    var target: String

    @OptionGroup var proxyOptions: ProxyOptions

    @OptionGroup var policy: PolicyOptions

    func run() async throws {
        let (host, port) = try InspectCommand.hostAndPort(self.target)
        var configuration = try FailureExit.configuration("audit") { try self.policy.configuration(host: host) }
        // A policy file's proxy section stands unless --proxy is given; without one, the environment's (as curl).
        let policySetsProxy = try self.policy.setsProxy()
        try self.proxyOptions.apply(to: &configuration.proxy, policySetsProxy: policySetsProxy)
        let chosen: String?
        do {
            chosen = try TLSStream.Configuration(configuration).proxy(forHost: host, port: port)
        } catch {
            throw ValidationError("\(error)")
        }
        guard chosen != nil else {
            throw ValidationError(
                "no proxy applies to \(host):\(port): give one with --proxy URL, the proxy section of a --policy file, "
                    + "or https_proxy"
            )
        }
        let check: InterceptionCheck
        do throws(BulwarkError) {
            check = try await InterceptionCheck.run(host: host, port: port, configuration: configuration)
        } catch {
            if error.code == .invalidConfiguration { throw ValidationError("\(error)") }
            printError("bulwark audit: \(error)")
            throw ExitCode(FailureExit.code(for: error))
        }
        printOut(
            "Audit of \(check.host):\(check.port) through the proxy at \(check.proxy) (TLS handshakes only, no HTTP "
                + "request)"
        )
        Self.printObservation("Through the proxy", check.throughProxy)
        Self.printObservation("Directly", check.direct)
        printOut("Verdict: \(check)")
        switch check.verdict {
        case .interceptionRefused, .tunnelled, .refusedThroughProxy:
            return
        case .interceptionAccepted:
            throw ExitCode(Self.interceptionAcceptedExit)
        case .undetermined:
            throw ExitCode(Self.undeterminedExit)
        case .originRefused:
            throw ExitCode(5)
        case .proxyFailed:
            throw ExitCode(check.throughProxy.error.map { FailureExit.code(for: $0) } ?? 1)
        }
    }

    private static func printObservation(_ title: String, _ observation: InterceptionCheck.Observation) {
        let outcome =
            observation.isTrusted ? "trusted" : observation.isRefused ? "refused by the policy" : "no handshake"
        printOut("\(title): \(outcome)")
        for (index, certificate) in observation.presentedChain.enumerated() {
            printOut("  [\(index)] \(certificate.subject)")
            printOut("      issuer:     \(certificate.issuer)")
            printOut("      key pin:    \(certificate.publicKeyPin)")
            printOut("      sha256:     \(certificate.certificatePin.fingerprint)")
        }
        guard let error = observation.error else { return }
        if let refusal = error.trustRefusal {
            for reason in refusal.reasons {
                printOut(String(describing: reason).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            }
        } else {
            printOut("  \(error)")
        }
    }
}
