import ArgumentParser
import BulwarkLimbo
import Foundation

struct LimboCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limbo",
        abstract: "Run the x509-limbo path-validation suite through Bulwark's trust evaluators.",
        discussion: """
            Each test case is evaluated with Bulwark's default trust evaluator, the case's trust anchors as \
            custom roots and its peer name as the host. The harness result JSON (x509-limbo's format) is written \
            to standard output or to --output; one summary line per group (core and bettertls, by expected result) \
            goes to standard error, or to standard output when --output is given. The exit status is 1 when any \
            case expected to fail was accepted.
            """
    )

    @Argument(help: "The limbo.json file.")
    var path: String = LimboRunner.defaultPath

    @Option(name: .shortAndLong, help: "Write the harness result JSON to this file instead of standard output.")
    var output: String?

    @Option(help: "How many test cases to evaluate at once.")
    var concurrency: Int = ProcessInfo.processInfo.activeProcessorCount * 2

    func run() async throws {
        let report: LimboReport
        do {
            report = try await LimboRunner.run(path: self.path, concurrency: max(1, self.concurrency))
        } catch {
            printError("error: cannot run the limbo suite at \(self.path): \(error)")
            throw ExitCode(2)
        }
        let json = try report.harnessJSON()
        var summary = report.summaryLines
        summary.append(String(format: "elapsed: %.2f s", report.elapsedSeconds))
        for result in report.unexpectedSuccesses {
            summary.insert("UNEXPECTED SUCCESS: \(result.id)", at: 0)
        }
        if let output = self.output {
            try json.write(to: URL(fileURLWithPath: output))
            print(summary.joined(separator: "\n"))
        } else {
            FileHandle.standardOutput.write(json)
            FileHandle.standardOutput.write(Data("\n".utf8))
            printError(summary.joined(separator: "\n"))
        }
        if !report.unexpectedSuccesses.isEmpty { throw ExitCode(1) }
    }
}
