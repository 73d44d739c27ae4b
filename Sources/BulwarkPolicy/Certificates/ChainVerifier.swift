import Foundation
@_spi(FixedExpiryValidationTime) import X509

/// Builds and checks a path from a presented chain to a trust anchor: RFC 5280 (signatures, validity, basic and
/// name constraints, key usage) plus the web PKI rules of ``WebPKIPolicy``.
struct ChainVerifier: Sendable {
    var roots: TrustRoots
    var options: ValidationOptions
    /// Where the system roots come from, when ``roots`` include them: nil for ``SystemTrustRootIndex/shared``, which
    /// is read only then (a client with only its own roots never reads the system bundle); another index in tests.
    var systemRootIndex: SystemTrustRootIndex? = nil

    enum Outcome: Sendable {
        case verified([Certificate])
        case failed([TrustFailureReason])
    }

    func verify(_ presented: [Certificate], at exactTime: Date) async -> Outcome {
        // Certificates state validity in whole seconds; compare against the second the time falls in.
        let time = Date(timeIntervalSince1970: (exactTime.timeIntervalSince1970).rounded(.down))
        guard let leaf = presented.first else { return .failed([.emptyChain]) }
        guard presented.count <= self.options.maximumPresentedCertificates else {
            return .failed([
                .chainTooLong(presented: presented.count, limit: self.options.maximumPresentedCertificates)
            ])
        }
        if self.roots.explicitCertificates.contains(leaf) {
            return Self.verifyExplicitlyTrustedLeaf(leaf, at: time)
        }
        // The system roots parsed so far (see SystemTrustRootIndex).
        let systemRootIndex = self.roots.includesSystemRoots ? self.systemRootIndex ?? .shared : nil
        let systemRoots = systemRootIndex?.current
        // The verifier is the same for every evaluation within this second (see VerifierMemo).
        var verifier = self.verifier(at: time, systemRoots: systemRoots)
        // The path the Verifier built for these certificates before, checked again (see VerifiedPathMemo).
        let pathKey = VerifiedPathMemo.Key(presented: presented, options: self.options)
        if let chain = await self.roots.paths.verifiedChain(for: pathKey, with: verifier) {
            return .verified(chain)
        }
        if let systemRootIndex, let systemRoots {
            // The system roots this chain can use, parsed now if they were not yet.
            let needed = systemRootIndex.snapshot(for: presented)
            if needed.generation != systemRoots.generation {
                verifier = self.verifier(at: time, systemRoots: needed)
            }
        }
        // The intermediates' store is kept with the presented chain: building it hashes every name again.
        let intermediates = PresentedIntermediatesCache.shared.store(forIntermediatesOf: presented)
        let (result, onlyPathTried) = await verifier.validate(leaf: leaf, intermediates: intermediates)
        switch result {
        case .validCertificate(let chain):
            // The array of a path verified before, when it is these same certificates (see VerifiedChainMemo).
            let certificates = VerifiedChainMemo.shared.array(of: chain)
            if let onlyPathTried {
                self.roots.paths.remember(onlyPathTried, certificates: certificates, for: pathKey)
            }
            return .verified(certificates)
        case .couldNotValidate(let failures):
            // Why no system root is trusted, when the bundle could not be read, is said with the refusal.
            let unread = systemRootIndex?.failure
            return .failed(Self.explain(failures, presented: presented, at: time, systemRootsFailure: unread))
        }
    }

    /// The verifier for ``roots`` (with `systemRoots`, the system's parsed so far, if they include those) at `time`:
    /// the one built last for the same, see ``VerifierMemo``.
    private func verifier(at time: Date, systemRoots: SystemTrustRootIndex.Snapshot?) -> any PathValidating {
        let key = VerifierMemo.Key(second: time, options: self.options, systemRoots: systemRoots)
        return self.roots.verifiers.verifier(for: key) {
            BuiltVerifier(verifier: self.makeVerifier(at: time, systemRoots: systemRoots?.store))
        }
    }

