import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

/// Differential trust testing (issue 23): mutated chains from ``ChainMutationEngine`` go to Bulwark's default
/// evaluator and to `openssl verify -x509_strict -purpose sslserver -verify_hostname HOST` at the same second.
/// A chain Bulwark trusts and OpenSSL refuses fails the test unless its mutation is in ``allowlist`` with the
/// reason the difference is right; a chain OpenSSL trusts and Bulwark refuses (Bulwark stricter) is reported with
/// the reason from ``stricter``. The table is printed on lines starting with `differential:`.
///
/// `BULWARK_DIFF_CHAINS` (default 400) and `BULWARK_DIFF_SEED` (default 23) set the length and the sequence; the
/// first ``ChainMutationEngine/variantCount`` chains apply every single mutation once. `BULWARK_DIFF_VERBOSE`
/// also lists the mutations on which both agree. `scripts/differential` runs a long version. Runs in the
/// external-programs process of `scripts/test`, since it spawns openssl.
@Suite(
    "Differential trust testing: Bulwark trusts no mutated chain that OpenSSL refuses, unless allowlisted",
    .tags(.externalPeers)
)
struct DifferentialTrustTests {
    static let environment = ProcessInfo.processInfo.environment
    static let chainCount = Int(environment["BULWARK_DIFF_CHAINS"] ?? "") ?? 400
    static let seed = UInt64(environment["BULWARK_DIFF_SEED"] ?? "") ?? 23
    static let concurrency = 4

    /// A known, explained case of Bulwark trusting a chain that OpenSSL refuses.
    struct Allowance {
        /// The mutation's label (`target: change`), as ``MutatedChain/variants`` holds it.
        var variant: String
        /// For a disagreement only two mutations together produce: text in the other mutation's label.
        var combinedWith: String?
        var reason: String

        init(variant: String, combinedWith: String? = nil, reason: String) {
            self.variant = variant
            self.combinedWith = combinedWith
            self.reason = reason
        }

        func matches(_ variants: [String]) -> Bool {
            guard variants.contains(self.variant) else { return false }
            guard let combinedWith else { return true }
            return variants.contains { $0 != self.variant && $0.contains(combinedWith) }
        }
    }

    /// Chains Bulwark may trust although OpenSSL refuses them, each with the reason Bulwark is right (or the
    /// difference does not matter). Every entry must still occur: an entry that no longer produces a disagreement
    /// fails the test, so the list cannot go stale.
    static let allowlist: [Allowance] = [
        Allowance(variant: "leaf: notAfter is the evaluation second", reason: Self.inclusiveNotAfter),
        Allowance(variant: "intermediate: notAfter is the evaluation second", reason: Self.inclusiveNotAfter),
        Allowance(variant: "root: notAfter is the evaluation second", reason: Self.inclusiveNotAfter),
        Allowance(
            variant: "intermediate: no key usage",
            reason: "RFC 5280 4.2.1.3 obliges the CA that issues the certificate, not the relying party: web PKI "
                + "verifiers (Chromium, Go, rustls-webpki) check keyCertSign only when key usage is present, and so "
                + "does Bulwark; OpenSSL demands the extension only under -x509_strict"
        ),
        Allowance(
            variant: "root: no key usage",
            reason: "a trust anchor is trusted by its name and key (RFC 5280 6.1.1 d), and older roots lack key "
                + "usage; OpenSSL's -x509_strict checks the anchor like any CA"
        ),
        Allowance(
            variant: "root: anyExtendedKeyUsage only",
            reason: "RFC 5280 4.2.1.12: anyExtendedKeyUsage restricts nothing, so an anchor carrying it allows "
                + "serverAuth (with enforcesRootProfile any EKU on a root is refused); OpenSSL's purpose check "
                + "does not count anyExtendedKeyUsage as serverAuth"
        ),
        Allowance(
            variant: "leaf: IP address matches",
            combinedWith: ": permits ",
            reason: "RFC 5280 4.2.1.10: DNS name constraints apply to DNS names, and this leaf has only an IP "
                + "address SAN; OpenSSL also holds a common name (here 127.0.0.1) to DNS constraints when there is no "
                + "DNS SAN, a rule of the common-name fallback Bulwark does not have"
        ),
    ]

    static let inclusiveNotAfter =
        "RFC 5280 4.1.2.5: the validity period includes notAfter; OpenSSL treats the "
        + "notAfter second itself as expired (one second, on the side the standard gives)"

