import ArgumentParser
import BulwarkPolicy
import Foundation
import X509

/// `bulwark policy lint FILE [--format text|json|sarif]`.
struct PolicyLintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Check a policy file for what weakens it or can lock users out.",
        discussion: """
            Every finding has a stable rule code, a severity and a sentence; --format sarif writes SARIF 2.1.0 \
            for code-scanning tools, which show each finding on its line. Exit status: 0 no findings (or notes \
            only), 1 warnings, 2 errors, 3 the file is not a valid policy.

            Rules: \(PolicyLintRule.all.map { "\($0.code) \($0.name) (\($0.severity))" }.joined(separator: ", ")).
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, sarif
    }

    @Argument(help: "The policy file.")
    var file: String

    @Option(help: "text (the default), json or sarif.")
    var format: Format = .text

    @Option(
        name: .customLong("certificates"),
        help: "A PEM file of the certificates the hosts serve, so that pins on leaf keys can be recognized."
    )
    var certificateFiles: [String] = []

    @Option(help: ArgumentHelp("Judge expirations on this day instead of today.", valueName: "YYYY-MM-DD"))
    var date: String?

    func run() throws {
        var linter = PolicyLinter()
        if let date {
            guard let day = PolicyFile.parseDay(date) else {
                throw ValidationError("--date takes YYYY-MM-DD, got \"\(date)\"")
            }
            linter.now = day
        }
        for file in self.certificateFiles {
            linter.knownCertificates += try CertificateLoader.certificates(atPath: file)
        }
        let report: PolicyLintReport
        do {
            report = PolicyLintReport(file: self.file, findings: linter.lint(try PolicyFile(contentsOfFile: self.file)))
        } catch {
            report = PolicyLintReport(file: self.file, error: error)
        }
        switch self.format {
        case .text: print(report.text, terminator: "")
        case .json: print(report.json, terminator: "")
        case .sarif: print(report.sarif, terminator: "")
        }
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
