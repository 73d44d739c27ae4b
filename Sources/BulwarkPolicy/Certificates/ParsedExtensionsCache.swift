import Foundation
import X509

/// The ``ParsedExtensions`` of recently checked certificates, by the exact bytes of their `TBSCertificate` (which
/// holds the extensions): a server presents the same leaf and intermediates on every connection, and decoding their
/// extensions is most of what the web PKI checks cost.
///
/// Only decoding is reused, never a verdict: every check runs on every evaluation. Bounded: at most `capacity`
/// certificates whose `TBSCertificate` is at most `maximumBytes` long (a larger one is decoded every time); the
/// least recently used one is evicted first. One instance, ``shared``, serves the process; it is thread-safe.
final class ParsedExtensionsCache: Sendable {
    /// `TBSCertificate` bytes. Equal only when every byte is; hashed by their length and their first 24 bytes
    /// (the version and the serial number), which differ between certificates of one CA: the web PKI checks look
    /// a certificate up several times per handshake, and hashing every byte cost more than the rest of the lookup.
    /// Crafted certificates that share their first bytes only share a bucket of this bounded map, and are still
    /// told apart by the comparison.
    private struct Key: Hashable {
        let bytes: ArraySlice<UInt8>

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.bytes.count)
            self.bytes.withUnsafeBytes { CacheKeyWords.combine(first: 24, of: $0, into: &hasher) }
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.bytes.withUnsafeBytes { left in
                rhs.bytes.withUnsafeBytes { right in
                    left.count == right.count
                        && (left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
                }
            }
        }
    }

    static let shared = ParsedExtensionsCache()

    let capacity: Int
    let maximumBytes: Int
    private let entries: LockedValue<LeastRecentlyUsed<Key, ParsedExtensions>>

    init(capacity: Int = 128, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
        self.entries = LockedValue(LeastRecentlyUsed(capacity: capacity))
    }

    /// The number of remembered certificates.
    var count: Int { self.entries.withLock { $0.count } }

    /// `ParsedExtensions(certificate)`, from memory when a certificate with the same `TBSCertificate` bytes was
    /// decoded before.
    func extensions(of certificate: Certificate) -> ParsedExtensions {
        let bytes = certificate.tbsCertificateBytes
        guard self.capacity > 0, bytes.count <= self.maximumBytes else { return ParsedExtensions(certificate) }
        let key = Key(bytes: bytes)
        if let remembered = self.entries.withLock({ $0.value(forKey: key) }) {
            return remembered
        }
        let parsed = ParsedExtensions(certificate)
        self.entries.withLock { $0.insert(parsed, forKey: key) }
        return parsed
    }
}
