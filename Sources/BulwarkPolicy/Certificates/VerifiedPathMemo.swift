import X509

/// The paths swift-certificates' `Verifier` built for presented chains, kept with one set of trust roots, so that
/// the next handshake presenting the same certificates checks that path again instead of searching for it and
/// verifying its signatures with the arithmetic.
///
/// What is remembered is a pure function of exact inputs, never a decision:
/// - **The path.** It is kept only when the validation that built it put no other path to the policies (see
///   ``PathAttemptRecorder``): everything the `Verifier` does before that point (which issuers it finds, in which
///   order, and which it skips for a signature that does not verify, an unhandled critical extension or a repeated
///   certificate) depends only on the presented certificates, the roots and the options, not on the time. So for the
///   same certificates the `Verifier` builds this path first again, and returns it whenever it meets the policies.
/// - **Its signatures,** each checked again on every use through a ``SignatureVerificationCache``: from memory when
///   exactly that signature (issuer key, `TBSCertificate`, algorithm, signature bytes) verified before, otherwise with
///   the arithmetic. Only signatures that verified are remembered there.
/// - **Everything else is checked again on every use**: no critical extension the policies do not handle, and every
///   policy (validity at this second, basic and name constraints, key usage, the web PKI rules) at the time of the
///   evaluation. The host, pins and revocation are checked by the evaluators afterwards, as for any path.
///
/// A remembered path that fails any of these is forgotten and the chain is validated by the `Verifier` in full, so a
/// refusal and its reasons are always the `Verifier`'s own. Presented chains are told apart by the identity of their
/// certificates' bytes, as in ``PresentedIntermediatesCache``: an entry keeps its certificates alive, so two
/// certificates whose `TBSCertificate` is the same memory were parsed from the same DER. Bounded: the least recently
/// used path is forgotten first.
final class VerifiedPathMemo: Sendable {
    /// A presented chain (all of it, leaf first) and the options the policies read.
    struct Key: Hashable, Sendable {
        let presented: [Certificate]
        let requireServerAuth: Bool
        let maximumIntermediates: Int?
        let enforcesRootProfile: Bool
        /// See ``VerifierMemo/Key``: a path verified under one profile or purpose says nothing of another.
        let profile: ValidationProfile
        let purpose: CertificatePurpose

        init(presented: [Certificate], options: ValidationOptions) {
            self.presented = presented
            self.profile = options.profile
            self.purpose = options.purpose
            self.requireServerAuth = options.requireServerAuthExtendedKeyUsage
            self.maximumIntermediates = options.maximumIntermediates
            self.enforcesRootProfile = options.enforcesRootProfile
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.presented.count)
            for index in self.presented.indices {
                self.presented[index].hashTBSMemory(into: &hasher)
            }
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            guard lhs.presented.count == rhs.presented.count, lhs.requireServerAuth == rhs.requireServerAuth,
                lhs.maximumIntermediates == rhs.maximumIntermediates,
                lhs.enforcesRootProfile == rhs.enforcesRootProfile, lhs.profile == rhs.profile,
                lhs.purpose == rhs.purpose
            else { return false }
            for index in lhs.presented.indices where !lhs.presented[index].sharesTBSMemory(with: rhs.presented[index]) {
                return false
            }
            return true
        }
    }

    /// A remembered path: as the policies take it, as the array a verified chain is handed out as, and what each
    /// link's signature is remembered under in ``signatures`` (a pure function of the two certificates, which the
    /// path keeps; see ``SignatureVerificationCache/key(of:issuedBy:)``).
    struct Path: Sendable {
        let path: UnverifiedCertificateChain
        let certificates: [Certificate]
        let links: [SignatureVerificationCache.Key?]
    }

    private struct State: Sendable {
        var entries: LeastRecentlyUsed<Key, Path>
        var hits = 0
    }

    /// The most paths kept.
    let capacity: Int
    /// The signatures of the remembered paths that verified.
    let signatures: SignatureVerificationCache
    private let state: LockedValue<State>

    init(capacity: Int = 64) {
        self.capacity = capacity
        // Two signatures per path for the usual leaf, intermediate, root.
        self.signatures = SignatureVerificationCache(capacity: 2 * capacity)
        self.state = LockedValue(State(entries: LeastRecentlyUsed(capacity: capacity)))
    }

    /// The number of remembered paths.
    var count: Int { self.state.withLock { $0.entries.count } }

    /// How many validations were answered by checking a remembered path again.
    var hits: Int { self.state.withLock { $0.hits } }

    /// The chain `verifier` verifies for `key`'s certificates, when a path remembered for them still holds: its
    /// signatures verify (from memory when they did before) and it meets `verifier`'s policies now. A path that no
    /// longer holds is forgotten; nil then, and when nothing is remembered.
    func verifiedChain(for key: Key, with verifier: any PathValidating) async -> [Certificate]? {
        guard self.capacity > 0, let remembered = self.state.withLock({ $0.entries.value(forKey: key) }) else {
            return nil
        }
        let path = remembered.path
        var holds = true
        var link = 0
        while holds, link < remembered.links.count {
            let index = path.startIndex + link
            holds = self.signatures.isValidSignature(
                of: path[index],
                issuedBy: path[index + 1],
                key: remembered.links[link]
            )
            link += 1
        }
        if holds {
            holds = await verifier.meetsPolicies(path)
        }
        guard holds else {
            self.state.withLock { $0.entries.removeValue(forKey: key) }
            return nil
        }
        self.state.withLock { $0.hits += 1 }
        return remembered.certificates
    }

    /// Remembers `path`, the only path the `Verifier` tried when it verified `key`'s certificates as `certificates`.
    func remember(_ path: UnverifiedCertificateChain, certificates: [Certificate], for key: Key) {
        guard self.capacity > 0, path.count == certificates.count else { return }
        var links: [SignatureVerificationCache.Key?] = []
        var index = path.startIndex
        while index + 1 < path.endIndex {
            links.append(self.signatures.key(of: path[index], issuedBy: path[index + 1]))
            index += 1
        }
        let remembered = Path(path: path, certificates: certificates, links: links)
        self.state.withLock { $0.entries.insert(remembered, forKey: key) }
    }
}