    /// Mutations Bulwark must refuse whatever OpenSSL says: web PKI rules OpenSSL's verify does not apply at its
    /// default security level (SHA-1 was trusted by both until the differential run showed it).
    static let bulwarkMustRefuse: Set<String> = [
        "leaf: signed sha1WithRSAEncryption", "intermediate: signed sha1WithRSAEncryption",
        "leaf: RSA-1024 key", "intermediate: RSA-1024 key", "root: RSA-1024 key",
    ]

    /// Why Bulwark refuses chains that OpenSSL trusts (reported, not failures), by mutation label.
    static let stricter: [String: String] = {
        var reasons: [String: String] = [
            "leaf: serverAuth and anyExtendedKeyUsage":
                "CA/Browser Forum 7.1.2.7.10 forbids anyExtendedKeyUsage in a server certificate",
            "leaf: no extended key usage":
                "Bulwark requires serverAuth in the leaf, as browsers do; OpenSSL reads no EKU as no restriction",
            "leaf: critical serverAuth": "the CA/Browser Forum profile: a server certificate's EKU is not critical",
            "leaf: CA:TRUE": "a CA certificate cannot be a server certificate (CA/Browser Forum, rustls-webpki)",
            "leaf: carries name constraints": "name constraints belong in CA certificates only (RFC 5280 4.2.1.10)",
            "leaf: partial-label wildcard w*":
                "a wildcard counts only as the whole leftmost label (RFC 6125 6.4.3 as browsers apply it)",
            "leaf: underscore label": "a SAN dNSName must use the preferred name syntax (letters, digits, hyphens)",
            "leaf: no SAN, host in the CN":
                "Bulwark never reads the common name (CA/Browser Forum, Chrome 58); OpenSSL falls back to it",
            "leaf: IP SAN only, DNS host":
                "the host is only in the common name, which Bulwark never reads; OpenSSL falls back to it",
            "leaf: critical SAN with a subject":
                "RFC 5280 4.2.1.6: the SAN is critical exactly when the subject is empty",
        ]
        for target in ["intermediate", "root"] {
            reasons["\(target): permits .example.test"] =
                "a leading period is not RFC 5280 dNSName constraint "
                + "syntax; Bulwark refuses it rather than guess (OpenSSL reads it as subdomains only)"
            reasons["\(target): permits example.test, not critical"] =
                "RFC 5280 4.2.1.10: name constraints must be critical"
        }
        for target in ["leaf", "intermediate", "root"] {
            reasons["\(target): RSA-1024 key"] =
                "RSA keys under 2048 bits are refused anywhere in the chain "
                + "(CA/Browser Forum 6.1.5); openssl verify checks key strength only with -auth_level"
            reasons["\(target): critical certificate policies (anyPolicy)"] =
                "swift-certificates processes no "
                + "certificate policies, so a critical policies extension is an unhandled critical extension "
                + "(RFC 5280 4.2); OpenSSL implements policy processing"
            reasons["\(target): signed sha1WithRSAEncryption"] =
                "SHA-1 signatures are refused below the anchor "
                + "(CA/Browser Forum 7.1.3.2, browsers since 2017); OpenSSL 3.0 accepts them unless -auth_level "
                + "is 1 or more. Both trusted them before this test"
        }
        return reasons
    }()

    /// One chain's two verdicts.
    struct Outcome: Sendable {
        var chain: MutatedChain
        var bulwarkTrusts: Bool
        var bulwarkReason: String
        var opensslTrusts: Bool
        var opensslReason: String

        var cell: Cell {
            switch (self.bulwarkTrusts, self.opensslTrusts) {
            case (true, true): return .bothTrust
            case (false, false): return .bothRefuse
            case (true, false): return .bulwarkOnly
            case (false, true): return .opensslOnly
            }
        }
    }

    enum Cell: CaseIterable { case bothTrust, bothRefuse, bulwarkOnly, opensslOnly }

    @Test("Mutated chains: Bulwark trusts nothing OpenSSL refuses, except the allowlisted differences")
    func differentialAgainstOpenSSL() async throws {
        let openssl = try ExternalPeers.findTool("openssl")
        let keys = try ChainMutationEngine.KeyPool.make()
        var engine = ChainMutationEngine(seed: Self.seed, now: Date(), keys: keys)
        let now = engine.now
        let directory = try ExternalPeers.makeDirectory("differential")
        defer { try? FileManager.default.removeItem(at: directory) }
        var chains: [MutatedChain] = []
        for _ in 0..<Self.chainCount {
            chains.append(try engine.next())
        }
        let started = ContinuousClock.now
        var outcomes: [Outcome] = []
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            var pending = chains.makeIterator()
            for _ in 0..<Self.concurrency {
                guard let chain = pending.next() else { break }
                group.addTask { try await Self.compare(chain, at: now, openssl: openssl, directory: directory) }
            }
            while let outcome = try await group.next() {
                outcomes.append(outcome)
                if let chain = pending.next() {
                    group.addTask { try await Self.compare(chain, at: now, openssl: openssl, directory: directory) }
                }
            }
        }
        outcomes.sort { $0.chain.index < $1.chain.index }
        let elapsed = ContinuousClock.now - started
        Self.printTable(outcomes, elapsed: elapsed)

