import Foundation

/// The findings of one linted file, written as text, JSON or SARIF 2.1.0, and the exit status they call for.
public struct PolicyLintReport: Sendable {
    /// The file as named on the command line (written into every format).
    public let file: String
    /// The findings, in file order.
    public let findings: [PolicyLintFinding]

    /// A report of `findings` for `file`.
    public init(file: String, findings: [PolicyLintFinding]) {
        self.file = file
        self.findings = findings
    }

    /// The report of a file that could not be decoded: one ``PolicyLintRule/invalidPolicy`` finding.
    public init(file: String, error: PolicyFileError) {
        self.init(
            file: file,
            findings: [
                PolicyLintFinding(
                    rule: .invalidPolicy,
                    pointer: error.pointer,
                    line: error.line,
                    message: error.explanation
                )
            ]
        )
    }

    /// The most serious severity found, or nil when there are no findings.
    public var worstSeverity: PolicyLintRule.Severity? {
        self.findings.map(\.rule.severity).max()
    }

    /// 0 with no findings or notes only, 1 with warnings, 2 with errors, 3 when the file is not a valid policy.
    public var exitStatus: Int32 {
        if self.findings.contains(where: { $0.rule == .invalidPolicy }) { return 3 }
        switch self.worstSeverity {
        case PolicyLintRule.Severity.error?: return 2
        case PolicyLintRule.Severity.warning?: return 1
        default: return 0
        }
    }

    private func count(_ severity: PolicyLintRule.Severity) -> Int {
        self.findings.filter { $0.rule.severity == severity }.count
    }

    /// One line per finding, `FILE:LINE: SEVERITY CODE NAME POINTER: MESSAGE`, then a summary line.
    public var text: String {
        var lines = self.findings.map { finding in
            let place = finding.line.map { "\(self.file):\($0)" } ?? self.file
            let pointer = finding.pointer.isEmpty ? "/" : finding.pointer
            return "\(place): \(finding.rule.severity) \(finding.rule.code) \(finding.rule.name) \(pointer): "
                + finding.message
        }
        let errors = self.count(.error)
        let warnings = self.count(.warning)
        let notes = self.count(.note)
        func plural(_ count: Int, _ word: String) -> String { "\(count) \(word)\(count == 1 ? "" : "s")" }
        lines.append(
            "\(self.file): \(plural(errors, "error")), \(plural(warnings, "warning")), \(plural(notes, "note"))"
        )
        return lines.joined(separator: "\n") + "\n"
    }

    /// `{"file":…,"findings":[{"code","name","severity","pointer","line","message","explanation"}],"errors":N,
    /// "warnings":N,"notes":N}`, pretty-printed, keys in that order.
    public var json: String {
        let findings = self.findings.map { finding in
            var members: [PolicyJSON.Member] = [
                .init("code", PolicyJSON(.string(finding.rule.code))),
                .init("name", PolicyJSON(.string(finding.rule.name))),
                .init("severity", PolicyJSON(.string(finding.rule.severity.description))),
                .init("pointer", PolicyJSON(.string(finding.pointer))),
            ]
            if let line = finding.line { members.append(.init("line", PolicyJSON(.number(String(line))))) }
            members.append(.init("message", PolicyJSON(.string(finding.message))))
            members.append(.init("explanation", PolicyJSON(.string(finding.rule.explanation))))
            return PolicyJSON(.object(members))
        }
        return PolicyJSON(
            .object([
                .init("file", PolicyJSON(.string(self.file))),
                .init("findings", PolicyJSON(.array(findings))),
                .init("errors", PolicyJSON(.number(String(self.count(.error))))),
                .init("warnings", PolicyJSON(.number(String(self.count(.warning))))),
                .init("notes", PolicyJSON(.number(String(self.count(.note))))),
            ])
        ).formatted()
    }

    /// A SARIF 2.1.0 log: one run whose tool lists every rule, one result per finding with the file and line as its
    /// physical location and the JSON pointer as its logical location, so code-scanning tools show it on the line.
    public var sarif: String {
        let rules = PolicyLintRule.all.map { rule in
            PolicyJSON(
                .object([
                    .init("id", PolicyJSON(.string(rule.code))),
                    .init("name", PolicyJSON(.string(Self.pascalCase(rule.name)))),
                    .init(
                        "shortDescription",
                        PolicyJSON(.object([.init("text", PolicyJSON(.string(rule.explanation)))]))
                    ),
                    .init(
                        "defaultConfiguration",
                        PolicyJSON(.object([.init("level", PolicyJSON(.string(rule.severity.description)))]))
                    ),
                ])
            )
        }
        let results = self.findings.map { finding in
            var physical: [PolicyJSON.Member] = [
                .init("artifactLocation", PolicyJSON(.object([.init("uri", PolicyJSON(.string(Self.uri(self.file))))])))
            ]
            if let line = finding.line {
                physical.append(
                    .init("region", PolicyJSON(.object([.init("startLine", PolicyJSON(.number(String(line))))])))
                )
            }
            let location = PolicyJSON(
                .object([
                    .init("physicalLocation", PolicyJSON(.object(physical))),
                    .init(
                        "logicalLocations",
                        PolicyJSON(
                            .array([
                                PolicyJSON(
                                    .object([
                                        .init("fullyQualifiedName", PolicyJSON(.string(finding.pointer))),
                                        .init("kind", PolicyJSON(.string("member"))),
                                    ])
                                )
                            ])
                        )
                    ),
                ])
            )
            let index = PolicyLintRule.all.firstIndex(of: finding.rule) ?? 0
            return PolicyJSON(
                .object([
                    .init("ruleId", PolicyJSON(.string(finding.rule.code))),
                    .init("ruleIndex", PolicyJSON(.number(String(index)))),
                    .init("level", PolicyJSON(.string(finding.rule.severity.description))),
                    .init("message", PolicyJSON(.object([.init("text", PolicyJSON(.string(finding.message)))]))),
                    .init("locations", PolicyJSON(.array([location]))),
                ])
            )
        }
        let driver = PolicyJSON(
            .object([
                .init("name", PolicyJSON(.string("bulwark policy lint"))),
                .init("semanticVersion", PolicyJSON(.string("1.0.0"))),
                .init("rules", PolicyJSON(.array(rules))),
            ])
        )
        let run = PolicyJSON(
            .object([
                .init("tool", PolicyJSON(.object([.init("driver", driver)]))),
                .init("results", PolicyJSON(.array(results))),
            ])
        )
        return PolicyJSON(
            .object([
                .init("$schema", PolicyJSON(.string("https://json.schemastore.org/sarif-2.1.0.json"))),
                .init("version", PolicyJSON(.string("2.1.0"))),
                .init("runs", PolicyJSON(.array([run]))),
            ])
        ).formatted()
    }

    /// `single-pin` as `SinglePin` (SARIF's rule names are identifiers).
    private static func pascalCase(_ name: String) -> String {
        name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// A relative URI reference for a file path: characters outside RFC 3986's unreserved set and `/` escaped.
    private static func uri(_ path: String) -> String {
        let allowed = CharacterSet(
            charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/"
        )
        return path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
    }
}
