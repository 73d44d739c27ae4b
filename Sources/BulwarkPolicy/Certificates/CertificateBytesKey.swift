import Foundation

/// A cache key made of a certificate's exact bytes (the whole DER certificate, or its `TBSCertificate`), for the
/// caches that remember what is a pure function of those bytes (``ParsedExtensionsCache``, and the client's parsed
/// certificates).
///
/// Equal only when every byte is: two keys over the same memory are equal at once (both are alive, so the bytes
/// are the same), any others are compared with `memcmp`. Hashed by the length and 24 bytes read as three words —
/// the first 24 (a `TBSCertificate`'s version and serial number) or the last 24 (the end of a certificate's
/// signature) — which differ between any two certificates of one CA: hashing every byte cost more than the rest
/// of a lookup, and a lookup runs several times per handshake. Crafted certificates that share those bytes only
/// share a bucket of a bounded map, and are still told apart by the comparison.
package struct CertificateBytesKey: Hashable, Sendable {
    /// Which 24 bytes are hashed.
    package enum HashedBytes: Sendable {
        case first
        case last
    }

    package let bytes: ArraySlice<UInt8>
    package let hashed: HashedBytes

    package init(_ bytes: ArraySlice<UInt8>, hashing hashed: HashedBytes) {
        self.bytes = bytes
        self.hashed = hashed
    }

    package func hash(into hasher: inout Hasher) {
        self.bytes.withUnsafeBytes { raw in
            hasher.combine(raw.count)
            guard raw.count >= 24 else {
                hasher.combine(bytes: raw)
                return
            }
            let start = self.hashed == .first ? 0 : raw.count - 24
            hasher.combine(raw.loadUnaligned(fromByteOffset: start, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: start + 16, as: UInt64.self))
        }
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
