/// A bounded map from a certificate's exact `TBSCertificate` bytes to a value that is a pure function of them: the
/// storage of ``ParsedExtensionsCache`` and `EmbeddedSCTMemo`.
///
/// Behind, a ``LeastRecentlyUsed`` map keyed by ``CertificateBytesKey`` (hashing every byte; equal only when every
/// byte is); in front, the last few values looked up, found by the identity of their bytes' memory without hashing
/// (``CertificateIdentityFront``): one handshake looks its certificates up several times. Not thread-safe on its
/// own: each cache keeps one behind its lock.
struct TBSCertificateMap<Value: Sendable>: Sendable {
    private var entries: LeastRecentlyUsed<CertificateBytesKey, Value>
    private var recent = CertificateIdentityFront<Value>()

    init(capacity: Int) {
        self.entries = LeastRecentlyUsed(capacity: capacity)
    }

    /// The number of values in the map behind (those in front are there too, unless evicted since).
    var count: Int { self.entries.count }

    /// The value stored for `bytes`, which counts as a use; nil when there is none.
    mutating func value(for bytes: ArraySlice<UInt8>) -> Value? {
        if let recent = self.recent.value(for: bytes) { return recent }
        guard let stored = self.entries.value(forKey: CertificateBytesKey(bytes)) else { return nil }
        self.keepRecent(stored, for: bytes)
        return stored
    }

    /// The value stored for `bytes` in the map behind, without looking in front (a second look, under the same lock
    /// as an insert, after a miss).
    mutating func storedValue(for bytes: ArraySlice<UInt8>) -> Value? {
        self.entries.value(forKey: CertificateBytesKey(bytes))
    }

    /// Stores `value` for `bytes`, in front and behind.
    mutating func insert(_ value: Value, for bytes: ArraySlice<UInt8>) {
        self.entries.insert(value, forKey: CertificateBytesKey(bytes))
        self.keepRecent(value, for: bytes)
    }

    /// Puts `value` in front; the certificate it pushes out counts as used now in the map behind (its uses in front
    /// were not counted there).
    private mutating func keepRecent(_ value: Value, for bytes: ArraySlice<UInt8>) {
        if let replaced = self.recent.insert(value, for: bytes) {
            _ = self.entries.value(forKey: CertificateBytesKey(replaced))
        }
    }
}
