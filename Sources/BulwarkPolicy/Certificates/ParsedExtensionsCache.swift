import Foundation
import X509

/// The ``ParsedExtensions`` of recently checked certificates, by the exact bytes of their `TBSCertificate` (which
/// holds the extensions): a server presents the same leaf and intermediates on every connection, and decoding their
/// extensions is most of what the web PKI checks cost.
///
/// Only decoding, and ``WebPKIPolicy``'s verdicts on a single certificate (which read nothing but these bytes), are
/// reused, never a decision about a path: every path is checked on every evaluation. Bounded: at most `capacity`
/// certificates whose `TBSCertificate` is at most `maximumBytes` long (a larger one is decoded every time); the
/// least recently used one is evicted first (a ``TBSCertificateMap``: the last few certificates looked up are found
/// by the identity of their bytes' memory, without hashing). One instance, ``shared``, serves the process; it is
/// thread-safe.
final class ParsedExtensionsCache: Sendable {
    static let shared = ParsedExtensionsCache()

    let capacity: Int
    let maximumBytes: Int

    private let state: LockedValue<TBSCertificateMap<ParsedExtensions>>

    init(capacity: Int = 128, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
        self.state = LockedValue(TBSCertificateMap(capacity: capacity))
    }

    /// The number of remembered certificates.
    var count: Int { self.state.withLock { $0.count } }

    /// `ParsedExtensions(certificate)`, from memory when a certificate with the same `TBSCertificate` bytes was
    /// decoded before.
    func extensions(of certificate: Certificate) -> ParsedExtensions {
        self.extensions(tbsCertificateBytes: certificate.tbsCertificateBytes) { certificate }
    }

    /// ``extensions(of:)`` of the certificate whose `TBSCertificate` is `bytes`, which `certificate` hands out
    /// only when the extensions must be decoded: fetching a `Certificate` out of a collection copies the whole
    /// value (two dozen references), and a lookup that finds the bytes needs nothing else.
    func extensions(
        tbsCertificateBytes bytes: ArraySlice<UInt8>,
        certificate: () -> Certificate
    ) -> ParsedExtensions {
        guard self.capacity > 0, bytes.count <= self.maximumBytes else { return ParsedExtensions(certificate()) }
        if let remembered = self.state.withLock({ $0.value(for: bytes) }) { return remembered }
        let parsed = ParsedExtensions(certificate())
        self.state.withLock { $0.insert(parsed, for: bytes) }
        return parsed
    }
}
