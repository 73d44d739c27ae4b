import ArgumentParser
import Bulwark
import Foundation
import X509

/// `bulwark verify LEAF --roots FILE [--untrusted FILE]... [--crl FILE]... [--at TIME] [--host NAME] …`.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a certificate chain offline, with the trust engine a handshake uses.",
        discussion: """
            Builds a path from the first certificate of LEAF (any further certificates in that file may be used on \
            the path, as a server's chain) through the --untrusted certificates to one of the --roots, and prints \
            the verdict in the words of a refused handshake, the verified path with each certificate's key pin, and \
            each certificate's revocation status. Nothing is fetched: revocation uses only the --crl files, and is \
            checked hard when any is given (--revocation soft reports an unknown status instead of refusing). \
            --profile webpki (the default) holds the chain to what the client requires of a TLS server; rfc5280 is \
            RFC 5280 path validation alone (no web-PKI rules), for chains that are not a web server's. The host \
            name is checked, under either profile, only when --host is given. With --policy FILE and --host NAME, the chain is judged by the evaluator the policy \
            configures for that host (pins included) instead of --roots. Exit status: 0 trusted, 5 refused, \
            64 bad input (a file that holds no certificate or list, an option that cannot be read).
            """
    )

    @Argument(help: "A file (PEM or DER) whose first certificate is the one to verify.")
    var leaf: String

    @Option(help: "A file of certificates the path may use between the leaf and a root (repeatable).")
    var untrusted: [String] = []

    @Option(help: "A file of trusted root certificates (required unless --policy is given).")
    var roots: String?

    @Option(help: "A revocation list file, DER or PEM (repeatable).")
    var crl: [String] = []

    @Option(
        help: ArgumentHelp(
            "Check revocation with the --crl files: hard (an unknown status refuses), soft or off. Hard when a "
                + "--crl is given, off otherwise.",
            valueName: "hard|soft|off"
        )
    )
    var revocation: RevocationOption?

    @Option(help: "The time to verify at, ISO 8601 (2026-01-01T00:00:00Z or 2026-01-01); now by default.")
    var at: String?

    @Option(help: "The host name the leaf must be valid for; not checked when absent.")
    var host: String?

    @Option(help: ArgumentHelp("What the leaf is for: server, client or any.", valueName: "server|client|any"))
    var purpose: String?

    @Option(
        help: ArgumentHelp(
            "The rules: webpki (a TLS server, as the client checks it) or rfc5280 (path validation alone).",
            valueName: "webpki|rfc5280"
        )
    )
    var profile: String?

    @Option(help: "A policy file: judge with the evaluator it configures for --host.")
    var policy: String?

    @Flag(help: "Print the result as one JSON object.")
    var json = false

    func run() async throws {
        let verifier = try self.makeVerifier()
        let leafFile = try Self.certificates(self.leaf, option: "LEAF")
        let time = try self.time()
        var configured = verifier.verifier
        configured.untrusted = Array(leafFile.dropFirst()) + configured.untrusted
        let result = await configured.verify(leafFile[0], host: self.host, at: time)
        if self.json {
            print(
                Self.json(
                    result,
                    unusedLists: verifier.unusedLists,
                    time: time,
                    profile: self.policy == nil ? configured.profile : nil
                )
            )
        } else {
            self.printText(result, unusedLists: verifier.unusedLists)
        }
        if !result.isTrusted { throw ExitCode(5) }
    }

    /// The verifier the options describe, and the lists that were read but cannot be used (file, reason).
    func makeVerifier() throws -> (verifier: OfflineChainVerifier, unusedLists: [(String, String)]) {
        let profile: ValidationProfile
        switch self.profile ?? "webpki" {
        case "webpki": profile = .webPKI
        case "rfc5280": profile = .rfc5280
        case let other: throw ValidationError("--profile takes webpki or rfc5280, got \"\(other)\"")
        }
        let purpose: CertificatePurpose
        switch self.purpose ?? "server" {
        case "server": purpose = .server
        case "client": purpose = .client
        case "any": purpose = .any
        case let other: throw ValidationError("--purpose takes server, client or any, got \"\(other)\"")
        }
        if self.policy != nil, self.profile != nil || self.purpose != nil {
            throw ValidationError(
                "--profile and --purpose do not apply with --policy: the policy's evaluator for --host decides"
            )
        }
        var verifier: OfflineChainVerifier
        if let policyPath = self.policy {
            guard let host = self.host else {
                throw ValidationError("--policy needs --host: the policy's evaluator is chosen by host name")
            }
            let manager: ServerTrustManager
            do {
                manager = try ServerTrustManager(policyFile: policyPath, revocationFetcher: nil)
            } catch {
                throw ValidationError("--policy \(policyPath): \(error)")
            }
            guard let evaluator = manager.evaluator(forHost: host) else {
                throw ValidationError("--policy \(policyPath): no host pattern of the policy matches \(host)")
            }
            verifier = OfflineChainVerifier(
                roots: try self.roots.map { try Self.certificates($0, option: "--roots") } ?? []
            )
            verifier.evaluator = evaluator
        } else {
            guard let roots = self.roots else {
                throw ValidationError("--roots FILE is required: the trusted root certificates (or give --policy)")
            }
            verifier = OfflineChainVerifier(roots: try Self.certificates(roots, option: "--roots"))
        }
        verifier.profile = profile
        verifier.purpose = purpose
        for path in self.untrusted {
            verifier.untrusted += try Self.certificates(path, option: "--untrusted")
        }
        var unused: [(String, String)] = []
        for path in self.crl {
            do {
                verifier.revocationLists.append(try OfflineChainVerifier.revocationList(atPath: path))
            } catch  where ["malformed", "too_large"].contains(error.code) {
                throw ValidationError("--crl \(path): \(error)")
            } catch {
                unused.append((path, "\(error)"))
            }
        }
        switch self.revocation ?? (self.crl.isEmpty ? .off : .hard) {
        case .hard: verifier.revocation = .hard
        case .soft: verifier.revocation = .soft
        case .off: verifier.revocation = nil
        }
        return (verifier, unused)
    }

    /// The certificates of `path`, or a usage error naming the option and the file.
    static func certificates(_ path: String, option: String) throws -> [Certificate] {
        do {
            return try CertificateLoader.certificates(atPath: path)
        } catch {
            throw ValidationError("\(option): \(error)")
        }
    }

    /// `--at` as a time, or now.
    func time() throws -> Date {
        guard let text = self.at else { return Date() }
        if let time = try? Date(text, strategy: .iso8601) { return time }
        if let day = try? Date(text, strategy: .iso8601.year().month().day()) { return day }
        throw ValidationError(
            "--at takes an ISO 8601 time such as 2026-01-01T00:00:00Z or a day such as 2026-01-01, got \"\(text)\""
        )
    }

    private func printText(_ result: OfflineVerification, unusedLists: [(String, String)]) {
        switch result.decision {
        case .trusted(let chain):
            print("Verdict: trusted" + (self.host.map { " for \($0)" } ?? " (no host name checked)"))
            print("Verified path (\(chain.certificates.count)):")
            for (index, certificate) in chain.certificates.enumerated() {
                let summary = CertificateSummary(certificate)
                print("  [\(index)] \(summary.subject)")
                print(
                    "      valid:      \(summary.notValidBefore.formatted(.iso8601)) to \(summary.notValidAfter.formatted(.iso8601))"
                )
                print("      key pin:    \(summary.publicKeyPin)")
            }
            if let mode = result.revocation {
                let read = self.crl.count - unusedLists.count
                let unsigned = result.listsSignedByNoGivenCertificate
                print(
                    "Revocation (\(mode), \(read) list file\(read == 1 ? "" : "s") read"
                        + (unsigned > 0 ? ", \(unsigned) signed by no given certificate of its issuer's name" : "")
                        + "):"
                )
                for (certificate, status) in result.revocationStatuses { print("  \(certificate): \(status)") }
            }
            // Without --host no name was asked for, and saying it was not checked is the verdict line's job.
            for notice in chain.notices
            where notice.revocationCheck == nil && notice.unknownRevocation == nil
                && (self.host != nil || notice.code != "host_not_validated")
            {
                print("Notice: \(notice)")
            }
        case .refused(let refusal):
            print("Verdict: refused" + (self.host.map { " for \($0)" } ?? ""))
            for reason in refusal.reasons {
                print(String(describing: reason).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            }
        }
        if !unusedLists.isEmpty {
            print("Revocation lists not used:")
            for (path, reason) in unusedLists { print("  \(path): \(reason)") }
        }
    }

    static func json(
        _ result: OfflineVerification,
        unusedLists: [(String, String)],
        time: Date,
        profile: ValidationProfile?
    ) -> String {
        var object: [String: Any] = [
            "verdict": result.isTrusted ? "trusted" : "refused",
            "at": time.formatted(.iso8601),
            "unusedLists": unusedLists.map { ["file": $0.0, "reason": $0.1] },
            "listsSignedByNoGivenCertificate": result.listsSignedByNoGivenCertificate,
        ]
        object["profile"] = profile.map { "\($0)" }
        object["host"] = result.host
        switch result.decision {
        case .trusted(let chain):
            object["path"] = chain.certificates.map { certificate -> [String: String] in
                let summary = CertificateSummary(certificate)
                return [
                    "subject": summary.subject, "issuer": summary.issuer, "keyPin": "\(summary.publicKeyPin)",
                    "notValidAfter": summary.notValidAfter.formatted(.iso8601),
                ]
            }
            object["revocation"] = result.revocationStatuses.map {
                ["certificate": $0.certificate, "status": $0.status]
            }
            object["notices"] = chain.notices
                .filter { $0.revocationCheck == nil && $0.unknownRevocation == nil }
                .filter { result.host != nil || $0.code != "host_not_validated" }
                .map { ["code": $0.code, "text": "\($0)"] }
        case .refused(let refusal):
            object["reasons"] = refusal.reasons.map { ["code": $0.code, "text": "\($0)"] }
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
