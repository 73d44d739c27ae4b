import BulwarkPolicy
import BulwarkTestHelpers
import Foundation
import Testing

/// The committed JSON Schema and the decoder agree on every example, and the linter's SARIF validates against the
/// SARIF 2.1.0 schema; both checked by python's `jsonschema` (scripts/test installs it into .venv).
@Suite("Policy schema and SARIF against python jsonschema", .tags(.externalPeers))
struct PolicySchemaTests {
    /// Validates each file against `schema`; returns each file's errors (empty when valid).
    static func validate(schema: String, files: [String]) async throws -> [String: [String]] {
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            validator = jsonschema.validators.validator_for(schema)
            validator.check_schema(schema)
            checker = validator(schema)
            out = {}
            for path in sys.argv[2:]:
                out[path] = [e.message[:300] for e in checker.iter_errors(json.load(open(path)))]
            print(json.dumps(out))
            """
        let result = try await ProcessRunner.run(try Self.python(), ["-c", script, schema] + files)
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: [String]]
        return try #require(parsed, "\(result.output)\(result.stderr)")
    }

    /// The repository's .venv python (scripts/test installs jsonschema there), else python3 on PATH.
    static func python() throws -> URL {
        let venv = PolicyExamples.root.appending(path: ".venv/bin/python3")
        if FileManager.default.isExecutableFile(atPath: venv.path) { return venv }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appending(path: "python3")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw ProcessRunner.Failure(description: "python3 is not installed; run scripts/test, which installs it")
    }

    @Test func theSchemaAndTheDecoderAgreeOnEveryExample() async throws {
        var files = try PolicyExamples.files(in: PolicyExamples.valid).map {
            PolicyExamples.valid.appending(path: $0).path
        }
        files += try PolicyExamples.files(in: PolicyExamples.invalid).map {
            PolicyExamples.invalid.appending(path: $0).path
        }
        files.append(PolicyExamples.readmeExample)
        let verdicts = try await Self.validate(schema: PolicyExamples.schema, files: files)
        #expect(verdicts.count == files.count)
        var valid = 0
        for file in files {
            let decoded = (try? PolicyFile(contentsOfFile: file)) != nil
            let schemaErrors = try #require(verdicts[file])
            #expect(decoded == schemaErrors.isEmpty, "\(file): decoder \(decoded), schema \(schemaErrors)")
            #expect(decoded == !file.contains("/invalid/"), "\(file)")
            if decoded { valid += 1 }
        }
        #expect(valid == 8)
    }

    @Test func theLintersSARIFValidatesAgainstTheSARIF210Schema() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-sarif-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let policy = try PolicyExamples.decode(
            #"{"format":"bulwark-policy/1","insecure":true,"hosts":{"**.com":{"evaluator":"default"},"#
                + #""a.example.com":{"evaluator":"disabled"},"b.example.com":{"evaluator":"publicKeys","#
                + #""pins":["\#(PolicyLintTests.pinA)"],"allowSinglePin":true,"expires":"2026-12-01"}},"#
                + #""redirects":{"allowHTTPSToHTTP":true}}"#
        )
        let findings = PolicyLinter(now: PolicyLintTests.today).lint(policy)
        #expect(Set(findings.map(\.rule)).count >= 5)
        let error = #expect(throws: PolicyFileError.self) {
            try PolicyFile(contentsOfFile: PolicyExamples.invalid.appending(path: "bad-pin.json").path)
        }
        let reports = [
            PolicyLintReport(file: "policies/bulwark policy.json", findings: findings),
            PolicyLintReport(file: "bad-pin.json", error: try #require(error)),
            PolicyLintReport(file: "clean.json", findings: []),
        ]
        var files: [String] = []
        for (index, report) in reports.enumerated() {
            let path = directory.appending(path: "report-\(index).sarif").path
            try report.sarif.write(toFile: path, atomically: true, encoding: .utf8)
            files.append(path)
        }
        // A log without its version must fail, so that a validator accepting anything cannot pass the test.
        let broken = directory.appending(path: "broken.sarif").path
        try reports[0].sarif.replacingOccurrences(of: #""version": "2.1.0","#, with: "")
            .write(toFile: broken, atomically: true, encoding: .utf8)
        let sarifSchema = PolicyExamples.root.appending(path: "schemas/sarif-schema-2.1.0.json").path
        let verdicts = try await Self.validate(schema: sarifSchema, files: files + [broken])
        for file in files {
            #expect(verdicts[file] == [], "\(file): \(verdicts[file] ?? [])")
        }
        #expect(verdicts[broken]?.isEmpty == false)
        let log = try #require(
            try JSONSerialization.jsonObject(with: Data(reports[0].sarif.utf8)) as? [String: Any]
        )
        let run = try #require((log["runs"] as? [[String: Any]])?.first)
        let results = try #require(run["results"] as? [[String: Any]])
        #expect(results.count == findings.count)
        let location = try #require((results.first?["locations"] as? [[String: Any]])?.first)
        let physical = try #require(location["physicalLocation"] as? [String: Any])
        #expect((physical["region"] as? [String: Any])?["startLine"] as? Int == findings.first?.line)
        #expect((physical["artifactLocation"] as? [String: Any])?["uri"] as? String == "policies/bulwark%20policy.json")
    }
}
