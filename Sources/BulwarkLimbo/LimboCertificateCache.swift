import BulwarkPolicy
import Foundation
import X509

/// Trust anchors parsed once per run, shared by the concurrently evaluated cases: 9,571 of the suite's 9,585
/// repeated certificate texts are the root all bettertls cases share, and decoding PEM and DER was a fifth of the
/// run. (Peers and intermediates are not kept: they almost never repeat, and keeping 30,000 certificates costs
/// more in memory and in freeing them than it saves.)
final class LimboCertificateCache: Sendable {
    private let parsed = LockedValue<[String: [Certificate]]>([:])

    /// `CertificateLoader.certificates(fromPEM:source:)`, from memory when this text parsed before. Failures are
    /// not remembered (they are rare, and their message names `source`).
    func certificates(fromPEM pem: String, source: String) throws(CertificateLoadingError) -> [Certificate] {
        if let known = self.parsed.withLock({ $0[pem] }) {
            return known
        }
        let certificates = try CertificateLoader.certificates(fromPEM: pem, source: source)
        self.parsed.withLock { $0[pem] = certificates }
        return certificates
    }
}
