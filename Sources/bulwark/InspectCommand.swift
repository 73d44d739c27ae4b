import ArgumentParser
import Bulwark
import Foundation
import X509

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a server's presented and verified certificate chains and the trust verdict.",
        discussion: """
            Connects with TLS only (no HTTP request is sent), prints every certificate the server presented with \
            its subject, issuer, validity, names and pins, then the verdict of the trust policy and, when \
            trusted, the verified chain the pins were checked against: `openssl s_client -showcerts` and a trust \
            dump in one command. With --revocation soft (the default) or hard, each certificate of the verified \
            chain is checked for revocation and its status is printed with its source and the answer's validity. \
            With --proxy, the connection goes through that proxy and the handshake with the origin runs inside the \
            tunnel, so the chain shown is the one presented on that path: the origin's own when the proxy tunnels, \
            the proxy's when it intercepts. Without --proxy, the proxy section of the --policy file applies, and \
            without either, the environment's proxy variables (as for fetch). \
            \(FailureExit.help)
            """
    )

    @Argument(help: "An https URL, or HOST:PORT.")
    var target: String

    @OptionGroup var policy: PolicyOptions

    @Option(help: RevocationOption.help)
    var revocation: RevocationOption = .soft

    @OptionGroup var proxyOptions: ProxyOptions

    func run() async throws {
        let (host, port) = try Self.hostAndPort(self.target)
        var configuration = try TLSStream.Configuration(
            FailureExit.configuration("inspect") {
                try self.policy.configuration(host: host, revocation: self.revocation)
            }
        )
        // A policy file's proxy section stands unless --proxy is given; without one, the environment's (as curl).
        let policySetsProxy = try self.policy.setsProxy()
        try self.proxyOptions.apply(to: &configuration.proxy, policySetsProxy: policySetsProxy)
        let proxy: String?
        do {
            proxy = try configuration.proxy(forHost: host, port: port)
        } catch {
            throw ValidationError("\(error)")
        }
        printOut("Connecting to \(host):\(port)" + (proxy.map { " through the proxy at \($0)" } ?? ""))
        do {
            let stream = try await TLSStream.connect(host: host, port: port, configuration: configuration)
            defer { Task { try? await stream.close() } }
            self.printChain("Presented chain", stream.serverTrust.presentedChain.map(CertificateSummary.init))
            printOut("Verdict: trusted")
            if let trusted = stream.serverTrust.trustedChain {
                self.printChain("Verified chain", trusted.certificates.map(CertificateSummary.init))
                self.printRevocation(trusted.notices)
                try self.printTransparency(trusted.certificates, notices: trusted.notices)
                for notice in trusted.notices where notice.revocationCheck == nil && notice.unknownRevocation == nil {
                    printOut("Notice: \(notice)")
                }
            }
        } catch let error as BulwarkError {
            if let refusal = error.trustRefusal {
                self.printChain("Presented chain", refusal.presentedChain)
                printOut("Verdict: refused")
                for reason in refusal.reasons {
                    printOut(
                        String(describing: reason).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
                    )
                }
            } else {
                printOut("Verdict: no handshake: \(error)")
            }
            throw ExitCode(FailureExit.code(for: error))
        } catch let error as ValidationError {
            throw error
        } catch {
            printError("bulwark inspect: \(error)")
            throw ExitCode(FailureExit.code(for: error))
        }
    }

    /// One line per checked certificate: its status, the method and source, and the answer's validity.
    private func printRevocation(_ notices: [TrustNotice]) {
        guard self.revocation != .off else { return }
        printOut("Revocation (\(self.revocation.rawValue)):")
        for notice in notices {
            if let check = notice.revocationCheck {
                let status = check.status
                printOut("  \(check.certificate): \(status.code)")
                printOut(
                    "      source:     \(status.source), \(check.method) from \(check.origin)\(check.cached ? " (cached)" : "")"
                )
                let thisUpdate = status.thisUpdate.map { $0.formatted(.iso8601) } ?? "(not given)"
                let nextUpdate = status.nextUpdate.map { $0.formatted(.iso8601) } ?? "(not given)"
                printOut("      valid:      \(thisUpdate) to \(nextUpdate)")
            } else if let unknown = notice.unknownRevocation {
                printOut("  \(unknown.certificate): unknown")
                printOut("      why:        \(unknown.reason)")
            }
        }
    }

    /// Every SCT of the leaf: its log (or "unknown log <id>"), the log's operator, when, and whether it verified;
    /// then whether Chrome's policy is met. The log list is the one the check used, else `--ct-logs` or the policy's.
    private func printTransparency(_ chain: [Certificate], notices: [TrustNotice]) throws {
        guard chain.count >= 2 else { return }
        let logs = try self.policy.logList() ?? CertificateTransparencyLogList(logs: [])
        let checked = notices.compactMap(\.certificateTransparency).first
        let check =
            checked ?? CertificateTransparencyPolicy.chrome.check(chain[0], issuer: chain[1], logs: logs, at: Date())
        // A verdict the connection itself did not reach is said to be advisory (no --ct, or a host without a mode).
        let advisory = checked == nil ? " (advisory: this connection did not check Certificate Transparency)" : ""
        printOut("Certificate Transparency (\(check.entries.count) SCT\(check.entries.count == 1 ? "" : "s")):")
        for entry in check.entries {
            printOut("  \(entry)")
        }
        printOut("  policy: \(check.failure.map { "not met: \($0)" } ?? "met (Chrome's rule)")\(advisory)")
    }

    private func printChain(_ title: String, _ chain: [CertificateSummary]) {
        printOut("\(title) (\(chain.count)):")
        for (index, summary) in chain.enumerated() {
            printOut("  [\(index)] \(summary.subject)")
            printOut("      issuer:     \(summary.issuer)")
            printOut(
                "      valid:      \(summary.notValidBefore.formatted(.iso8601)) to \(summary.notValidAfter.formatted(.iso8601))"
            )
            let names =
                summary.subjectAlternativeNames.isEmpty
                ? "(none)" : summary.subjectAlternativeNames.joined(separator: ", ")
            printOut("      names:      \(names)")
            printOut("      key pin:    \(summary.publicKeyPin)")
            printOut("      sha256:     \(summary.certificatePin.fingerprint)")
        }
    }

    /// The host and port of `target`: an https URL, or `HOST:PORT` (443 when no port is given).
    static func hostAndPort(_ target: String) throws -> (String, Int) {
        if target.contains("://") {
            guard let url = URL(string: target), let host = url.host(percentEncoded: false) else {
                throw ValidationError("\"\(target)\" is not a URL")
            }
            return (host, url.port ?? 443)
        }
        guard let colon = target.lastIndex(of: ":"), let port = Int(target[target.index(after: colon)...]) else {
            return (target, 443)
        }
        return (String(target[..<colon]), port)
    }
}
