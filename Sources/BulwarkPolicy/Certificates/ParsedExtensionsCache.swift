import Foundation
import X509

/// The ``ParsedExtensions`` of recently checked certificates, by the exact bytes of their `TBSCertificate` (which
/// holds the extensions): a server presents the same leaf and intermediates on every connection, and decoding their
/// extensions is most of what the web PKI checks cost.
///
/// Only decoding, and ``WebPKIPolicy``'s verdicts on a single certificate (which read nothing but these bytes), are
/// reused, never a decision about a path: every path is checked on every evaluation. Bounded: at most `capacity`
/// certificates whose `TBSCertificate` is at most `maximumBytes` long (a larger one is decoded every time); the
/// least recently used one is evicted first. One instance, ``shared``, serves the process; it is thread-safe. Keys
/// are ``CertificateBytesKey``s hashing the first bytes of the `TBSCertificate` (its serial number); in front of
/// them, the last few certificates looked up are found by the identity of their bytes' memory
/// (``CertificateIdentityFront``), without hashing: one handshake looks its certificates up several times.
final class ParsedExtensionsCache: Sendable {
    static let shared = ParsedExtensionsCache()

    let capacity: Int
    let maximumBytes: Int

    private struct State: Sendable {
        var entries: LeastRecentlyUsed<CertificateBytesKey, ParsedExtensions>
        var recent = CertificateIdentityFront<ParsedExtensions>()

        /// Puts `parsed` in front; the certificate it pushes out counts as used now in the map behind (its uses
        /// in front were not counted there).
        mutating func keepRecent(_ parsed: ParsedExtensions, for bytes: ArraySlice<UInt8>) {
            if let replaced = self.recent.insert(parsed, for: bytes) {
                _ = self.entries.value(forKey: CertificateBytesKey(replaced, hashing: .first))
            }
        }
    }

    private let state: LockedValue<State>

    init(capacity: Int = 128, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
        self.state = LockedValue(State(entries: LeastRecentlyUsed(capacity: capacity)))
    }

    /// The number of remembered certificates.
    var count: Int { self.state.withLock { $0.entries.count } }

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
        let key = CertificateBytesKey(bytes, hashing: .first)
        let remembered = self.state.withLock { state -> ParsedExtensions? in
            if let recent = state.recent.value(for: bytes) { return recent }
            guard let remembered = state.entries.value(forKey: key) else { return nil }
            state.keepRecent(remembered, for: bytes)
            return remembered
        }
        if let remembered { return remembered }
        let parsed = ParsedExtensions(certificate())
        self.state.withLock { state in
            state.entries.insert(parsed, forKey: key)
            state.keepRecent(parsed, for: bytes)
        }
        return parsed
    }
}