    /// swift-certificates' verifier for ``roots`` (with `systemRoots` if they include the system's) at `time` (a whole
    /// second), with Bulwark's policies.
    func makeVerifier(at time: Date, systemRoots: CertificateStore?) -> Verifier<some VerifierPolicy> {
        Verifier(rootCertificates: self.roots.certificateStore(systemRoots: systemRoots)) {
            // Refuses nothing: it records the paths put to the policies, for VerifiedPathMemo.
            PathAttemptRecorder()
            // Next: it bounds the cost of RFC5280Policy's name-constraint check.
            NameConstraintBudgetPolicy()
            RFC5280Policy(fixedExpiryValidationTime: time)
            if self.options.profile == .rfc5280 {
                RFC5280ProfilePolicy(purpose: self.options.purpose)
            } else {
                WebPKIPolicy(
                    requireServerAuth: self.options.requireServerAuthExtendedKeyUsage,
                    maximumIntermediates: self.options.maximumIntermediates,
                    enforcesRootProfile: self.options.enforcesRootProfile,
                    purpose: self.options.purpose
                )
            }
        }
    }

    /// A leaf that is itself one of the explicitly given anchors (a pinned self-signed certificate) is trusted by
    /// identity: RFC 5280 would demand that a self-signed anchor be a CA, which a server certificate is not. Its
    /// validity period and key strength are still checked.
    private static func verifyExplicitlyTrustedLeaf(_ leaf: Certificate, at time: Date) -> Outcome {
        let subject = String(describing: leaf.subject)
        if time > leaf.notValidAfter {
            return .failed([.expired(certificate: subject, notValidAfter: leaf.notValidAfter, evaluatedAt: time)])
        }
        if time < leaf.notValidBefore {
            return .failed([.notYetValid(certificate: subject, notValidBefore: leaf.notValidBefore, evaluatedAt: time)])
        }
        if let failure = WebPKIPolicy.checkKey(leaf) {
            return .failed([.untrustedChain(details: ["\(leaf.subject): \(failure)"])])
        }
        return .verified([leaf])
    }

    /// The reasons a chain was refused, in words: expiry and weak keys or signatures as their own reasons (read from
    /// the certificates), then what else each candidate path failed on, and, when no path reached a trust anchor,
    /// where the chain stops. swift-certificates' own failure texts embed whole certificate dumps; those are
    /// replaced by subject names.
    private static func explain(
        _ failures: [CertificateValidationResult.PolicyFailure],
        presented: [Certificate],
        at time: Date,
        systemRootsFailure: String? = nil
    ) -> [TrustFailureReason] {
        var reasons: [TrustFailureReason] = []
        // The certificates of the paths tried (and the leaf); all presented ones only when no path reached an anchor.
        // Not always all of them: `bulwark verify` presents a whole directory, and one expired CA in it would be
        // named as the reason every leaf is refused.
        var candidates = failures.isEmpty ? Self.linkedFromLeaf(presented) : Array(presented.prefix(1))
        for failure in failures {
            for certificate in failure.chain where !candidates.contains(certificate) {
                candidates.append(certificate)
            }
        }
        if let certificate = candidates.first(where: { time > $0.notValidAfter }) {
            reasons.append(
                .expired(
                    certificate: String(describing: certificate.subject),
                    notValidAfter: certificate.notValidAfter,
                    evaluatedAt: time
                )
            )
        } else if let certificate = candidates.first(where: { time < $0.notValidBefore }) {
            reasons.append(
                .notYetValid(
                    certificate: String(describing: certificate.subject),
                    notValidBefore: certificate.notValidBefore,
                    evaluatedAt: time
                )
            )
        }
        for certificate in candidates {
            for problem in CertificateProblems.problems(
                of: certificate,
                checkSignature: certificate.issuer != certificate.subject
            ) where !reasons.contains(problem) {
                reasons.append(problem)
            }
        }
        var details: [String] = []
        for failure in failures {
            guard let text = Self.words(for: failure, covered: reasons) else { continue }
            if !details.contains(text) { details.append(text) }
        }
        if failures.isEmpty {
            details.append(Self.whereChainStops(presented))
        }
        if let systemRootsFailure { details.append(systemRootsFailure) }
        if !details.isEmpty || reasons.isEmpty {
            reasons.append(.untrustedChain(details: details))
        }
        return reasons
    }

