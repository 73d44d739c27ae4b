import Foundation
import X509

/// Checks a ``PolicyFile`` for what weakens it or can lock users out (`bulwark policy lint`): one finding per
/// problem, each with a ``PolicyLintRule`` and the JSON pointer and line it is about.
///
/// ```swift
/// let findings = PolicyLinter().lint(try PolicyFile(contentsOfFile: "bulwark-policy.json"))
/// ```
public struct PolicyLinter: Sendable {
    /// The time expirations are judged at.
    public var now: Date
    /// Certificates the hosts serve (their chains), so that a pin can be told to name a leaf key; the policy's own
    /// pinned certificates and roots are known without them.
    public var knownCertificates: [Certificate]
    /// How close an expiration must be to be reported as coming (30 days).
    public var expiryWarning: TimeInterval = 30 * 86_400

    /// A linter judging expirations at `now`.
    public init(now: Date = Date(), knownCertificates: [Certificate] = []) {
        self.now = now
        self.knownCertificates = knownCertificates
    }

    /// Every finding for `policy`, in the order of the file.
    public func lint(_ policy: PolicyFile) -> [PolicyLintFinding] {
        var context = Context(policy: policy, linter: self)
        for host in policy.hosts {
            let pointer = "/hosts/" + PolicyFile.pointerToken(host.pattern.description)
            context.checkPattern(host.pattern, at: pointer)
            context.checkEvaluator(host.evaluator, host: host.pattern, at: pointer)
            context.checkRevocation(host.evaluator, host: host.pattern, at: pointer)
            context.checkShadowing(host, at: pointer)
        }
        if let other = policy.otherHosts {
            context.checkEvaluator(other, host: nil, at: "/otherHosts")
        }
        // The broad-pattern rule holds for every list of host patterns, not only the trust patterns: a wildcard over
        // a public suffix in the allowlist, the redirect hosts or a credential scope opens as much.
        for (index, entry) in (policy.allowlist ?? []).enumerated() {
            context.checkPattern(entry.pattern, at: "/allowlist/\(index)")
            context.checkAllowlistEntry(entry, at: "/allowlist/\(index)")
        }
        if let redirects = policy.redirects {
            for (index, pattern) in redirects.allowedHosts.enumerated() {
                context.checkPattern(pattern, at: "/redirects/allowedHosts/\(index)")
            }
            if redirects.allowsHTTPSToHTTP {
                context.add(
                    .httpsToHTTPRedirect,
                    "/redirects/allowHTTPSToHTTP",
                    "redirects from https to http are followed; every later hop travels unencrypted"
                )
            }
        }
        for scope in policy.credentialScopes {
            guard case .hosts(let patterns, _, _) = scope.rule else { continue }
            for (index, pattern) in patterns.enumerated() {
                context.checkPattern(
                    pattern,
                    at: "/credentialScopes/" + PolicyFile.pointerToken(scope.name) + "/hosts/\(index)"
                )
            }
        }
        for entry in policy.clientCertificates {
            context.checkPattern(
                entry.pattern,
                at: "/clientCertificates/" + PolicyFile.pointerToken(entry.pattern.description)
            )
        }
        if let proxy = policy.proxy {
            context.checkProxy(proxy.setting, at: "/proxy")
            for host in proxy.hosts {
                let pointer = "/proxy/hosts/" + PolicyFile.pointerToken(host.pattern.description)
                context.checkPattern(host.pattern, at: pointer)
                context.checkProxy(host.setting, at: pointer)
            }
        }
        if let list = policy.certificateTransparency {
            context.checkLogList(list, at: "/certificateTransparency")
        }
        return context.findings
    }

    /// The findings of `policy` that need `"insecure": true` (``PolicyLintRule/requiresInsecure``) when it does not
    /// say so; none when it does. What a signed bundle's policy is refused for.
    public func findingsRequiringInsecure(in policy: PolicyFile) -> [PolicyLintFinding] {
        guard !policy.insecure else { return [] }
        return self.lint(policy).filter(\.rule.requiresInsecure)
    }

