import BulwarkPolicy
import Foundation
import X509

/// Runs the x509-limbo path-validation suite through Bulwark's own evaluator API: each case becomes a
/// ``DefaultTrustEvaluator`` with the case's trust anchors as custom roots, evaluating the peer certificate and
/// untrusted intermediates (as a server would present them) for the expected peer name at the validation time.
///
/// The evaluator runs with `enforcesRootProfile` on: the suite's anchors stand for publicly-trusted roots.
///
/// A case with revocation lists (`has-crl`) runs the evaluator inside a ``RevocationTrustEvaluator`` in hard mode,
/// CRLs only, network access disabled, with the case's lists loaded into its store: every certificate of the path but
/// the root needs a usable list of its issuer saying it is not revoked.
///
/// Cases for what the engine does not model are skipped with the reason: client certificates (Bulwark validates
/// servers), checks that need the public suffix list, and the consistency of the subject's common name with the SAN
/// (Bulwark never reads the common name).
public enum LimboRunner {
    /// The harness name in the results file: `bulwark`.
    public static let harnessName = "bulwark"

    /// The default location of the suite, relative to the project root.
    public static let defaultPath = "../shared/testdata/limbo/limbo.json"

    /// Loads and runs the suite at `path`, evaluating up to `concurrency` cases at once.
    public static func run(path: String, concurrency: Int = 4) async throws -> LimboReport {
        let start = ContinuousClock.now
        let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe)
        let testCases = try await LimboSuiteReader.testCases(from: data, concurrency: concurrency)
        var results = [LimboResult?](repeating: nil, count: testCases.count)
        let certificates = LimboCertificateCache()
        try await withThrowingTaskGroup(of: (Int, LimboResult).self) { group in
            var next = 0
            func addTask() {
                let index = next
                let testCase = testCases[index]
                group.addTask { (index, await Self.evaluate(testCase, certificates: certificates)) }
                next += 1
            }
            while next < min(concurrency, testCases.count) { addTask() }
            while let (index, result) = try await group.next() {
                results[index] = result
                if next < testCases.count { addTask() }
            }
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return LimboReport(harness: Self.harnessName, results: results.map { $0! }, elapsedSeconds: seconds)
    }

    static func evaluate(
        _ testCase: LimboTestCase,
        certificates: LimboCertificateCache = LimboCertificateCache()
    ) async -> LimboResult {
        let expected: LimboResult.Outcome = testCase.expectedResult == "SUCCESS" ? .success : .failure
        func result(_ outcome: LimboResult.Outcome, _ context: String) -> LimboResult {
            LimboResult(
                id: testCase.id,
                actualResult: outcome,
                context: context,
                expected: expected,
                group: testCase.group
            )
        }
        if let reason = Self.skipReason(testCase) {
            return result(.skipped, reason)
        }
        let peer: [Certificate]
        var intermediates: [Certificate] = []
        var anchors: [Certificate] = []
        var ignored = 0
        do {
            peer = try CertificateLoader.certificates(fromPEM: testCase.peerCertificate, source: "peer_certificate")
            // As in a handshake, an intermediate that cannot be parsed cannot be on a path; it is left out.
            for pem in testCase.untrustedIntermediates {
                if let parsed = try? CertificateLoader.certificates(fromPEM: pem, source: "untrusted_intermediates") {
                    intermediates += parsed
                } else {
                    ignored += 1
                }
            }
            // Anchors repeat across cases (all 9,572 bettertls cases share one root); the rest almost never do.
            for pem in testCase.trustedCerts {
                anchors += try certificates.certificates(fromPEM: pem, source: "trusted_certs")
            }
        } catch {
            return result(.failure, "unparsable input: \(error)")
        }
        var time = Date()
        if let text = testCase.validationTime {
            guard let parsed = try? Date(text, strategy: .iso8601) else {
                return result(.failure, "unparsable validation_time \(text)")
            }
            time = parsed
        }
        var options = ValidationOptions()
        options.maximumIntermediates = testCase.maxChainDepth
        // The suite's anchors stand for publicly-trusted roots, which the CA/Browser Forum root profile governs.
        options.enforcesRootProfile = true
        var evaluator: any ServerTrustEvaluating = DefaultTrustEvaluator(
            roots: .custom(anchors),
            options: options,
            validateHost: testCase.expectedPeerName != nil
        )
        if let lists = testCase.crls, !lists.isEmpty {
            let store = RevocationStore()
            for list in lists {
                do {
                    try store.load(crl: Array(list.utf8))
                } catch {
                    return result(.failure, "revocation list refused: \(error)")
                }
            }
            evaluator = RevocationTrustEvaluator(evaluator, method: .crl, mode: .hard, store: store)
        }
        let host = testCase.expectedPeerName?.value ?? "unnamed.invalid"
        let decision = await evaluator.evaluate(peer + intermediates, forHost: host, at: time)
        switch decision {
        case .trusted(let chain):
            if let usages = testCase.keyUsage, !usages.isEmpty,
                let leaf = chain.certificates.first, !Self.hasKeyUsages(usages, leaf)
            {
                return result(.failure, "leaf lacks required key usage \(usages)")
            }
            let note = ignored > 0 ? " (\(ignored) unparsable intermediates ignored)" : ""
            return result(.success, "trusted, verified chain of \(chain.certificates.count)\(note)")
        case .refused(let refusal):
            return result(
                .failure,
                refusal.reasons.map(\.shortDescription).joined(separator: ",") + ": "
                    + String(describing: refusal.reasons.first.map(String.init(describing:)) ?? "").prefix(300)
            )
        }
    }

    static func skipReason(_ testCase: LimboTestCase) -> String? {
        if testCase.validationKind != "SERVER" {
            return "client certificate validation is not modelled: Bulwark validates servers"
        }
        let features = testCase.features ?? []
        if features.contains("pedantic-public-suffix-wildcard") {
            return "needs the public suffix list, which Bulwark does not carry"
        }
        if testCase.id.hasPrefix("webpki::cn::") {
            return "common-name consistency (CA/Browser Forum 7.1.4.3) is not modelled: Bulwark never reads the "
                + "common name; host names are matched against subject alternative names only"
        }
        if let ekus = testCase.extendedKeyUsage, !ekus.isEmpty, ekus != ["serverAuth"] {
            return "only serverAuth extended key usage is modelled"
        }
        return nil
    }

    static func hasKeyUsages(_ usages: [String], _ certificate: Certificate) -> Bool {
        guard let keyUsage = try? certificate.extensions.keyUsage else { return false }
        for usage in usages {
            switch usage {
            case "digitalSignature": if !keyUsage.digitalSignature { return false }
            case "keyEncipherment": if !keyUsage.keyEncipherment { return false }
            case "keyAgreement": if !keyUsage.keyAgreement { return false }
            default: return false
            }
        }
        return true
    }
}
