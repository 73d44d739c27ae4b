import ArgumentParser
import BulwarkPolicy
import Foundation
import X509

struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Print the pins of the certificates in PEM or DER files.",
        discussion: """
            For every certificate in each file this prints its subject, issuer, validity, subject alternative \
            names, its public-key pin (sha256/ of the DER SubjectPublicKeyInfo, as OkHttp, curl --pinnedpubkey \
            and HPKP use) and its certificate SHA-256 fingerprint. The public-key pin equals the output of \
            `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | \
            base64`. The exit status is 1 if any file could not be read or parsed.
            """
    )

    @Argument(help: "PEM or DER certificate files. A PEM file may hold several certificates.")
    var files: [String]

    func run() throws {
        var failed = false
        for file in self.files {
            do {
                let certificates = try CertificateLoader.certificates(atPath: file)
                for (index, certificate) in certificates.enumerated() {
                    print("\(file) [\(index + 1)/\(certificates.count)]")
                    print(CertificateText.lines(for: certificate).map { "  " + $0 }.joined(separator: "\n"))
                }
            } catch {
                failed = true
                printError("error: \(error)")
            }
        }
        if failed { throw ExitCode(1) }
    }
}

/// Text blocks shared by the commands that show certificates.
enum CertificateText {
    static func lines(for certificate: Certificate) -> [String] {
        let summary = CertificateSummary(certificate)
        let names =
            summary.subjectAlternativeNames.isEmpty ? "(none)" : summary.subjectAlternativeNames.joined(separator: ", ")
        return [
            "subject:     \(summary.subject)",
            "issuer:      \(summary.issuer)",
            "not before:  \(summary.notValidBefore.formatted(.iso8601))",
            "not after:   \(summary.notValidAfter.formatted(.iso8601))",
            "names:       \(names)",
            "key pin:     \(summary.publicKeyPin)",
            "sha256:      \(summary.certificatePin.fingerprint)",
        ]
    }
}
