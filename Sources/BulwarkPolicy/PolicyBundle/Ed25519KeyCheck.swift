/// Refuses the Ed25519 public keys that libsodium and Go's `crypto/ed25519` users expect refused, before a key can be
/// trusted to sign policy bundles.
///
/// - **Small order**: the eight points of the curve's torsion subgroup (the identity among them). Under such a key,
///   a signature can be made for any message without a private key (with the identity, `R` = the identity and
///   `s` = 0 verify everything), so a trusted-key file or a rotation naming one lets anyone sign.
/// - **Non-canonical encodings**: a `y` coordinate of p (2^255 - 19) or more, or `x` = 0 written with its sign bit
///   set. Such bytes decode to a point that has another, canonical encoding, so one key could be listed (and
///   counted toward a threshold) twice.
///
/// - **Points outside the prime-order subgroup** (``Ed25519PointCheck``): a `y` on no point of the curve, or a key
///   with a small-order component, under which the holder of another key can sign as well.
///
/// After this check, two keys with different bytes are different points of the prime-order subgroup, held by
/// different private keys: counting signers by their bytes counts them by point and by holder.
enum Ed25519KeyCheck {
    /// The `y` coordinates (little-endian, sign bit clear) of the points of order 1, 2, 4 and 8: 1 (the identity),
    /// p - 1 (order 2), 0 (the two points of order 4), and the two `y` of the four points of order 8.
    private static let smallOrderY: [[UInt8]] = [
        [0x01] + [UInt8](repeating: 0, count: 31),
        [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
        [UInt8](repeating: 0, count: 32),
        [
            0x26, 0xE8, 0x95, 0x8F, 0xC2, 0xB2, 0x27, 0xB0, 0x45, 0xC3, 0xF4, 0x89, 0xF2, 0xEF, 0x98, 0xF0,
            0xD5, 0xDF, 0xAC, 0x05, 0xD3, 0xC6, 0x33, 0x39, 0xB1, 0x38, 0x02, 0x88, 0x6D, 0x53, 0xFC, 0x05,
        ],
        [
            0xC7, 0x17, 0x6A, 0x70, 0x3D, 0x4D, 0xD8, 0x4F, 0xBA, 0x3C, 0x0B, 0x76, 0x0D, 0x10, 0x67, 0x0F,
            0x2A, 0x20, 0x53, 0xFA, 0x2C, 0x39, 0xCC, 0xC6, 0x4E, 0xC7, 0xFD, 0x77, 0x92, 0xAC, 0x03, 0x7A,
        ],
    ]

    /// Why `key` (32 bytes) must not be trusted, as the end of a sentence that starts with the key, or nil.
    static func weakness(of key: [UInt8]) -> String? {
        precondition(key.count == 32)
        var y = key
        y[31] &= 0x7F
        let signBit = key[31] & 0x80 != 0
        if Self.isAtLeastP(y) {
            return "is not a canonical encoding: its y coordinate is not below 2^255 - 19, so the same point has "
                + "another encoding and could be counted twice"
        }
        if Self.smallOrderY.contains(y) {
            // x = 0 (y = 1 or p - 1) has no sign: with the bit set it is also a non-canonical encoding.
            let xIsZero = y == Self.smallOrderY[0] || y == Self.smallOrderY[1]
            return "is a small-order point: a signature that verifies under it can be made without any private key"
                + (signBit && xIsZero ? " (and its sign bit is set where x = 0: a non-canonical encoding)" : "")
        }
        return Ed25519PointCheck.weakness(of: key)
    }

    /// Whether the little-endian 255-bit `y` is p = 2^255 - 19 or more: bytes 1…30 all 0xFF, byte 31 0x7F and byte
    /// 0 at least 0xED.
    private static func isAtLeastP(_ y: [UInt8]) -> Bool {
        y[31] == 0x7F && y[1...30].allSatisfy { $0 == 0xFF } && y[0] >= 0xED
    }
}
