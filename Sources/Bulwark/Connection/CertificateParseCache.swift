import BulwarkPolicy
import Foundation
import X509

/// The certificates a client has parsed, by their exact DER bytes: a server presents the same leaf and
/// intermediates on every connection, and parsing one (swift-certificates' `Certificate(derEncoded:)`, with its
/// public key) costs about 25 µs.
///
/// Only the decoding is reused: a `Certificate` is a pure function of its bytes, and every handshake still gets the
/// full evaluation (path building, every signature, policy, pins, host name). Bounded: at most `capacity`
/// certificates of at most `maximumBytes` each; the least recently used one is evicted first. Certificates that do
/// not parse are not remembered. Keys are ``CertificateBytesKey``s hashing the last bytes of the DER (the end of
/// the signature).
final class CertificateParseCache: Sendable {
    let capacity: Int
    let maximumBytes: Int
    private let entries: LockedValue<LeastRecentlyUsed<CertificateBytesKey, Certificate>>

    init(capacity: Int = 64, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
        self.entries = LockedValue(LeastRecentlyUsed(capacity: capacity))
    }

    /// The number of remembered certificates.
    var count: Int { self.entries.withLock { $0.count } }

    /// `Certificate(derEncoded: der)`, from memory when these exact bytes were parsed before.
    func certificate(derEncoded der: [UInt8]) throws -> Certificate {
        guard self.capacity > 0, der.count <= self.maximumBytes else {
            return try Certificate(derEncoded: der)
        }
        let key = CertificateBytesKey(der[...], hashing: .last)
        if let remembered = self.entries.withLock({ $0.value(forKey: key) }) {
            return remembered
        }
        let certificate = try Certificate(derEncoded: der)
        self.entries.withLock { $0.insert(certificate, forKey: key) }
        return certificate
    }
}
