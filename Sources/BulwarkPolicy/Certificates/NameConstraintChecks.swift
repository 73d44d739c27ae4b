import X509

/// Name-constraint rules that swift-certificates' RFC 5280 policy does not apply.
enum NameConstraintChecks {
    /// Name-constraint comparisons allowed for one path (Go's limit): more is refused rather than computed, which
    /// bounds the quadratic cost an attacker can cause with many names against many constraints.
    static let maximumComparisons = 250_000

    /// The comparison budget: a failure when checking the name constraints of `chain` (leaf first, anchor last)
    /// would take more than ``maximumComparisons``. Run before swift-certificates' own name-constraint check
    /// (see ``NameConstraintBudgetPolicy``), which has no such limit.
    static func budgetFailure(_ chain: some Collection<Certificate>) -> String? {
        guard !chain.isEmpty else { return nil }
        // First a bound from the encoded sizes alone, with nothing parsed: a GeneralSubtree takes at least four
        // bytes and a GeneralName at least two, so chains far below the budget (all real ones) stop here.
        // By index: iterating hands out a whole copy of each certificate, and this runs for every candidate path.
        var subtreeBound = 0
        var index = chain.index(after: chain.startIndex)
        while index != chain.endIndex {
            if let constraints = chain[index].extensions[oid: .X509ExtensionID.nameConstraints] {
                subtreeBound += constraints.value.count / 4
            }
            index = chain.index(after: index)
        }
        guard subtreeBound > 0 else { return nil }
        let leaf = chain[chain.startIndex]
        let nameBound =
            (leaf.extensions[oid: .X509ExtensionID.subjectAlternativeName]?.value.count ?? 0) / 2
            + leaf.subject.reduce(0) { $0 + $1.count }
        if subtreeBound * nameBound <= Self.maximumComparisons { return nil }
        var subtreeCount = 0
        for certificate in chain.dropFirst() {
            // Most CAs have no name constraints: look for the extension before parsing anything.
            guard certificate.extensions[oid: .X509ExtensionID.nameConstraints] != nil,
                let constraints = try? certificate.extensions.nameConstraints
            else { continue }
            subtreeCount += constraints.permittedSubtrees.count + constraints.excludedSubtrees.count
        }
        guard subtreeCount > 0 else { return nil }
        let leafNameCount = (try? leaf.extensions.subjectAlternativeNames)?.count ?? 0
        let subjectCount = leaf.subject.reduce(0) { $0 + $1.count }
        if subtreeCount * (leafNameCount + subjectCount) > Self.maximumComparisons {
            return "name constraints would need more than \(Self.maximumComparisons) comparisons"
        }
        return nil
    }

    /// The rules beyond the budget; `chain` is leaf first, anchor last, and `parsed` holds the decoded extensions
    /// of each of its certificates, in the same order.
    static func check(_ chain: UnverifiedCertificateChain, parsed: [ParsedExtensions]) -> String? {
        guard parsed.count == chain.count, parsed.count > 1 else { return nil }
        for index in 1..<parsed.count {
            // An absent extension decodes to nil: most CAs have none, and nothing else is read for them.
            guard let constraints = try? parsed[index].nameConstraints.get() else { continue }
            let subject = chain[index].subject
            if constraints.permittedSubtrees.isEmpty && constraints.excludedSubtrees.isEmpty {
                return "\(subject): name constraints with neither permitted nor excluded subtrees"
            }
            for case .dnsName(let name) in constraints.permittedSubtrees + constraints.excludedSubtrees
            where name.hasPrefix(".") {
                return "\(subject): DNS name constraint \"\(name)\" has a leading period"
            }
            let leafNames = (try? parsed[0].subjectAlternativeNames.get()) ?? SubjectAlternativeNames()
            for case .dnsName(let excluded) in constraints.excludedSubtrees {
                for case .dnsName(let name) in leafNames where Self.wildcard(name, covers: excluded) {
                    return "\(subject): excluded name \"\(excluded)\" is covered by the wildcard \"\(name)\""
                }
            }
        }
        return nil
    }

    /// Whether `*.base` can produce `excluded` (one label directly under `base`), so that a connection to the
    /// excluded name would be accepted through the wildcard (CVE-2025-61727).
    static func wildcard(_ name: String, covers excluded: String) -> Bool {
        guard name.hasPrefix("*.") else { return false }
        let base = name.dropFirst(2).lowercased()
        let target = excluded.lowercased()
        guard let dot = target.firstIndex(of: ".") else { return false }
        return target[target.index(after: dot)...] == base
    }
}
