import Crypto
import Foundation
import SwiftASN1
import X509

/// The system trust roots, parsed once per process in the background from the moment a configuration names them.
///
/// swift-certificates parses the system bundle (about 150 certificates) on a queue of its own the first time
/// `CertificateStore.systemTrustRoots` is read, and every verification against it waits for that parse. Bulwark starts
/// it when a ``TrustRoots`` value naming the system roots is made (``TrustRoots/system``,
/// ``TrustRoots/systemAnd(_:)``), that is when the client's configuration is built, and ``load`` tells when it has
/// ended, so that a connection arms its handshake timer only then: the parse (a few milliseconds in a release build,
/// far longer in a loaded debug build) is never counted against the handshake timeout. A configuration with only its
/// own roots starts nothing.
package enum SystemTrustRootsLoading {
    /// The load of this process.
    package static let load = BackgroundLoad {
        await Self.awaitSystemRoots()
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
