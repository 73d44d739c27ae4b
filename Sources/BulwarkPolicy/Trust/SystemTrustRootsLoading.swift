import X509

/// The system trust roots, indexed once per process in the background from the moment a client whose policy names
/// them is made.
///
/// ``SystemTrustRootIndex`` reads the system bundle and the subject of each certificate in it the first time it is
/// used, and every verification against the system roots waits for that. A client whose trust manager names the
/// system roots (``ServerTrustManager/namesSystemRoots``) starts it when it is made, so it overlaps the first
/// connection's set-up instead of following its handshake; and ``load`` tells whether it has ended, so that a handshake
/// timer that runs out while the verification waits for it runs once more: the index (about a millisecond in a release
/// build, far longer in a loaded debug build) is not the server's time. A client with only its own roots starts nothing.
package enum SystemTrustRootsLoading {
    /// The load of this process.
    package static let load = BackgroundLoad {
        _ = SystemTrustRootIndex.shared
    }

    /// Whether `evaluator` verifies against the system roots: Bulwark's evaluators say so by their roots (a composite,
    /// a revocation or a Certificate Transparency check by the evaluators they hold); an evaluator of another kind is
    /// not known to, and its first verification against them builds the index itself.
    package static func namesSystemRoots(_ evaluator: any ServerTrustEvaluating) -> Bool {
        switch evaluator {
        case let evaluator as DefaultTrustEvaluator: return evaluator.roots.includesSystemRoots
        case let evaluator as PublicKeysTrustEvaluator:
            return evaluator.performDefaultValidation && evaluator.roots.includesSystemRoots
        case let evaluator as PinnedCertificatesTrustEvaluator:
            return evaluator.performDefaultValidation && evaluator.roots.includesSystemRoots
        case let evaluator as CompositeTrustEvaluator:
            return evaluator.evaluators.contains(where: Self.namesSystemRoots)
        case let evaluator as RevocationTrustEvaluator: return Self.namesSystemRoots(evaluator.base)
        case let evaluator as CertificateTransparencyTrustEvaluator: return Self.namesSystemRoots(evaluator.base)
        default: return false
        }
    }
}
