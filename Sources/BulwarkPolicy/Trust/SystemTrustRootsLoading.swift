import Crypto
import Foundation
import SwiftASN1
import X509

/// The system trust roots, parsed once per process in the background from the moment a client whose policy names
/// them is made.
///
/// swift-certificates parses the system bundle (about 150 certificates) on a queue of its own the first time
/// `CertificateStore.systemTrustRoots` is read, and every verification against it waits for that parse. A client whose
/// trust manager names the system roots (``ServerTrustManager/namesSystemRoots``) starts it when it is made, so the
/// parse overlaps the first connection's set-up instead of following its handshake; and ``load`` tells whether it has
/// ended, so that a handshake timer that runs out while the verification waits for the parse runs once more: the parse
/// (a few milliseconds in a release build, far longer in a loaded debug build) is not the server's time. A client with
/// only its own roots starts nothing.
package enum SystemTrustRootsLoading {
    /// The load of this process.
    package static let load = BackgroundLoad {
        await Self.awaitSystemRoots()
    }

    /// Whether `evaluator` verifies against the system roots: Bulwark's evaluators say so by their roots (a composite,
    /// a revocation or a Certificate Transparency check by the evaluators they hold); an evaluator of another kind is
    /// not known to, and its first verification against them waits for the parse as before.
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

    /// Waits until swift-certificates has parsed the system roots: a verification against them resolves the store,
    /// which awaits the parse. The certificate verified is a throwaway one made here (nothing is trusted by it).
    private static func awaitSystemRoots() async {
        guard let probe = try? Self.probeCertificate() else {
            // Nothing to verify with: the first real verification waits for the parse instead.
            return
        }
        var verifier = Verifier(rootCertificates: CertificateStore.systemTrustRoots) {
            RFC5280Policy(validationTime: Date())
        }
        _ = await verifier.validate(leaf: probe, intermediates: CertificateStore())
    }

    private static func probeCertificate() throws -> Certificate {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("Bulwark system roots probe") }
        let now = Date()
        return try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: now - 60,
            notValidAfter: now + 60,
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {},
            issuerPrivateKey: .init(key)
        )
    }
}
