/// A rule of `bulwark policy lint`: a stable code, a name, a severity and a one-sentence explanation.
///
/// Codes never change meaning and are never reused; new rules get new codes.
public struct PolicyLintRule: Hashable, Sendable, CustomStringConvertible {
    /// How serious a finding is; the linter's exit status follows the most serious one.
    public struct Severity: Hashable, Sendable, Comparable, CustomStringConvertible {
        private let rank: Int
        private let name: String
        private init(_ rank: Int, _ name: String) {
            self.rank = rank
            self.name = name
        }

        /// Worth knowing; does not change the exit status.
        public static let note = Severity(0, "note")
        /// Weakens the policy or will soon: exit status 1.
        public static let warning = Severity(1, "warning")
        /// Leaves hosts unprotected or users locked out: exit status 2.
        public static let error = Severity(2, "error")

        /// `note`, `warning` or `error` (SARIF's `level` values).
        public var description: String { self.name }

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    /// The stable code, such as `BWP001`.
    public let code: String
    /// A short name, such as `single-pin`.
    public let name: String
    /// The severity of every finding of the rule.
    public let severity: Severity
    /// What the rule finds and why it matters, in one sentence.
    public let explanation: String

    private init(_ code: String, _ name: String, _ severity: Severity, _ explanation: String) {
        self.code = code
        self.name = name
        self.severity = severity
        self.explanation = explanation
    }

    /// Whether a policy must say `"insecure": true` to be accepted with a finding of this rule: in a signed bundle
    /// (at signing and when a client applies it) for every rule of severity error. The decoder itself refuses the
    /// options that weaken trust by construction (``validationDisabled``, ``hostNotValidated``,
    /// ``httpsToHTTPRedirect``) in any policy file without the flag.
    public var requiresInsecure: Bool { self.severity == .error && self != .invalidPolicy }

    /// The rules whose options weaken trust by construction: the decoder refuses them in any policy file that does
    /// not say `"insecure": true`, whatever the date.
    public static let weakeningByConstruction: [PolicyLintRule] = [
        .validationDisabled, .hostNotValidated, .httpsToHTTPRedirect,
    ]

    /// `BWP001 single-pin`.
    public var description: String { "\(self.code) \(self.name)" }

    /// The policy file cannot be read or decoded.
    public static let invalidPolicy = PolicyLintRule(
        "BWP000",
        "invalid-policy",
        .error,
        "The file is not a valid bulwark-policy/1 policy, so no client can load it."
    )
    /// An enforcing pin set of one pin.
    public static let singlePin = PolicyLintRule(
        "BWP001",
        "single-pin",
        .error,
        "An enforcing pin set holds a single pin and no backup, so one key change locks every user out."
    )
    /// Every pin of a set is a leaf key or leaf certificate.
    public static let leafPinsOnly = PolicyLintRule(
        "BWP002",
        "leaf-pins-only",
        .warning,
        "Every pin of the set names a leaf certificate or its key, which changes with each renewal; pin an "
            + "intermediate or root key as well."
    )
    /// A pin set whose expiration has passed.
    public static let pinSetExpired = PolicyLintRule(
        "BWP003",
        "pin-set-expired",
        .error,
        "The pin set's expiration date has passed, so its pins are no longer enforced."
    )
    /// A pin set that expires within 30 days.
    public static let pinSetExpiring = PolicyLintRule(
        "BWP004",
        "pin-set-expiring",
        .warning,
        "The pin set expires within 30 days, after which its pins are no longer enforced."
    )
    /// The `disabled` evaluator.
    public static let validationDisabled = PolicyLintRule(
        "BWP005",
        "validation-disabled",
        .error,
        "The disabled evaluator trusts any certificate for any name, so anyone on the path can read and change "
            + "the traffic."
    )
    /// `validateHost: false`.
    public static let hostNotValidated = PolicyLintRule(
        "BWP006",
        "host-not-validated",
        .error,
        "With validateHost false a certificate issued for any name is accepted."
    )
    /// `performDefaultValidation: false`.
    public static let defaultValidationSkipped = PolicyLintRule(
        "BWP007",
        "default-validation-skipped",
        .warning,
        "With performDefaultValidation false whatever chains to a pinned key or certificate is trusted, with no "
            + "trusted root behind it."
    )
    /// Redirects from https to http are followed.
    public static let httpsToHTTPRedirect = PolicyLintRule(
        "BWP008",
        "https-to-http-redirect",
        .error,
        "Following https-to-http redirects sends the rest of the chain unencrypted."
    )
    /// A report-only pin set.
    public static let reportOnly = PolicyLintRule(
        "BWP009",
        "report-only",
        .warning,
        "The pin set is report-only, so a pin mismatch is reported but never refused."
    )
    /// A wildcard over a top-level domain or a public suffix.
    public static let broadPattern = PolicyLintRule(
        "BWP010",
        "broad-pattern",
        .error,
        "The pattern's wildcard covers a whole top-level domain or public suffix, so it applies to hosts of "
            + "unrelated owners."
    )
    /// A pattern some of whose hosts a more specific pattern decides differently.
    public static let shadowedPattern = PolicyLintRule(
        "BWP011",
        "shadowed-pattern",
        .warning,
        "A more specific pattern decides some of this pattern's hosts with another evaluator, so this pattern's "
            + "rules do not apply to them."
    )
    /// An allowlisted host no trust pattern covers.
    public static let allowlistedHostWithoutEvaluator = PolicyLintRule(
        "BWP012",
        "allowlisted-host-without-evaluator",
        .warning,
        "Hosts of this allowlist entry match no trust pattern, so every connection to them is refused."
    )
    /// A pinned host without a revocation check.
    public static let pinnedWithoutRevocation = PolicyLintRule(
        "BWP013",
        "pinned-without-revocation",
        .warning,
        "The host is pinned but its certificates are not checked for revocation, so a revoked certificate with a "
            + "pinned key stays trusted."
    )
    /// Proxy credentials sent to an `http://` or SOCKS5 proxy, over cleartext TCP.
    public static let cleartextProxyCredentials = PolicyLintRule(
        "BWP014",
        "cleartext-proxy-credentials",
        .warning,
        "The proxy credentials go to an http:// or SOCKS5 proxy in cleartext, readable by anyone on the path to the "
            + "proxy; an https:// proxy carries them inside TLS."
    )

