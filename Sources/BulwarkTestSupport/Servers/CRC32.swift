/// The CRC-32 of gzip (ISO-HDLC, reflected polynomial 0xEDB88320).
enum CRC32 {
    private static let polynomial: UInt32 = 0xEDB8_8320

    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 {
            value = value & 1 != 0 ? (value >> 1) ^ Self.polynomial : value >> 1
        }
        return value
    }

    /// The CRC-32 of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = Self.table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// The CRC-32 of `count` zero bytes in O(log count): the register is multiplied by x^(8·count) mod P.
    static func checksumOfZeros(count: Int) -> UInt32 {
        var result: UInt32 = 0x8000_0000  // the polynomial 1, reflected
        var power: UInt32 = 0x4000_0000  // x
        var exponent = UInt64(count) * 8
        while exponent > 0 {
            if exponent & 1 != 0 {
                result = Self.multiplyModP(result, power)
            }
            power = Self.multiplyModP(power, power)
            exponent >>= 1
        }
        return Self.multiplyModP(result, 0xFFFF_FFFF) ^ 0xFFFF_FFFF
    }

    /// a·b mod P, both reflected (as zlib's `multmodp`).
    private static func multiplyModP(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var mask: UInt32 = 0x8000_0000
        var product: UInt32 = 0
        var b = b
        while mask != 0 {
            if a & mask != 0 {
                product ^= b
            }
            mask >>= 1
            b = b & 1 != 0 ? (b >> 1) ^ Self.polynomial : b >> 1
        }
        return product
    }
}
