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
/// chain is forgotten first. The last few chains looked up are compared first, before the map is searched.
final class PresentedIntermediatesCache: Sendable {
    /// A presented chain, leaf first; only its intermediates (from index 1) are the key.
    private struct Key: Hashable, Sendable {
        let presented: [Certificate]

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.presented.count)
            for index in self.presented.indices.dropFirst() {
                self.presented[index].hashTBSMemory(into: &hasher)
            }
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            guard lhs.presented.count == rhs.presented.count else { return false }
            for index in lhs.presented.indices.dropFirst()
            where !lhs.presented[index].sharesTBSMemory(with: rhs.presented[index]) {
                return false
            }
            return true
        }
    }

    static let shared = PresentedIntermediatesCache()

    /// A chain looked up recently, found again by comparing keys (a few addresses) without hashing them.
    private struct Recent: Sendable {
        let key: Key
        let store: CertificateStore
    }

    private struct State: Sendable {
        var entries: LeastRecentlyUsed<Key, CertificateStore>
        var recent: [Recent] = []
        var next = 0

        /// The store of `key` among the recent chains.
        func recentStore(for key: Key) -> CertificateStore? {
            for index in self.recent.indices where self.recent[index].key == key {
                return self.recent[index].store
            }
            return nil
        }

        /// Puts `key` among the recent chains, replacing the oldest; the chain it replaces counts as used now in
        /// the map behind (its uses among the recent ones were not counted there).
        mutating func keepRecent(_ key: Key, _ store: CertificateStore) {
            let entry = Recent(key: key, store: store)
            guard self.recent.count >= PresentedIntermediatesCache.recentCapacity else {
                self.recent.append(entry)
                return
            }
            _ = self.entries.value(forKey: self.recent[self.next].key)
            self.recent[self.next] = entry
            self.next = (self.next + 1) % PresentedIntermediatesCache.recentCapacity
        }
    }

    /// How many recently looked-up chains are compared before the map is searched.
    static let recentCapacity = 4

    let capacity: Int
    private let state: LockedValue<State>

    init(capacity: Int = 64) {
        self.capacity = capacity
        self.state = LockedValue(State(entries: LeastRecentlyUsed(capacity: capacity)))
    }

    /// The number of remembered chains.
    var count: Int { self.state.withLock { $0.entries.count } }

    /// `CertificateStore(presented.dropFirst())`, from memory when these same certificates were presented before.
    func store(forIntermediatesOf presented: [Certificate]) -> CertificateStore {
        guard presented.count > 1 else { return CertificateStore() }
        let key = Key(presented: presented)
        let remembered = self.state.withLock { state -> CertificateStore? in
            if let recent = state.recentStore(for: key) { return recent }
            guard let remembered = state.entries.value(forKey: key) else { return nil }
            state.keepRecent(key, remembered)
            return remembered
        }
        if let remembered { return remembered }
        let store = CertificateStore(presented.dropFirst())
        self.state.withLock { state in
            state.entries.insert(store, forKey: key)
            state.keepRecent(key, store)
        }
        return store
    }
}
