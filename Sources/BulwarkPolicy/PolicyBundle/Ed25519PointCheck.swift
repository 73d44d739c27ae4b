/// Whether 32 bytes encode a point of Ed25519's prime-order subgroup: a point on the curve with no torsion
/// component ([ℓ]A = the identity, as libsodium's `crypto_core_ed25519_is_valid_point` checks).
///
/// A key A + T, with T a small-order point, is a second key for the holder of A: with the cofactorless verification
/// most libraries (BoringSSL among them) do, the holder of `a` signs under A + T by trying nonces until the
/// challenge is a multiple of 8, and one in eight of A's own signatures verifies under A + T. Such a key would let
/// one private key count twice toward a threshold, so it is refused, as is a `y` that is on no point of the curve.
///
/// The arithmetic is plain and not constant-time: it runs on public keys only, once when a key is read.
enum Ed25519PointCheck {
    /// An element of the field of p = 2^255 - 19, as sixteen 16-bit limbs (little-endian) held in `Int64`s, fully
    /// reduced after each operation.
    struct Field: Equatable {
        var limbs: [Int64]

        static let zero = Field(limbs: [Int64](repeating: 0, count: 16))
        static let one = Field(limbs: [1] + [Int64](repeating: 0, count: 15))

        /// The little-endian 32 bytes, bit 255 ignored.
        init(bytes: [UInt8]) {
            var limbs = [Int64](repeating: 0, count: 16)
            for index in 0..<16 {
                limbs[index] = Int64(bytes[2 * index]) | (Int64(bytes[2 * index + 1]) << 8)
            }
            limbs[15] &= 0x7FFF
            self = Field(limbs: limbs).reduced()
        }

        init(limbs: [Int64]) { self.limbs = limbs }

        init(_ small: Int64) {
            self = Field.zero
            self.limbs[0] = small
            self = self.reduced()
        }

        /// The limbs carried into 16 bits each, what lies above 2^256 folded back (2^256 ≡ 38), and the value
        /// brought below p.
        func reduced() -> Field {
            var limbs = self.limbs
            while true {
                var carry: Int64 = 0
                for index in 0..<16 {
                    let value = limbs[index] + carry
                    limbs[index] = value & 0xFFFF
                    carry = value >> 16  // arithmetic shift: negative values borrow
                }
                if carry == 0 { break }
                limbs[0] += carry * 38
            }
            var result = Field(limbs: limbs)
            while result.isAtLeastP { result = result.minusP }
            return result
        }

        private var isAtLeastP: Bool {
            // p = 0x7FFF FFFF … FFFF FFED in 16-bit limbs: 0xFFED, then fourteen 0xFFFF, then 0x7FFF.
            if self.limbs[15] > 0x7FFF { return true }
            if self.limbs[15] < 0x7FFF { return false }
            for index in stride(from: 14, through: 1, by: -1) where self.limbs[index] != 0xFFFF { return false }
            return self.limbs[0] >= 0xFFED
        }

        private var minusP: Field {
            var limbs = self.limbs
            limbs[0] -= 0xFFED
            for index in 1..<15 { limbs[index] -= 0xFFFF }
            limbs[15] -= 0x7FFF
            var borrow: Int64 = 0
            for index in 0..<16 {
                let value = limbs[index] + borrow
                limbs[index] = value & 0xFFFF
                borrow = value >> 16
            }
            return Field(limbs: limbs)
        }

        static func + (lhs: Field, rhs: Field) -> Field {
            Field(limbs: (0..<16).map { lhs.limbs[$0] + rhs.limbs[$0] }).reduced()
        }

        static func - (lhs: Field, rhs: Field) -> Field {
            // Adding 2p keeps every limb's total non-negative before the carry.
            var limbs = (0..<16).map { lhs.limbs[$0] - rhs.limbs[$0] }
            limbs[0] += 2 * 0xFFED
            for index in 1..<15 { limbs[index] += 2 * 0xFFFF }
            limbs[15] += 2 * 0x7FFF
            return Field(limbs: limbs).reduced()
        }

        static func * (lhs: Field, rhs: Field) -> Field {
            var product = [Int64](repeating: 0, count: 32)
            for i in 0..<16 {
                for j in 0..<16 { product[i + j] += lhs.limbs[i] * rhs.limbs[j] }
            }
            // Limbs 16…31 are multiples of 2^256 ≡ 38.
            var limbs = [Int64](repeating: 0, count: 16)
            for index in 0..<16 { limbs[index] = product[index] + 38 * product[index + 16] }
            return Field(limbs: limbs).reduced()
        }