    /// A Certificate Transparency log list with no log: every certificate of a host that enforces CT is refused.
    public static let certificateTransparencyNoLogs = PolicyLintRule(
        "BWP015",
        "ct-log-list-empty",
        .warning,
        "The Certificate Transparency log list holds no log, so no SCT can count and every host that enforces CT is "
            + "locked out."
    )
    /// A log list past its expiry (or without one), or expiring within 30 days.
    public static let certificateTransparencyStale = PolicyLintRule(
        "BWP016",
        "ct-log-list-stale",
        .warning,
        "The Certificate Transparency log list is stale or expires soon: a stale list cannot say which logs are "
            + "current, and CT is then only reported, never enforced."
    )
    /// The logs whose SCTs can count belong to fewer than two operators: Chrome's rule cannot be met.
    public static let certificateTransparencySingleOperator = PolicyLintRule(
        "BWP017",
        "ct-single-operator",
        .warning,
        "The usable logs of the Certificate Transparency list belong to fewer than two operators, and the policy "
            + "needs SCTs from two: every host that enforces CT is locked out."
    )

    /// Every rule, in code order.
    public static let all: [PolicyLintRule] = [
        .invalidPolicy, .singlePin, .leafPinsOnly, .pinSetExpired, .pinSetExpiring, .validationDisabled,
        .hostNotValidated, .defaultValidationSkipped, .httpsToHTTPRedirect, .reportOnly, .broadPattern,
        .shadowedPattern, .allowlistedHostWithoutEvaluator, .pinnedWithoutRevocation, .cleartextProxyCredentials,
        .certificateTransparencyNoLogs, .certificateTransparencyStale, .certificateTransparencySingleOperator,
    ]
}

/// One finding of the linter: the rule, where (JSON pointer and line), and what was found.
public struct PolicyLintFinding: Hashable, Sendable, CustomStringConvertible {
    /// The rule.
    public let rule: PolicyLintRule
    /// The JSON pointer of the value the finding is about.
    public let pointer: String
    /// The line of that value, when known.
    public let line: Int?
    /// What was found, in one sentence naming the host or value.
    public let message: String

    /// A finding.
    public init(rule: PolicyLintRule, pointer: String, line: Int?, message: String) {
        self.rule = rule
        self.pointer = pointer
        self.line = line
        self.message = message
    }

    /// `error BWP001 single-pin /hosts/api.example.com/pins: message`.
    public var description: String {
        "\(self.rule.severity) \(self.rule) \(self.pointer.isEmpty ? "/" : self.pointer): \(self.message)"
    }
}
