/// A small gzip (RFC 1952) writer over DEFLATE (RFC 1951), so the test servers need no zlib binding.
///
/// `compress(_:)` uses fixed Huffman codes with greedy LZ77 matching: real compression, valid for any inflater.
/// `zeroBomb(inflatedSize:)` hand-builds one dynamic-Huffman block in which each 258-byte run of zeros costs two
/// bits, the densest DEFLATE allows (about 1:1030, like `gzip -9` on zeros), in a few milliseconds.
enum GzipEncoder {
    /// `data` as a gzip member.
    static func compress(_ data: [UInt8]) -> [UInt8] {
        var writer = BitWriter()
        writer.write(1, bitCount: 1)  // BFINAL
        writer.write(1, bitCount: 2)  // BTYPE = 01, fixed Huffman codes
        var table = [Int](repeating: -1, count: 1 << 15)
        var position = 0
        while position < data.count {
            var matchLength = 0
            var matchDistance = 0
            if position + 2 < data.count {
                let key = Self.hash(data, position)
                let candidate = table[key]
                table[key] = position
                if candidate >= 0, position - candidate <= 32_768 {
                    let limit = min(258, data.count - position)
                    var length = 0
                    while length < limit, data[candidate + length] == data[position + length] {
                        length += 1
                    }
                    if length >= 3 {
                        matchLength = length
                        matchDistance = position - candidate
                    }
                }
            }
            if matchLength > 0 {
                Self.writeFixedLength(matchLength, to: &writer)
                Self.writeFixedDistance(matchDistance, to: &writer)
                for inner in (position + 1)..<(position + matchLength) where inner + 2 < data.count {
                    table[Self.hash(data, inner)] = inner
                }
                position += matchLength
            } else {
                Self.writeFixedSymbol(Int(data[position]), to: &writer)
                position += 1
            }
        }
        Self.writeFixedSymbol(256, to: &writer)
        return Self.member(deflated: writer.finish(), crc: CRC32.checksum(data), size: data.count)
    }