    /// One policy failure in words, or nil when a reason already in `covered` says it (expiry, weak key or signature).
    private static func words(
        for failure: CertificateValidationResult.PolicyFailure,
        covered: [TrustFailureReason]
    ) -> String? {
        var text = String(describing: failure.policyFailureReason)
        let rfc5280 = "RFC5280Policy: "
        if text.hasPrefix(rfc5280) {
            text.removeFirst(rfc5280.count)
            let validity = text.hasSuffix(" has expired") || text.hasSuffix(" is not yet valid")
            if validity, covered.contains(where: { ["expired", "not_yet_valid"].contains($0.shortDescription) }) {
                return nil
            }
            if let named = Self.rfc5280Words(text, chain: failure.chain) { return named }
            let sentenceWords = ["Certificate ", "Self-signed ", "Unable ", "Error ", "Empty "]
            if sentenceWords.contains(where: { text.hasPrefix($0) }), let first = text.first {
                text = first.lowercased() + text.dropFirst()
            }
        }
        for certificate in failure.chain {
            // `\(certificate)` in swift-certificates' texts is the whole certificate, field by field.
            text = text.replacingOccurrences(of: String(describing: certificate), with: "\(certificate.subject)")
        }
        for certificate in failure.chain {
            let subject = String(describing: certificate.subject)
            let saidAlready = covered.contains { reason in
                ["weak_key", "weak_signature"].contains(reason.code) && reason.certificate == subject
            }
            let own = [WebPKIPolicy.checkKey(certificate), WebPKIPolicy.checkSignatureAlgorithm(certificate)]
            if saidAlready, own.contains(where: { $0.map { text == "\(subject): \($0)" } ?? false }) {
                return nil
            }
        }
        return text
    }

    /// Words for the swift-certificates failures whose text carries a library value (a name-constraint subtree, a
    /// decoding error) rather than a certificate: what failed, and in which certificate.
    private static func rfc5280Words(_ text: String, chain: UnverifiedCertificateChain) -> String? {
        let leaf = chain.first.map { "\($0.subject)" } ?? "the server's certificate"
        if text.contains("subtree") || text.contains(" in name constraints") {
            return "the names of \(leaf) are not permitted by the name constraints of a CA in the chain"
        }
        let undecodable = [
            ("Unable to decode SAN field of ", "subject alternative name"),
            ("Error processing basic constraints for ", "basic constraints"),
            ("Unable to decode name constraints from ", "name constraints"),
        ]
        for (prefix, name) in undecodable where text.hasPrefix(prefix) {
            let certificate = chain.first { text.dropFirst(prefix.count).hasPrefix(String(describing: $0)) }
            let subject = certificate.map { "\($0.subject)" } ?? "a certificate of the chain"
            return "certificate \(subject) has a \(name) extension that cannot be decoded"
        }
        return nil
    }

    /// The leaf and the certificates linked from it by name, one issuer each, as ``whereChainStops(_:)`` follows
    /// them.
    static func linkedFromLeaf(_ presented: [Certificate]) -> [Certificate] {
        guard var tip = presented.first else { return [] }
        var used: Set<Int> = [0]
        var linked = [tip]
        while tip.issuer != tip.subject,
            let next = presented.indices.first(where: { !used.contains($0) && presented[$0].subject == tip.issuer })
        {
            used.insert(next)
            tip = presented[next]
            linked.append(tip)
        }
        return linked
    }

    /// Where a chain that reaches no trust anchor stops: the last certificate that can be linked from the leaf by
    /// the presented certificates, and the issuer nobody presented or trusts.
    static func whereChainStops(_ presented: [Certificate]) -> String {
        guard let tip = Self.linkedFromLeaf(presented).last else { return "the server presented no certificate" }
        if tip.issuer == tip.subject {
            return "the chain ends at the self-signed certificate \(tip.subject), which is not a trusted root"
        }
        let isCA: Bool
        if case .isCertificateAuthority = (try? tip.extensions.basicConstraints) ?? .notCertificateAuthority {
            isCA = true
        } else {
            isCA = false
        }
        if isCA {
            return "the chain stops at \(tip.subject), issued by \(tip.issuer), which is not a trusted root"
        }
        return "the chain stops at \(tip.subject), issued by \(tip.issuer), which the server did not send "
            + "and is not a trusted root"
    }
}