        /// `self` to the power `exponent` (little-endian bytes).
        func power(_ exponent: [UInt8]) -> Field {
            var result = Field.one
            for byte in exponent.reversed() {
                for bit in stride(from: 7, through: 0, by: -1) {
                    result = result * result
                    if (byte >> UInt8(bit)) & 1 == 1 { result = result * self }
                }
            }
            return result
        }

        var isOdd: Bool { self.limbs[0] & 1 == 1 }
    }

    /// p - 2, (p - 5) / 8 and (p - 1) / 4, little-endian.
    private static let pMinus2: [UInt8] = [0xEB] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
    private static let pMinus5Over8: [UInt8] = [0xFD] + [UInt8](repeating: 0xFF, count: 30) + [0x0F]
    private static let pMinus1Over4: [UInt8] = [0xFB] + [UInt8](repeating: 0xFF, count: 30) + [0x1F]
    /// ℓ = 2^252 + 27742317777372353535851937790883648493, little-endian.
    private static let order: [UInt8] =
        [
            0xED, 0xD3, 0xF5, 0x5C, 0x1A, 0x63, 0x12, 0x58, 0xD6, 0x9C, 0xF7, 0xA2, 0xDE, 0xF9, 0xDE, 0x14,
        ] + [UInt8](repeating: 0, count: 15) + [0x10]

    /// d = -121665 / 121666.
    private static let d: Field = (Field.zero - Field(121_665)) * Field(121_666).power(pMinus2)
    private static let twoD: Field = d + d
    /// A square root of -1: 2^((p - 1) / 4).
    private static let sqrtMinusOne: Field = Field(2).power(pMinus1Over4)

    /// A point in extended coordinates (X : Y : Z : T), x = X/Z, y = Y/Z, xy = T/Z.
    struct Point {
        var x: Field
        var y: Field
        var z: Field
        var t: Field

        static let identity = Point(x: .zero, y: .one, z: .one, t: .zero)

        /// The sum, by the unified formula for a = -1 (complete on Ed25519, so it also doubles).
        static func + (p: Point, q: Point) -> Point {
            let a = (p.y - p.x) * (q.y - q.x)
            let b = (p.y + p.x) * (q.y + q.x)
            let c = p.t * Ed25519PointCheck.twoD * q.t
            let d = (p.z + p.z) * q.z
            let e = b - a
            let f = d - c
            let g = d + c
            let h = b + a
            return Point(x: e * f, y: g * h, z: f * g, t: e * h)
        }

        var isIdentity: Bool { self.x == .zero && self.y == self.z }
    }

    /// The point `bytes` encodes (RFC 8032, 5.1.3), or nil when `y` is on no point of the curve (or x = 0 is written
    /// with its sign bit set). `y` must already be below p.
    static func decode(_ bytes: [UInt8]) -> Point? {
        let y = Field(bytes: bytes)
        let sign = bytes[31] & 0x80 != 0
        let ySquared = y * y
        let u = ySquared - .one
        let v = Self.d * ySquared + .one
        let v3 = v * v * v
        var x = u * v3 * (u * v3 * v3 * v).power(Self.pMinus5Over8)
        let check = v * x * x
        if check == u {
            // x is a root.
        } else if check == Field.zero - u {
            x = x * Self.sqrtMinusOne
        } else {
            return nil
        }
        if x == .zero && sign { return nil }
        if x.isOdd != sign { x = Field.zero - x }
        return Point(x: x, y: y, z: .one, t: x * y)
    }

    /// Why the canonical encoding `bytes` is not a point of the prime-order subgroup, as the end of a sentence that
    /// starts with the key, or nil when it is one.
    static func weakness(of bytes: [UInt8]) -> String? {
        guard let point = Self.decode(bytes) else {
            return "is not a point of the Ed25519 curve, so no signature can verify under it"
        }
        var result = Point.identity
        for byte in Self.order.reversed() {
            for bit in stride(from: 7, through: 0, by: -1) {
                result = result + result
                if (byte >> UInt8(bit)) & 1 == 1 { result = result + point }
            }
        }
        guard result.isIdentity else {
            return "has a small-order component (it is another key plus a point of order 2, 4 or 8): the holder of "
                + "the other key can sign under it too, so one private key would count as two"
        }
        return nil
    }
}