    /// Public suffixes under which a wildcard covers hosts of many owners. A partial, built-in list (the public suffix
    /// list itself is not shipped): every single-label base counts too.
    static let publicSuffixes: Set<String> = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "com.au", "net.au", "org.au", "co.jp", "ne.jp", "or.jp",
        "co.nz", "com.br", "com.cn", "com.mx", "co.in", "co.za", "com.tr", "com.sg", "co.kr", "github.io",
        "gitlab.io", "herokuapp.com", "appspot.com", "azurewebsites.net", "cloudfront.net", "amazonaws.com",
        "s3.amazonaws.com", "blogspot.com", "netlify.app", "vercel.app", "pages.dev", "workers.dev",
        "firebaseapp.com", "web.app", "fly.dev", "onrender.com",
    ]

    /// Whether every host `inner` matches is matched by `outer` too.
    static func covers(_ outer: HostPattern, _ inner: HostPattern) -> Bool {
        if outer == inner { return true }
        switch (outer.kind, inner.kind) {
        case (_, .exact):
            return outer.matches(canonicalHost: inner.base)
        case (.anyDepthWildcard, .singleLabelWildcard), (.anyDepthWildcard, .anyDepthWildcard):
            return inner.base == outer.base || inner.base.hasSuffix("." + outer.base)
        default:
            return false
        }
    }

    private struct Context {
        let policy: PolicyFile
        let linter: PolicyLinter
        var findings: [PolicyLintFinding] = []
        /// Whether each known certificate (by its key pin and certificate pin) is a CA.
        var authority: [Pin: Bool] = [:]

        init(policy: PolicyFile, linter: PolicyLinter) {
            self.policy = policy
            self.linter = linter
            var known = linter.knownCertificates
            func collect(_ evaluator: PolicyFile.Evaluator) {
                known += evaluator.certificates.flatMap(\.certificates)
                known += evaluator.roots.certificates.flatMap(\.certificates)
                evaluator.members.forEach(collect)
            }
            policy.hosts.map(\.evaluator).forEach(collect)
            policy.otherHosts.map(collect)
            for certificate in known {
                let isAuthority = Self.isAuthority(certificate)
                self.authority[Pin.publicKey(of: certificate)] = isAuthority
                self.authority[Pin.certificate(of: certificate)] = isAuthority
            }
        }

        static func isAuthority(_ certificate: Certificate) -> Bool {
            if case .isCertificateAuthority = (try? certificate.extensions.basicConstraints) ?? .notCertificateAuthority
            {
                return true
            }
            return false
        }

        mutating func add(_ rule: PolicyLintRule, _ pointer: String, _ message: String) {
            var line = self.policy.line(of: pointer)
            var parent = pointer
            while line == nil, let slash = parent.lastIndex(of: "/") {
                parent = String(parent[..<slash])
                line = self.policy.line(of: parent)
            }
            self.findings.append(PolicyLintFinding(rule: rule, pointer: pointer, line: line, message: message))
        }

        mutating func checkLogList(_ list: CertificateTransparencyLogList, at pointer: String) {
            if list.logs.isEmpty {
                self.add(.certificateTransparencyNoLogs, pointer + "/logs", "the log list holds no log")
                return
            }
            if let expires = list.expires {
                let day = PolicyFile.formatDay(expires)
                if expires <= self.linter.now {
                    self.add(.certificateTransparencyStale, pointer + "/expires", "the log list expired on \(day)")
                } else if expires.timeIntervalSince(self.linter.now) <= 30 * 86_400 {
                    self.add(.certificateTransparencyStale, pointer + "/expires", "the log list expires on \(day)")
                }
            } else {
                self.add(
                    .certificateTransparencyStale,
                    pointer,
                    "the log list has no \"expires\": nothing says when it stops being current"
                )
            }
            var operators: Set<String> = []
            for log in list.logs where log.state.counts(sctIssuedAt: self.linter.now) {
                operators.insert(log.operatorName)
            }
            if operators.count < 2 {
                self.add(
                    .certificateTransparencySingleOperator,
                    pointer + "/logs",
                    "the usable logs belong to \(operators.count) operator\(operators.count == 1 ? "" : "s")"
                        + (operators.isEmpty ? "" : " (\(operators.sorted().joined(separator: ", ")))")
                )
            }
        }

        mutating func checkPattern(_ pattern: HostPattern, at pointer: String) {
            guard pattern.kind != .exact else { return }
            let singleLabel = !pattern.base.contains(".")
            if singleLabel || PolicyLinter.publicSuffixes.contains(pattern.base) {
                let what = singleLabel ? "the top-level domain" : "the public suffix"
                self.add(
                    .broadPattern,
                    pointer,
                    "\(pattern) covers every host under \(what) \(pattern.base), whoever owns it"
                )
            }
        }

        mutating func checkEvaluator(_ evaluator: PolicyFile.Evaluator, host: HostPattern?, at pointer: String) {
            let name = host.map(\.description) ?? "hosts matching no pattern"
            switch evaluator.kind {
            case .disabled:
                self.add(.validationDisabled, pointer + "/evaluator", "\(name): validation is disabled")
            case .composite:
                for (index, member) in evaluator.members.enumerated() {
                    self.checkEvaluator(member, host: host, at: pointer + "/evaluators/\(index)")
                }
            default:
                break
            }
            if evaluator.kind != .disabled && evaluator.kind != .composite && !evaluator.validateHost {
                self.add(.hostNotValidated, pointer + "/validateHost", "\(name): the host name is not validated")
            }
            if (evaluator.kind == .publicKeys || evaluator.kind == .pinnedCertificates)
                && !evaluator.performDefaultValidation
            {
                self.add(
                    .defaultValidationSkipped,
                    pointer + "/performDefaultValidation",
                    "\(name): chains are not validated to a trusted root"
                )
            }
            if evaluator.kind == .publicKeys, let pinSet = evaluator.pinSet {
                self.checkPinSet(pinSet, name: name, at: pointer)
            }
            if evaluator.kind == .pinnedCertificates {
                let certificates = evaluator.certificates.flatMap(\.certificates)
                if !certificates.isEmpty && !certificates.contains(where: Self.isAuthority) {
                    self.add(
                        .leafPinsOnly,
                        pointer + "/certificates",
                        "\(name): every pinned certificate is a leaf certificate"
                    )
                }
            }
        }

        mutating func checkPinSet(_ pinSet: PinSet, name: String, at pointer: String) {
            if pinSet.enforcement == .enforce && pinSet.pins.count < 2 {
                self.add(.singlePin, pointer + "/pins", "\(name): the pin set has one pin and no backup")
            }
            if pinSet.enforcement == .reportOnly {
                self.add(.reportOnly, pointer + "/reportOnly", "\(name): pin mismatches are only reported")
            }
            if pinSet.pins.allSatisfy({ self.authority[$0] == false }) {
                self.add(.leafPinsOnly, pointer + "/pins", "\(name): every pin names a leaf certificate's key")
            }
            if let expiration = pinSet.expiration {
                let day = PolicyFile.formatDay(expiration)
                if expiration <= self.linter.now {
                    self.add(.pinSetExpired, pointer + "/expires", "\(name): the pin set expired on \(day)")
                } else if expiration.timeIntervalSince(self.linter.now) <= self.linter.expiryWarning {
                    let days = Int((expiration.timeIntervalSince(self.linter.now) / 86_400).rounded(.up))
                    self.add(
                        .pinSetExpiring,
                        pointer + "/expires",
                        "\(name): the pin set expires on \(day), in \(days) day\(days == 1 ? "" : "s")"
                    )
                }
            }
        }

        mutating func checkRevocation(_ evaluator: PolicyFile.Evaluator, host: HostPattern, at pointer: String) {
            func pins(_ evaluator: PolicyFile.Evaluator) -> Bool {
                evaluator.kind == .publicKeys || evaluator.kind == .pinnedCertificates
                    || evaluator.members.contains(
                        where: pins
                    )
            }
            func checked(_ evaluator: PolicyFile.Evaluator) -> Bool {
                evaluator.revocation != nil || evaluator.members.contains(where: checked)
            }
            if pins(evaluator) && !checked(evaluator) {
                self.add(
                    .pinnedWithoutRevocation,
                    pointer,
                    "\(host): pinned, and no revocation check runs for its certificates"
                )
            }
        }

        mutating func checkShadowing(_ host: PolicyFile.Host, at pointer: String) {
            for other in self.policy.hosts where other.pattern != host.pattern {
                guard PolicyLinter.covers(other.pattern, host.pattern),
                    host.pattern.specificity > other.pattern.specificity,
                    other.evaluator != host.evaluator
                else { continue }
                self.add(
                    .shadowedPattern,
                    pointer,
                    "\(host.pattern) is decided by its own \(host.evaluator.kind) entry, not by the "
                        + "\(other.evaluator.kind) entry of \(other.pattern) that also covers it"
                )
            }
        }

        mutating func checkProxy(_ setting: PolicyFile.Proxy.Setting, at pointer: String) {
            guard case .url(let url) = setting.use, setting.credentialsFile != nil, !url.hasPrefix("https://") else {
                return
            }
            self.add(
                .cleartextProxyCredentials,
                pointer + "/credentialsFile",
                "\(url): the proxy credentials travel to the proxy in cleartext"
            )
        }

        mutating func checkAllowlistEntry(_ entry: PolicyFile.AllowlistEntry, at pointer: String) {
            guard self.policy.otherHosts == nil else { return }
            if !self.policy.hosts.contains(where: { PolicyLinter.covers($0.pattern, entry.pattern) }) {
                self.add(
                    .allowlistedHostWithoutEvaluator,
                    pointer,
                    "\(entry.pattern) is allowlisted, but no host pattern covers all of its hosts"
                )
            }
        }
    }
}