    /// A gzip member that inflates to `inflatedSize` zero bytes (a decompression bomb).
    static func zeroBomb(inflatedSize: Int) -> [UInt8] {
        precondition(inflatedSize >= 1)
        var writer = BitWriter()
        writer.write(1, bitCount: 1)  // BFINAL
        writer.write(2, bitCount: 2)  // BTYPE = 10, dynamic Huffman codes
        writer.write(29, bitCount: 5)  // HLIT: 286 literal/length codes (up to 285, length 258)
        writer.write(0, bitCount: 5)  // HDIST: 1 distance code
        writer.write(14, bitCount: 4)  // HCLEN: 18 code-length codes
        // Code-length code: 18 → "0", 1 → "10", 2 → "11". Lengths in the RFC 1951 transmission order.
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1]
        for symbol in order {
            writer.write(symbol == 18 ? 1 : (symbol == 1 || symbol == 2) ? 2 : 0, bitCount: 3)
        }
        // Literal/length lengths: 0 → 2, 1...255 → 0, 256 → 2, 257...284 → 0, 285 → 1; distance 0 → 1.
        writer.writeCode(0b11, length: 2)  // length 2
        writer.writeCode(0b0, length: 1)
        writer.write(138 - 11, bitCount: 7)  // 138 zeros
        writer.writeCode(0b0, length: 1)
        writer.write(117 - 11, bitCount: 7)  // 117 zeros
        writer.writeCode(0b11, length: 2)  // length 2
        writer.writeCode(0b0, length: 1)
        writer.write(28 - 11, bitCount: 7)  // 28 zeros
        writer.writeCode(0b10, length: 2)  // length 1 (symbol 285)
        writer.writeCode(0b10, length: 2)  // length 1 (distance 0)
        // Canonical codes: 285 → "0", literal 0 → "10", end of block → "11"; distance 1 → "0".
        writer.writeCode(0b10, length: 2)
        let remaining = inflatedSize - 1
        for _ in 0..<(remaining / 258) {
            writer.write(0, bitCount: 2)  // length 258 ("0"), distance 1 ("0")
        }
        for _ in 0..<(remaining % 258) {
            writer.writeCode(0b10, length: 2)
        }
        writer.writeCode(0b11, length: 2)
        let crc = CRC32.checksumOfZeros(count: inflatedSize)
        return Self.member(deflated: writer.finish(), crc: crc, size: inflatedSize)
    }

    private static func member(deflated: [UInt8], crc: UInt32, size: Int) -> [UInt8] {
        var bytes: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF]
        bytes.reserveCapacity(bytes.count + deflated.count + 8)
        bytes.append(contentsOf: deflated)
        let isize = UInt32(truncatingIfNeeded: size)
        for shift in stride(from: 0, to: 32, by: 8) {
            bytes.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift)))
        }
        for shift in stride(from: 0, to: 32, by: 8) {
            bytes.append(UInt8(truncatingIfNeeded: isize >> UInt32(shift)))
        }
        return bytes
    }

    private static func hash(_ data: [UInt8], _ position: Int) -> Int {
        let value = Int(data[position]) << 16 | Int(data[position + 1]) << 8 | Int(data[position + 2])
        return (value &* 2_654_435_761) >> 17 & 0x7FFF
    }

    private static func writeFixedSymbol(_ symbol: Int, to writer: inout BitWriter) {
        switch symbol {
        case 0...143: writer.writeCode(UInt32(0x30 + symbol), length: 8)
        case 144...255: writer.writeCode(UInt32(0x190 + symbol - 144), length: 9)
        case 256...279: writer.writeCode(UInt32(symbol - 256), length: 7)
        default: writer.writeCode(UInt32(0xC0 + symbol - 280), length: 8)
        }
    }

    private static let lengthBases = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227,
        258,
    ]
    private static let lengthExtraBits = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ]
    private static let distanceBases = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
        6145, 8193, 12289, 16385, 24577,
    ]
    private static let distanceExtraBits = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
    ]

    private static func writeFixedLength(_ length: Int, to writer: inout BitWriter) {
        let index = Self.lengthBases.lastIndex { $0 <= length }!
        Self.writeFixedSymbol(257 + index, to: &writer)
        writer.write(UInt32(length - Self.lengthBases[index]), bitCount: Self.lengthExtraBits[index])
    }

    private static func writeFixedDistance(_ distance: Int, to writer: inout BitWriter) {
        let index = Self.distanceBases.lastIndex { $0 <= distance }!
        writer.writeCode(UInt32(index), length: 5)
        writer.write(UInt32(distance - Self.distanceBases[index]), bitCount: Self.distanceExtraBits[index])
    }
}

/// Packs DEFLATE bits: values least-significant bit first, Huffman codes most-significant bit first.
private struct BitWriter {
    private var bytes: [UInt8] = []
    private var buffer: UInt64 = 0
    private var count = 0

    mutating func write(_ value: UInt32, bitCount: Int) {
        guard bitCount > 0 else { return }
        self.buffer |= UInt64(value & ((1 << UInt32(bitCount)) - 1)) << UInt64(self.count)
        self.count += bitCount
        while self.count >= 8 {
            self.bytes.append(UInt8(truncatingIfNeeded: self.buffer))
            self.buffer >>= 8
            self.count -= 8
        }
    }

    mutating func writeCode(_ code: UInt32, length: Int) {
        var reversed: UInt32 = 0
        for bit in 0..<length {
            reversed |= ((code >> UInt32(bit)) & 1) << UInt32(length - 1 - bit)
        }
        self.write(reversed, bitCount: length)
    }

    mutating func finish() -> [UInt8] {
        if self.count > 0 {
            self.bytes.append(UInt8(truncatingIfNeeded: self.buffer))
            self.buffer = 0
            self.count = 0
        }
        return self.bytes
    }
}
