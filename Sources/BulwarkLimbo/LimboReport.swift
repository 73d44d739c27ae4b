import Foundation

/// The outcome of one test case, in the x509-limbo harness format.
public struct LimboResult: Codable, Sendable, Hashable {
    /// A case's result, as x509-limbo spells it.
    public enum Outcome: String, Codable, Sendable {
        /// The chain was accepted.
        case success = "SUCCESS"
        /// The chain was refused.
        case failure = "FAILURE"
        /// The case was not run (what it tests is not modelled).
        case skipped = "SKIPPED"
    }

    /// The case's identifier in the suite.
    public var id: String
    /// What Bulwark decided.
    public var actualResult: Outcome
    /// Why: the refusal's reason or the reason for skipping.
    public var context: String
    /// Not part of the harness output: what the suite expected.
    public var expected: Outcome
    /// Not part of the harness output: `core` or `bettertls`.
    public var group: String

    enum CodingKeys: String, CodingKey {
        case id
        case actualResult = "actual_result"
        case context
    }

    /// A result, with what the suite expected and the case's group.
    public init(id: String, actualResult: Outcome, context: String, expected: Outcome, group: String) {
        self.id = id
        self.actualResult = actualResult
        self.context = context
        self.expected = expected
        self.group = group
    }

    /// Reads a result of the harness format; the expectation is unknown (`skipped`) and the group comes from the
    /// identifier.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decode(String.self, forKey: .id)
        self.actualResult = try container.decode(Outcome.self, forKey: .actualResult)
        self.context = try container.decode(String.self, forKey: .context)
        self.expected = .skipped
        self.group = self.id.hasPrefix("bettertls::") ? "bettertls" : "core"
    }

    /// The test passed: its result is the expected one.
    public var passed: Bool { self.actualResult == self.expected }
    /// The engine accepted a chain the suite says must be refused.
    public var isUnexpectedSuccess: Bool { self.actualResult == .success && self.expected == .failure }
}

/// The results of a whole run, with counts per group and expected result.
public struct LimboReport: Sendable {
    /// Counts for one group of test cases.
    public struct Tally: Sendable, Hashable {
        /// Cases whose result was the expected one.
        public var passed = 0
        /// Cases whose result was not the expected one.
        public var failed = 0
        /// Cases not run.
        public var skipped = 0
        /// All cases counted.
        public var total: Int { self.passed + self.failed + self.skipped }
    }

    /// The harness name written to the results file.
    public var harness: String
    /// Every case's result, in the suite's order.
    public var results: [LimboResult]
    /// How long the run took.
    public var elapsedSeconds: Double

    /// The tally of the cases of `group` (`core`, `bettertls` or nil for all) that expect `expected`
    /// (or nil for both).
    public func tally(group: String? = nil, expected: LimboResult.Outcome? = nil) -> Tally {
        var tally = Tally()
        for result in self.results
        where (group == nil || result.group == group) && (expected == nil || result.expected == expected) {
            if result.actualResult == .skipped {
                tally.skipped += 1
            } else if result.passed {
                tally.passed += 1
            } else {
                tally.failed += 1
            }
        }
        return tally
    }

    /// Every case the engine accepted although the suite expects a refusal.
    public var unexpectedSuccesses: [LimboResult] { self.results.filter(\.isUnexpectedSuccess) }

    /// The harness JSON: `{"version":1,"harness":…,"results":[{"id","actual_result","context"}]}`.
    public func harnessJSON() throws -> Data {
        struct Output: Encodable {
            var version = 1
            var harness: String
            var results: [LimboResult]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(Output(harness: self.harness, results: self.results))
    }

    /// One `label: N passed, N failed, N skipped` line per group and expected result, then the totals.
    public var summaryLines: [String] {
        var lines: [String] = []
        for group in ["core", "bettertls"] {
            for expected in [LimboResult.Outcome.success, .failure] {
                let tally = self.tally(group: group, expected: expected)
                lines.append("\(group)-\(expected.rawValue): \(Self.format(tally))")
            }
        }
        lines.append("core: \(Self.format(self.tally(group: "core")))")
        lines.append("bettertls: \(Self.format(self.tally(group: "bettertls")))")
        lines.append("unexpected-successes: \(self.unexpectedSuccesses.count)")
        lines.append("all: \(Self.format(self.tally()))")
        return lines
    }

    static func format(_ tally: Tally) -> String {
        "\(tally.passed) passed, \(tally.failed) failed, \(tally.skipped) skipped"
    }
}
