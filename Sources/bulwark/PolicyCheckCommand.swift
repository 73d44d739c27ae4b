import ArgumentParser
import Bulwark
import Foundation

/// `bulwark policy check FILE [--resolve HOST:PORT:ADDR]`.
struct PolicyCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Connect to every concrete host of a policy and predict lockouts before the policy ships.",
        discussion: """
            For each host pattern without a wildcard, connects with TLS (no HTTP request) under the policy and \
            prints whether today's chain satisfies it, which pin matched, when the certificate carrying that pin and \
            the pin set expire, and which hosts would be locked out. A host is reached on port 443, or on the port \
            of a --resolve entry naming it. Exit status: 0 every host passes, 1 every host passes but a pin set \
            expires within 30 days (or has expired) or a host's certificate would fail the Certificate Transparency \
            rule, 2 a host would be locked out or cannot be reached, 3 the file is not a valid policy. The \
            Certificate Transparency rule (Chrome's) is checked against the policy's certificateTransparency log \
            list, when it has one, for every host, whether or not its evaluator enforces it.
            """
    )

    @Argument(help: "The policy file.")
    var file: String

    @Option(help: "Connect HOST:PORT to ADDR instead of resolving HOST, as curl's --resolve (repeatable).")
    var resolve: [String] = []

    @Option(help: "Seconds allowed for each host's connection and handshake.")
    var timeout: Int = 10

    /// How close a pin set's expiration must be to be reported.
    static let expiryWarning: TimeInterval = 30 * 86_400

    func run() async throws {
        let policy: PolicyFile
        var configuration: BulwarkClient.Configuration
        do {
            policy = try PolicyFile(contentsOfFile: self.file)
            configuration = try BulwarkClient.Configuration(policy: policy)
        } catch {
            printError("bulwark policy check: \(error)")
            throw ExitCode(3)
        }
        // The check is about trust: the allowlist (which names schemes) and the decision cache stay out of it.
        configuration.allowlist = nil
        configuration.trustDecisionCache = nil
        configuration.timeouts.connect = .seconds(Int64(self.timeout))
        configuration.timeouts.tlsHandshake = .seconds(Int64(self.timeout))
        var ports: [String: Int] = [:]
        for entry in self.resolve {
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let port = Int(parts[1]) else {
                throw ValidationError("--resolve takes HOST:PORT:ADDR, got \"\(entry)\"")
            }
            let host = try HostName.canonicalize(parts[0])
            ports[host] = port
            configuration.resolveOverrides[BulwarkClient.Endpoint(host: host, port: port)] =
                BulwarkClient.ResolvedAddress(parts[2])
        }
        let now = Date()
        var passed = 0
        var lockedOut = 0
        var expiring = 0
        var transparencyFailures = 0
        let hosts = policy.hosts.filter { $0.pattern.kind == .exact }
        for host in hosts {
            let name = host.pattern.base
            let port = ports[name] ?? 443
            print("\(name):\(port)")
            let expiration = Self.pinSetExpiration(host.evaluator)
            do {
                let stream = try await TLSStream.connect(host: name, port: port, configuration: configuration)
                try? await stream.close()
                passed += 1
                print("  trusted: today's chain satisfies the policy")
                let trusted = stream.serverTrust.trustedChain
                for notice in trusted?.notices ?? [] {
                    if let pin = notice.pin,
                        let certificate = trusted?.certificates.first(where: { pin.matches($0) })
                    {
                        let summary = CertificateSummary(certificate)
                        print("  pin matched: \(pin) (\(summary.subject))")
                        print("  that certificate expires: \(Self.format(summary.notValidAfter))")
                    } else if let mismatch = notice.pinMismatch {
                        print(
                            "  report-only: no pin matched (\(mismatch.expectedPins.count) expected); enforced, "
                                + "this host would be locked out"
                        )
                    } else if notice.code == "pin_set_expired" {
                        print("  notice: \(notice)")
                    }
                }
                if let leaf = trusted?.certificates.first {
                    print("  leaf expires: \(Self.format(leaf.notValidAfter))")
                }
                if let logs = policy.certificateTransparency, let trusted, trusted.certificates.count >= 2 {
                    let check =
                        trusted.notices.compactMap(\.certificateTransparency).first
                        ?? CertificateTransparencyPolicy.chrome.check(
                            trusted.certificates[0],
                            issuer: trusted.certificates[1],
                            logs: logs,
                            at: now
                        )
                    let checked = trusted.notices.contains { $0.certificateTransparency != nil }
                    let advisory =
                        checked ? "" : " (advisory: this host's evaluator does not check Certificate Transparency)"
                    if let failure = check.failure {
                        transparencyFailures += 1
                        print("  WARNING: Certificate Transparency: not met: \(failure)\(advisory)")
                    } else {
                        print(
                            "  Certificate Transparency: met (\(check.counted) SCTs, \(check.operators.count) operators)"
                                + advisory
                        )
                    }
                    if let expires = logs.expires, expires <= now {
                        print("  WARNING: the log list expired: Certificate Transparency is reported, not enforced")
                    }
                }
            } catch let error as BulwarkError {
                lockedOut += 1
                if let refusal = error.trustRefusal {
                    print("  LOCKED OUT: the policy refuses today's chain")
                    for reason in refusal.reasons {
                        for line in String(describing: reason).split(separator: "\n") { print("    \(line)") }
                    }
                } else {
                    print("  UNREACHABLE: \(error)")
                }
            }
            if let expiration {
                let days = Int((expiration.timeIntervalSince(now) / 86_400).rounded(.up))
                if expiration <= now {
                    expiring += 1
                    print("  WARNING: the pin set expired on \(PolicyFile.formatDay(expiration))")
                } else if expiration.timeIntervalSince(now) <= Self.expiryWarning {
                    expiring += 1
                    print(
                        "  WARNING: the pin set expires on \(PolicyFile.formatDay(expiration)), "
                            + "in \(days) day\(days == 1 ? "" : "s")"
                    )
                } else {
                    print("  pin set expires: \(PolicyFile.formatDay(expiration))")
                }
            }
        }
        let skipped = policy.hosts.count - hosts.count
        print(
            "\(hosts.count) host\(hosts.count == 1 ? "" : "s") checked: \(passed) trusted, \(lockedOut) would be "
                + "locked out or unreachable, \(expiring) with a pin set expiring within 30 days"
                + (policy.certificateTransparency == nil
                    ? "" : ", \(transparencyFailures) failing the Certificate Transparency rule")
                + (skipped > 0 ? "; \(skipped) wildcard pattern\(skipped == 1 ? "" : "s") not checked" : "")
        )
        if lockedOut > 0 { throw ExitCode(2) }
        if expiring > 0 || transparencyFailures > 0 { throw ExitCode(1) }
    }

    /// The earliest pin-set expiration of an evaluator (a composite's members included).
    static func pinSetExpiration(_ evaluator: PolicyFile.Evaluator) -> Date? {
        let own = evaluator.pinSet?.expiration
        let members = evaluator.members.compactMap(Self.pinSetExpiration)
        return ([own].compactMap { $0 } + members).min()
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
