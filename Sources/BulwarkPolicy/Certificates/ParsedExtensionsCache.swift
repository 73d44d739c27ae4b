import Foundation
import X509

/// The ``ParsedExtensions`` of recently checked certificates, by the exact bytes of their `TBSCertificate` (which
/// holds the extensions): a server presents the same leaf and intermediates on every connection, and decoding their
/// extensions is most of what the web PKI checks cost.
///
/// Only decoding is reused, never a verdict: every check runs on every evaluation. Bounded: at most `capacity`
/// certificates whose `TBSCertificate` is at most `maximumBytes` long (a larger one is decoded every time); the
/// least recently used one is evicted first. One instance, ``shared``, serves the process; it is thread-safe.
final class ParsedExtensionsCache: @unchecked Sendable {
    /// `TBSCertificate` bytes, hashed as one block (a byte collection would be hashed byte by byte).
    private struct Key: Hashable {
        let bytes: ArraySlice<UInt8>

        func hash(into hasher: inout Hasher) {
            self.bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.bytes.withUnsafeBytes { left in
                rhs.bytes.withUnsafeBytes { right in
                    left.count == right.count && (left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
                }
            }
        }
    }

    static let shared = ParsedExtensionsCache()

    let capacity: Int
    let maximumBytes: Int
    private let lock = NSLock()
    private var entries: [Key: (extensions: ParsedExtensions, lastUse: UInt64)] = [:]
    private var tick: UInt64 = 0

    init(capacity: Int = 128, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
    }

    /// The number of remembered certificates.
    var count: Int { self.lock.withLock { self.entries.count } }

    /// `ParsedExtensions(certificate)`, from memory when a certificate with the same `TBSCertificate` bytes was
    /// decoded before.
    func extensions(of certificate: Certificate) -> ParsedExtensions {
        let bytes = certificate.tbsCertificateBytes
        guard self.capacity > 0, bytes.count <= self.maximumBytes else { return ParsedExtensions(certificate) }
        let key = Key(bytes: bytes)
        let remembered: ParsedExtensions? = self.lock.withLock {
            // One lookup (one hash of the bytes); the use is recorded in place.
            guard let index = self.entries.index(forKey: key) else { return nil }
            self.tick += 1
            self.entries.values[index].lastUse = self.tick
            return self.entries.values[index].extensions
        }
        if let remembered { return remembered }
        let parsed = ParsedExtensions(certificate)
        self.lock.withLock {
            if self.entries[key] == nil, self.entries.count >= self.capacity,
                let oldest = self.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                self.entries[oldest] = nil
            }
            self.tick += 1
            self.entries[key] = (parsed, self.tick)
        }
        return parsed
    }
}
