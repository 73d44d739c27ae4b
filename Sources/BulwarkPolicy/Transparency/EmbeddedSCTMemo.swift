import Foundation
import X509

/// The embedded SCTs of recently checked certificates, and which of their signatures verified: a server presents the
/// same leaf on every handshake, and taking its SCT list apart, rebuilding the precertificate's `TBSCertificate` (a
/// DER parse of all of it) and hashing what the logs signed cost a check far more than the policy does.
///
/// What is remembered is a pure function of exact bytes, never a verdict of the policy:
/// - **The SCTs**, or why the list cannot be read, by the exact bytes of the leaf's `TBSCertificate`
///   (``CertificateBytesKey``: equal only when every byte is). Those bytes hold the SCT list and everything the logs
///   signed but the issuer's key.
/// - **Which signatures verified**: SCT `index` of those bytes, with exactly this issuer SubjectPublicKeyInfo and
///   exactly this log key. Only successes are kept; any other combination is verified with the arithmetic.
/// - Everything the policy decides (the log's state, the SCT's date against the time of the check, the log's temporal
///   interval, the distinct operators, how many SCTs are needed) is decided again on every check.
///
/// Bounded: at most ``capacity`` certificates whose `TBSCertificate` is at most ``maximumBytes`` long, the least
/// recently used forgotten first, and in front of them the last few looked up (``CertificateIdentityFront``: found by
/// the identity of their bytes' memory, without hashing), each keeping its whole DER certificate and its SCTs alive:
/// a few MiB at worst. A larger certificate is taken apart, and its SCTs verified, on every check. Each certificate
/// keeps at most one verified signature per SCT: the SCT's log ID is the SHA-256 of the one log key that can verify
/// it, and the signed data holds the SHA-256 of the one issuer key it was made for.
final class EmbeddedSCTMemo: Sendable {
    static let shared = EmbeddedSCTMemo()

    /// One certificate's embedded SCTs, and the signatures of them that verified.
    final class Leaf: Sendable {
        /// One verified signature: which SCT, for which issuer key, with which log key.
        private struct Signature: Sendable {
            let index: Int
            let issuerKey: [UInt8]
            let logKey: [UInt8]
        }

        /// The embedded SCTs (nil when the certificate has no SCT list extension), or why they cannot be read.
        let scts: Result<[SignedCertificateTimestamp]?, CertificateTransparencyError>
        private let verified = LockedValue<[Signature]>([])

        init(_ certificate: Certificate) {
            self.scts = Result { () throws(CertificateTransparencyError) in
                try SignedCertificateTimestamp.embedded(in: certificate)
            }
        }

        /// Whether SCT `index` verified before with `logKey`, for a certificate issued by the holder of `issuerKey`
        /// (a DER SubjectPublicKeyInfo).
        func hasVerified(_ index: Int, issuerKey: ArraySlice<UInt8>, logKey: [UInt8]) -> Bool {
            self.verified.withLock { signatures in
                signatures.contains {
                    $0.index == index && $0.logKey == logKey && Self.same($0.issuerKey, issuerKey)
                }
            }
        }

        /// Remembers that SCT `index` verified with `logKey` for `issuerKey`, once (two checks of a new certificate
        /// side by side both verify it), and only for an SCT of ``scts``.
        func rememberVerified(_ index: Int, issuerKey: ArraySlice<UInt8>, logKey: [UInt8]) {
            guard case .success(let scts?) = self.scts, scts.indices.contains(index) else { return }
            let signature = Signature(index: index, issuerKey: Array(issuerKey), logKey: logKey)
            self.verified.withLock { signatures in
                guard !signatures.contains(where: { $0.index == index }) else { return }
                signatures.append(signature)
            }
        }

        /// The number of verified signatures remembered.
        var verifiedCount: Int { self.verified.withLock { $0.count } }

        private static func same(_ stored: [UInt8], _ bytes: ArraySlice<UInt8>) -> Bool {
            stored.withUnsafeBytes { left in
                bytes.withUnsafeBytes { right in
                    left.count == right.count
                        && (left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
                }
            }
        }
    }

    let capacity: Int
    let maximumBytes: Int
    private let state: LockedValue<TBSCertificateMap<Leaf>>

    init(capacity: Int = 128, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
        self.state = LockedValue(TBSCertificateMap(capacity: capacity))
    }

    /// The number of remembered certificates.
    var count: Int { self.state.withLock { $0.count } }

    /// The ``Leaf`` of `certificate`: remembered when a certificate with the same `TBSCertificate` bytes was checked
    /// before, otherwise taken apart now (and remembered, unless it is longer than ``maximumBytes``).
    func leaf(of certificate: Certificate) -> Leaf {
        let bytes = certificate.tbsCertificateBytes
        guard self.capacity > 0, bytes.count <= self.maximumBytes else { return Leaf(certificate) }
        if let remembered = self.state.withLock({ $0.value(for: bytes) }) { return remembered }
        let leaf = Leaf(certificate)
        return self.state.withLock { state in
            // Another check of the same certificate may have got there first: keep one, so that its signatures add up.
            if let first = state.storedValue(for: bytes) { return first }
            state.insert(leaf, for: bytes)
            return leaf
        }
    }
}
