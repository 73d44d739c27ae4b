/// Feeds a few bytes of a long key to a `Hasher` as whole words, for the caches whose keys are certificates' bytes
/// (equality still compares every byte): `Hasher.combine(bytes:)` costs several times more per byte than
/// combining the same bytes as three `UInt64`s.
package enum CacheKeyWords {
    /// Combines the first `count` bytes of `bytes` (all of them if there are fewer), zero-padded to whole words.
    package static func combine(first count: Int, of bytes: UnsafeRawBufferPointer, into hasher: inout Hasher) {
        Self.combine(UnsafeRawBufferPointer(rebasing: bytes.prefix(count)), into: &hasher)
    }

    /// Combines the last `count` bytes of `bytes` (all of them if there are fewer), zero-padded to whole words.
    package static func combine(last count: Int, of bytes: UnsafeRawBufferPointer, into hasher: inout Hasher) {
        Self.combine(UnsafeRawBufferPointer(rebasing: bytes.suffix(count)), into: &hasher)
    }

    private static func combine(_ bytes: UnsafeRawBufferPointer, into hasher: inout Hasher) {
        var offset = 0
        while offset < bytes.count {
            var word: UInt64 = 0
            let length = min(8, bytes.count - offset)
            withUnsafeMutableBytes(of: &word) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]))
            }
            hasher.combine(word)
            offset += length
        }
    }
}
