/// A bounded map that forgets its least recently used entry when it is full: the storage of Bulwark's small caches
/// (parsed certificates, decoded extensions, trusted decisions).
///
/// Not thread-safe on its own: each cache keeps one behind its lock. Eviction scans the entries (O(capacity)), which
/// is cheap at the capacities used (128–256) and only happens when a new key is stored in a full map.
package struct LeastRecentlyUsed<Key: Hashable, Value> {
    /// The most entries kept; zero or less keeps nothing.
    package let capacity: Int
    private var entries: [Key: (value: Value, lastUse: UInt64)] = [:]
    private var tick: UInt64 = 0

    package init(capacity: Int) {
        self.capacity = capacity
    }

    /// The number of entries.
    package var count: Int { self.entries.count }

    /// The value stored under `key`, which counts as a use. The key is hashed once.
    package mutating func value(forKey key: Key) -> Value? {
        guard let index = self.entries.index(forKey: key) else { return nil }
        self.tick += 1
        self.entries.values[index].lastUse = self.tick
        return self.entries.values[index].value
    }

    /// Stores `value` under `key` as the most recently used entry. If the map is full and `key` is new, an entry
    /// is evicted first: one for which `evictingFirst` is true if there is one (an expired one, say), otherwise the
    /// least recently used.
    package mutating func insert(
        _ value: Value,
        forKey key: Key,
        evictingFirst isStale: (Value) -> Bool = { _ in false }
    ) {
        _ = self.inserting(value, forKey: key, evictingFirst: isStale)
    }

    /// ``insert(_:forKey:evictingFirst:)``, returning the value it evicted, if any (for a cache that counts bytes).
    package mutating func inserting(
        _ value: Value,
        forKey key: Key,
        evictingFirst isStale: (Value) -> Bool = { _ in false }
    ) -> Value? {
        guard self.capacity > 0 else { return nil }
        var evicted: Value?
        if self.entries.count >= self.capacity, self.entries[key] == nil {
            var victim: Key?
            var oldest = UInt64.max
            for (candidate, entry) in self.entries {
                if isStale(entry.value) {
                    victim = candidate
                    break
                }
                if entry.lastUse < oldest {
                    oldest = entry.lastUse
                    victim = candidate
                }
            }
            if let victim { evicted = self.entries.removeValue(forKey: victim)?.value }
        }
        self.tick += 1
        self.entries[key] = (value, self.tick)
        return evicted
    }

    /// Forgets the least recently used entry and returns its value; nil when the map is empty.
    @discardableResult
    package mutating func removeLeastRecentlyUsed() -> Value? {
        guard let victim = self.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) else { return nil }
        self.entries[victim.key] = nil
        return victim.value.value
    }

    /// Forgets the entry under `key`.
    package mutating func removeValue(forKey key: Key) {
        self.entries[key] = nil
    }

    /// Forgets every entry.
    package mutating func removeAll() {
        self.entries.removeAll()
    }
}

extension LeastRecentlyUsed: Sendable where Key: Sendable, Value: Sendable {}