        // Bulwark trusts, OpenSSL refuses: a failure unless allowlisted. A combined case passes when one of its
        // mutations is allowlisted: each mutation also runs alone in the first pass, where it is judged alone.
        for outcome in outcomes where outcome.cell == .bulwarkOnly {
            if Self.allowlist.contains(where: { $0.matches(outcome.chain.variants) }) { continue }
            Issue.record(
                """
                differential: Bulwark trusts a chain OpenSSL refuses: #\(outcome.chain.index) \
                [\(outcome.chain.kind.rawValue)] \(outcome.chain.label), host \(outcome.chain.host); \
                openssl: \(outcome.opensslReason)
                """
            )
        }
        // The first pass runs every mutation alone: an allowlisted mutation must still disagree there.
        if Self.chainCount >= ChainMutationEngine.variantCount {
            let disagreeing = Set(
                outcomes.filter { $0.cell == .bulwarkOnly && $0.chain.variants.count == 1 }.map(\.chain.label)
            )
            for entry in Self.allowlist where entry.combinedWith == nil && !disagreeing.contains(entry.variant) {
                Issue.record("differential: allowlist entry no longer disagrees with OpenSSL: \(entry.variant)")
            }
        }
        for outcome in outcomes where outcome.chain.variants.contains(where: Self.bulwarkMustRefuse.contains) {
            let chain = "#\(outcome.chain.index) (\(outcome.chain.label))"
            #expect(!outcome.bulwarkTrusts, "differential: Bulwark trusts \(chain), which the web PKI refuses")
        }
        // The harness itself: valid chains must be trusted by both, and the mutations must be refused by both
        // often enough that a broken comparison (one side always refusing) cannot pass.
        for outcome in outcomes where outcome.chain.kind == .baseline {
            let chain = "valid chain #\(outcome.chain.index) (\(outcome.chain.label))"
            #expect(
                outcome.cell == .bothTrust,
                "\(chain): bulwark \(outcome.bulwarkReason), openssl \(outcome.opensslReason)"
            )
        }
        #expect(outcomes.count == Self.chainCount)
        #expect(outcomes.filter { $0.cell == .bothRefuse }.count > Self.chainCount / 5)
        #expect(outcomes.filter { $0.cell == .bothTrust }.count > Self.chainCount / 5)
    }

    /// Both verdicts for one chain, at the same second.
    static func compare(_ chain: MutatedChain, at now: Date, openssl: URL, directory: URL) async throws -> Outcome {
        let evaluator = DefaultTrustEvaluator(roots: .custom([chain.root]))
        let decision = await evaluator.evaluate(chain.presented, forHost: chain.host, at: now)
        let bulwarkReason =
            decision.refusal.map { refusal in
                refusal.reasons.map(\.description).joined(separator: "; ")
            } ?? "trusted"

        let folder = directory.appending(path: "chain-\(chain.index)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func write(_ certificates: [Certificate], _ name: String) throws -> String {
            let url = folder.appending(path: name)
            let pem = try certificates.map { try $0.serializeAsPEM().pemString + "\n" }.joined()
            try pem.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        var arguments = [
            "verify", "-x509_strict", "-purpose", "sslserver",
            chain.hostIsIPAddress ? "-verify_ip" : "-verify_hostname", chain.host,
            "-attime", String(Int(now.timeIntervalSince1970)),
            "-no-CApath", "-no-CAstore",
            "-CAfile", try write([chain.root], "root.pem"),
        ]
        if chain.presented.count > 1 {
            arguments += ["-untrusted", try write(Array(chain.presented.dropFirst()), "untrusted.pem")]
        }
        arguments.append(try write([chain.presented[0]], "leaf.pem"))
        let result = try await ExternalPeers.run(openssl, arguments, timeout: .seconds(30))
        let opensslTrusts = result.status == 0 && result.output.contains(": OK")
        return Outcome(
            chain: chain,
            bulwarkTrusts: decision.isTrusted,
            bulwarkReason: bulwarkReason,
            opensslTrusts: opensslTrusts,
            opensslReason: opensslTrusts ? "trusted" : Self.opensslError(result.stderr + result.output)
        )
    }

    /// OpenSSL's first error, as `message (depth N)`.
    static func opensslError(_ text: String) -> String {
        for line in text.split(separator: "\n") {
            guard let range = line.range(of: "lookup: ") else { continue }
            let depth = line.split(separator: " ").dropFirst(3).first.map { " (depth \($0))" } ?? ""
            return String(line[range.upperBound...]) + depth
        }
        return text.split(separator: "\n").first.map(String.init) ?? "no output"
    }

    /// Writes a line to standard output at once (`print` buffers, and a failing test process may not flush).
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func printTable(_ outcomes: [Outcome], elapsed: Duration) {
        func counts(_ subset: [Outcome]) -> String {
            Cell.allCases.map { cell in String(subset.filter { $0.cell == cell }.count) }
                .map { $0.padding(toLength: 11, withPad: " ", startingAt: 0) }.joined(separator: "| ")
        }
        Self.emit(
            "differential: \(outcomes.count) chains (\(ChainMutationEngine.variantCount) single mutations), seed "
                + "\(Self.seed), \(elapsed) (openssl verify -x509_strict -purpose sslserver -verify_hostname)"
        )
        Self.emit(
            "differential: " + "kind".padding(toLength: 23, withPad: " ", startingAt: 0)
                + "| both trust | both refuse | Bulwark only | OpenSSL only"
        )
        let kinds = Set(outcomes.map(\.chain.kind)).sorted()
        for kind in kinds {
            let subset = outcomes.filter { $0.chain.kind == kind }
            Self.emit(
                "differential: " + kind.rawValue.padding(toLength: 23, withPad: " ", startingAt: 0) + "| "
                    + counts(subset)
            )
        }
        Self.emit(
            "differential: " + "total".padding(toLength: 23, withPad: " ", startingAt: 0) + "| " + counts(outcomes)
        )
        if Self.environment["BULWARK_DIFF_VERBOSE"] != nil {
            for cell in [Cell.bothTrust, .bothRefuse] {
                var labels: [String] = []
                for outcome in outcomes where outcome.cell == cell && outcome.chain.variants.count == 1 {
                    if !labels.contains(outcome.chain.label) { labels.append(outcome.chain.label) }
                }
                for label in labels { Self.emit("differential:   \(cell): \(label)") }
            }
        }
        for (cell, title) in [
            (Cell.bulwarkOnly, "Bulwark trusts, OpenSSL refuses"),
            (Cell.opensslOnly, "OpenSSL trusts, Bulwark refuses"),
        ] {
            // Single mutations, then (for Bulwark-only trusts) the combined ones that no single mutation explains.
            let unexplained = outcomes.filter { outcome in
                cell == .bulwarkOnly && outcome.cell == cell && outcome.chain.variants.count > 1
                    && !Self.allowlist.contains { $0.combinedWith == nil && $0.matches(outcome.chain.variants) }
            }
            let subset = outcomes.filter { $0.cell == cell && $0.chain.variants.count == 1 } + unexplained
            let combined = outcomes.filter { $0.cell == cell && $0.chain.variants.count > 1 }.count
            let single = subset.count - unexplained.count
            Self.emit("differential: \(title): \(single) single-mutation chains, \(combined) combined")
            var seen: [String: Int] = [:]
            var order: [Outcome] = []
            for outcome in subset {
                if seen[outcome.chain.label] == nil { order.append(outcome) }
                seen[outcome.chain.label, default: 0] += 1
            }
            for outcome in order {
                let label = outcome.chain.label
                let why: String
                if cell == .bulwarkOnly {
                    why =
                        Self.allowlist.first { $0.matches(outcome.chain.variants) }
                        .map { "allowlisted: \($0.reason)" } ?? "NOT ALLOWLISTED"
                } else {
                    why = Self.stricter[label] ?? "no explanation recorded"
                }
                let detail =
                    cell == .bulwarkOnly
                    ? "openssl: \(outcome.opensslReason)"
                    : "bulwark: \(outcome.bulwarkReason.prefix(140))"
                let kind = outcome.chain.kind.rawValue
                Self.emit("differential:   [\(kind)] \(label) ×\(seen[label] ?? 0) — \(detail) — \(why)")
            }
        }
    }
}
