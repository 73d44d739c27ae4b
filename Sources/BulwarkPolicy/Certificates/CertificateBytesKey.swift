import Foundation

/// A cache key made of a certificate's exact bytes (the whole DER certificate, or its `TBSCertificate`), for the
/// caches that remember what is a pure function of those bytes (``ParsedExtensionsCache``, `EmbeddedSCTMemo`, and
/// the client's parsed certificates).
///
/// Equal only when every byte is: two keys over the same memory are equal at once (both are alive, so the bytes
/// are the same), any others are compared with `memcmp`. Every byte is hashed, once, when the key is made (with the
/// process's random seed, unless `SWIFT_DETERMINISTIC_HASHING` is set): a server can craft certificates that share
/// their length and any bytes at fixed places (a serial number, the end of a signature), and keys hashed from those
/// alone would all share one bucket, each lookup comparing them all, up to 16 KiB each, under a cache's lock. A key
/// is made when a cache's front misses (the same memory as a recent lookup, ``CertificateIdentityFront``, or the
/// client's remembered chains): not at all for a server that presents the same chain again, a few times per
/// certificate otherwise.
package struct CertificateBytesKey: Hashable, Sendable {
    package let bytes: ArraySlice<UInt8>
    /// Every byte hashed, and the count: what ``hash(into:)`` feeds the map's hasher, so that each of the map's
    /// operations with this key does not hash the bytes again.
    private let digest: Int

    package init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        var hasher = Hasher()
        bytes.withUnsafeBytes { raw in
            hasher.combine(raw.count)
            hasher.combine(bytes: raw)
        }
        self.digest = hasher.finalize()
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.digest)
    }

    package static func == (lhs: CertificateBytesKey, rhs: CertificateBytesKey) -> Bool {
        lhs.bytes.withUnsafeBytes { left in
            rhs.bytes.withUnsafeBytes { right in
                guard left.count == right.count else { return false }
                // The same memory (a certificate handed out by a cache, looked up again): the same bytes.
                guard left.count > 0, left.baseAddress != right.baseAddress else { return true }
                return memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
    }
}
