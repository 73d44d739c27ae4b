import X509

/// The `CertificateStore` of the intermediates a server presented, kept with the parsed chain it was built from:
/// building one groups the certificates by subject, hashing every attribute of every distinguished name, on every
/// handshake, although a server presents the same chain each time.
///
/// Chains are told apart by the identity of their certificates' bytes: a client's parse cache hands every
/// handshake the same `Certificate`s, whose `TBSCertificate` bytes share memory with the ones remembered here. Two
/// certificates whose `TBSCertificate` is the same memory were parsed from the same DER, which fixes the signature
/// that follows it; and that memory holds the same bytes while both are alive (an entry keeps its certificates
/// alive, so their memory cannot be reused for others). A chain parsed afresh is another key, and gets a store of
/// its own. A store
/// is a pure function of its certificates: nothing about trust is remembered. Bounded: the least recently used
/// chain is forgotten first.
final class PresentedIntermediatesCache: Sendable {
    /// A presented chain, leaf first; only its intermediates (from index 1) are the key.
    private struct Key: Hashable, Sendable {
        let presented: [Certificate]

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.presented.count)
            for index in self.presented.indices.dropFirst() {
                self.presented[index].tbsCertificateBytes.withUnsafeBytes { bytes in
                    hasher.combine(UInt(bitPattern: bytes.baseAddress))
                    hasher.combine(bytes.count)
                }
            }
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            guard lhs.presented.count == rhs.presented.count else { return false }
            for index in lhs.presented.indices.dropFirst()
            where !Self.sameMemory(lhs.presented[index].tbsCertificateBytes, rhs.presented[index].tbsCertificateBytes) {
                return false
            }
            return true
        }

        private static func sameMemory(_ left: ArraySlice<UInt8>, _ right: ArraySlice<UInt8>) -> Bool {
            left.withUnsafeBytes { left in
                right.withUnsafeBytes { right in left.baseAddress == right.baseAddress && left.count == right.count }
            }
        }
    }

    static let shared = PresentedIntermediatesCache()

    let capacity: Int
    private let entries: LockedValue<LeastRecentlyUsed<Key, CertificateStore>>

    init(capacity: Int = 64) {
        self.capacity = capacity
        self.entries = LockedValue(LeastRecentlyUsed(capacity: capacity))
    }

    /// The number of remembered chains.
    var count: Int { self.entries.withLock { $0.count } }

    /// `CertificateStore(presented.dropFirst())`, from memory when these same certificates were presented before.
    func store(forIntermediatesOf presented: [Certificate]) -> CertificateStore {
        guard presented.count > 1 else { return CertificateStore() }
        let key = Key(presented: presented)
        if let remembered = self.entries.withLock({ $0.value(forKey: key) }) {
            return remembered
        }
        let store = CertificateStore(presented.dropFirst())
        self.entries.withLock { $0.insert(store, forKey: key) }
        return store
    }
}
