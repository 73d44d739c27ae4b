import Foundation
@_spi(FixedExpiryValidationTime) import X509

/// The swift-certificates `Verifier` that ``ChainVerifier`` built last for one set of trust roots, kept for the
/// rest of its second: building one (the three policies, each with its list of understood critical extensions,
/// concatenated and wrapped by the policy builder) and destroying it cost more than any other step of Bulwark's own
/// in a verification, although it is the same for every handshake within a second.
///
/// A verifier is a pure function of what it is built from: the roots (the memo belongs to one ``TrustRoots``, and the
/// key names the generation of the system roots parsed so far), the validation time (the whole second
/// ``ChainVerifier`` rounds it down to, compared exactly) and the options its policies read. It holds no decision: each evaluation validates with a copy of it, every signature and check
/// included. Only the most recent one is kept.
final class VerifierMemo: Sendable {
    /// What a verifier is built from, besides the roots.
    struct Key: Equatable, Sendable {
        let second: Date
        let requireServerAuth: Bool
        let maximumIntermediates: Int?
        let enforcesRootProfile: Bool
        /// The profile and purpose choose the policies themselves: a verifier built for `bulwark verify`'s
        /// `rfc5280` or `any` must never judge a handshake (the attack review of issue 41 found it did).
        let profile: ValidationProfile
        let purpose: CertificatePurpose
        /// The index and generation of the system roots parsed so far (``SystemTrustRootIndex/Snapshot``), nil for
        /// roots without the system's: the store grows as chains name more of them.
        let systemRoots: SystemTrustRootIndex.Snapshot.Identity?

        init(second: Date, options: ValidationOptions, systemRoots: SystemTrustRootIndex.Snapshot? = nil) {
            self.second = second
            self.systemRoots = systemRoots?.identity
            self.profile = options.profile
            self.purpose = options.purpose
            self.requireServerAuth = options.requireServerAuthExtendedKeyUsage
            self.maximumIntermediates = options.maximumIntermediates
            self.enforcesRootProfile = options.enforcesRootProfile
        }
    }

    /// A verifier and what it was built from (a struct, not a tuple: a tuple in a generic box needs its type
    /// metadata looked up at run time on every use).
    private struct Entry: Sendable {
        let key: Key
        let verifier: any PathValidating
    }

    private let last = LockedValue<Entry?>(nil)

    /// The verifier for `key`: the one built last if it was built for the same key, otherwise `build()` (which is
    /// then kept).
    func verifier(for key: Key, build: () -> any PathValidating) -> any PathValidating {
        if let last = self.last.withLock({ $0 }), last.key == key {
            return last.verifier
        }
        let verifier = build()
        self.last.withLock { $0 = Entry(key: key, verifier: verifier) }
        return verifier
    }
}

/// A swift-certificates `Verifier` whose policy type the policy builder hides (an opaque type), so that
/// ``VerifierMemo`` can keep it.
protocol PathValidating: Sendable {
    /// Validates `leaf` with a copy of the verifier (validation is mutating; the kept one is never changed). The
    /// path is the only one the validation put to the policies, when it succeeded with it (see
    /// ``PathAttemptRecorder``); otherwise nil.
    func validate(
        leaf: Certificate,
        intermediates: CertificateStore
    ) async -> (result: CertificateValidationResult, onlyPathTried: UnverifiedCertificateChain?)

    /// Whether `path`, a path this verifier's `Verifier` built for the same certificates and roots, meets the
    /// verifier's policies now: no certificate has a critical extension they do not handle, and each policy
    /// (validity at the verifier's second, constraints, key usage, the web PKI rules) accepts it. The signatures of
    /// the path are not checked here.
    func meetsPolicies(_ path: UnverifiedCertificateChain) async -> Bool
}

/// ``PathValidating`` over a `Verifier` with `Policy`.
///
/// `@unchecked Sendable`: ``ChainVerifier`` builds it only from `Sendable` policies (``PathAttemptRecorder``,
/// ``NameConstraintBudgetPolicy``, `RFC5280Policy`, ``WebPKIPolicy``, and the builder's wrappers, which are
/// `Sendable` when their parts are), but the builder's opaque result type does not say so.
struct BuiltVerifier<Policy: VerifierPolicy>: PathValidating, @unchecked Sendable {
    let verifier: Verifier<Policy>

    func validate(
        leaf: Certificate,
        intermediates: CertificateStore
    ) async -> (result: CertificateValidationResult, onlyPathTried: UnverifiedCertificateChain?) {
        var verifier = self.verifier
        let (result, attempts) = await PathAttemptRecorder.recording {
            await verifier.validate(leaf: leaf, intermediates: intermediates)
        }
        guard case .validCertificate = result, attempts.count == 1 else { return (result, nil) }
        return (result, attempts.first)
    }

    func meetsPolicies(_ path: UnverifiedCertificateChain) async -> Bool {
        var policy = self.verifier.policy
        let handled = policy.verifyingCriticalExtensions
        for index in path.indices {
            for ext in path[index].extensions where ext.critical && !handled.contains(ext.oid) {
                return false
            }
        }
        guard case .meetsPolicy = await policy.chainMeetsPolicyRequirements(chain: path) else { return false }
        return true
    }
}
