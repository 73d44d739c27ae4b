import X509

/// The arrays of the chains swift-certificates' `Verifier` verified recently, handed out again when it verifies the
/// same certificates: turning its `ValidatedCertificateChain` into the `[Certificate]` of a ``TrustedChain`` copies
/// every certificate (a `Certificate` is a struct of two dozen references), on every handshake, although a server's
/// verified path is the same certificates each time.
///
/// Only the array is reused, never a decision: the `Verifier` has verified the chain, every signature and check
/// included, before it is looked up here. Certificates are told apart by the identity of their `TBSCertificate`'s
/// memory, as in ``CertificateIdentityFront``: a remembered array keeps its certificates alive, so while it is here
/// no other bytes can occupy that memory, and a certificate reading the same memory was decoded from the same
/// bytes (a parsed certificate's signature follows its `TBSCertificate` in the same buffer). The signatures are
/// compared as well, so that a certificate with the same `TBSCertificate` and another signature is never taken for
/// the one remembered. At most ``capacity`` arrays; the oldest is forgotten first.
final class VerifiedChainMemo: Sendable {
    static let shared = VerifiedChainMemo()
    static let capacity = 8

    private let recent = LockedValue<[[Certificate]]>([])

    /// The number of remembered arrays.
    var count: Int { self.recent.withLock { $0.count } }

    /// `Array(chain)`: a remembered array holding the same certificates in the same order, or a new one (then
    /// remembered).
    func array(of chain: ValidatedCertificateChain) -> [Certificate] {
        let remembered = self.recent.withLock { arrays -> [Certificate]? in
            for index in arrays.indices where Self.sameCertificates(arrays[index], chain) {
                return arrays[index]
            }
            return nil
        }
        if let remembered { return remembered }
        let array = Array(chain)
        self.recent.withLock { arrays in
            if arrays.count >= Self.capacity { arrays.removeFirst() }
            arrays.append(array)
        }
        return array
    }

    /// Whether `array` and `chain` hold certificates over the same memory, in the same order. By index: iterating
    /// would copy each certificate.
    static func sameCertificates(_ array: [Certificate], _ chain: ValidatedCertificateChain) -> Bool {
        guard array.count == chain.count else { return false }
        for (offset, index) in chain.indices.enumerated() {
            guard array[offset].sharesTBSMemory(with: chain[index]), array[offset].signature == chain[index].signature
            else { return false }
        }
        return true
    }
}
