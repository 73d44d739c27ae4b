/// The few values most recently looked up in a byte-keyed certificate cache, found again by the identity of the
/// bytes' memory rather than by hashing them: the certificates of one handshake are looked up several times (the
/// web PKI policy, the host name, the pins), and each time they are the same `Certificate` values, handed out by
/// the client's parse cache or by the trust store.
///
/// An entry keeps the bytes it was stored for alive (it holds the `ArraySlice`), so while it exists no other bytes
/// can occupy that memory: a lookup whose bytes start at the same address and have the same length reads the very
/// same bytes. Anything else is a miss, left to the cache behind. Not thread-safe on its own: it is kept behind the
/// cache's lock. At most ``capacity`` entries; a new one replaces the oldest.
struct CertificateIdentityFront<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        let address: UInt
        let count: Int
        /// Keeps the memory at `address` holding these bytes while the entry exists.
        let bytes: ArraySlice<UInt8>
        let value: Value
    }

    static var capacity: Int { 8 }

    private var entries: [Entry] = []
    private var next = 0

    /// The value stored for bytes at the same memory as `bytes`, or nil.
    func value(for bytes: ArraySlice<UInt8>) -> Value? {
        let (address, count) = Self.identity(of: bytes)
        guard count > 0 else { return nil }
        for index in self.entries.indices where self.entries[index].address == address {
            if self.entries[index].count == count { return self.entries[index].value }
        }
        return nil
    }

    /// Stores `value` for `bytes`, replacing the oldest entry when full, and returns the bytes of the entry it
    /// replaced (so the cache behind can count that certificate's use). Empty bytes are not stored.
    @discardableResult
    mutating func insert(_ value: Value, for bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let (address, count) = Self.identity(of: bytes)
        guard count > 0 else { return nil }
        let entry = Entry(address: address, count: count, bytes: bytes, value: value)
        guard self.entries.count >= Self.capacity else {
            self.entries.append(entry)
            return nil
        }
        let replaced = self.entries[self.next].bytes
        self.entries[self.next] = entry
        self.next = (self.next + 1) % Self.capacity
        return replaced
    }

    /// The number of entries.
    var count: Int { self.entries.count }

    /// Forgets every entry.
    mutating func removeAll() {
        self.entries.removeAll()
        self.next = 0
    }

    private static func identity(of bytes: ArraySlice<UInt8>) -> (address: UInt, count: Int) {
        bytes.withUnsafeBytes { (UInt(bitPattern: $0.baseAddress), $0.count) }
    }
}
