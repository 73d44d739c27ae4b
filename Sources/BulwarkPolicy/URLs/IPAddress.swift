/// An IPv4 or IPv6 address read from its text: the one IP literal parser of the package.
///
/// - **IPv4**: a strict dotted quad, four decimal numbers 0-255 without leading zeros (`127.0.0.1`). Every other
///   spelling that some parser reads as an address (`127.1`, `2130706433`, `0x7f.0.0.1`, `0177.0.0.1`) is not an
///   address here: ``HostName`` refuses such a host outright (the WHATWG "ends in a number" rule), so no reader can
///   take it for a name either.
/// - **IPv6**: the WHATWG URL Standard's IPv6 parser, without brackets, with a strict dotted quad for an embedded IPv4
///   address (`::ffff:192.0.2.1`). Zone identifiers (`fe80::1%eth0`) are not addresses: a URL cannot carry one
///   unambiguously.
///
/// ``description`` writes the canonical text: the dotted quad, or the RFC 5952 form (lower-case hex, no leading zeros,
/// the longest run of two or more zero groups, the first on a tie, shortened to `::`).
package struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    package let bytes: [UInt8]

    /// Whether this is an IPv4 address.
    package var isIPv4: Bool { self.bytes.count == 4 }

    /// The address written as `text`, or nil when `text` is not an IPv4 dotted quad or an IPv6 address (without
    /// brackets).
    package init?(_ text: some StringProtocol) {
        let utf8 = text.utf8
        if utf8.contains(UInt8(ascii: ":")) {
            guard let pieces = Self.parseIPv6(utf8) else { return nil }
            self.init(pieces: pieces)
        } else {
            guard let value = Self.parseIPv4(utf8) else { return nil }
            self.init(ipv4: value)
        }
    }

    /// The address of 4 (IPv4) or 16 (IPv6) bytes in network byte order; nil for any other count.
    package init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = Array(bytes)
    }

    /// An IPv4 address of a big-endian 32-bit number.
    init(ipv4 value: UInt32) {
        self.bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// An IPv6 address of eight 16-bit pieces.
    init(pieces: [UInt16]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for piece in pieces {
            bytes.append(UInt8(piece >> 8))
            bytes.append(UInt8(truncatingIfNeeded: piece))
        }
        self.bytes = bytes
    }

    /// `127.0.0.1`, or `2001:db8::1` (RFC 5952, without brackets).
    package var description: String {
        if self.isIPv4 {
            return self.bytes.map(String.init).joined(separator: ".")
        }
        var pieces: [UInt16] = []
        pieces.reserveCapacity(8)
        for index in stride(from: 0, to: 16, by: 2) {
            pieces.append(UInt16(self.bytes[index]) << 8 | UInt16(self.bytes[index + 1]))
        }
        return Self.formatIPv6(pieces)
    }

    // MARK: - IPv4

    /// Parses a strict dotted quad: four decimal numbers 0-255 without leading zeros. Returns the address as a
    /// big-endian 32-bit number; allocates nothing.
    static func parseIPv4<C: Collection<UInt8>>(_ bytes: C) -> UInt32? {
        var address: UInt32 = 0
        var parts = 0
        var value: UInt32 = 0
        var digits = 0
        var startsWithZero = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, parts < 3 else { return nil }
                address = address << 8 | value
                parts += 1
                value = 0
                digits = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if digits == 0 {
                startsWithZero = byte == UInt8(ascii: "0")
            } else if startsWithZero {
                return nil
            }
            value = value * 10 + UInt32(byte - UInt8(ascii: "0"))
            digits += 1
            guard value <= 255 else { return nil }
        }
        guard digits > 0, parts == 3 else { return nil }
        return address << 8 | value
    }

    // MARK: - IPv6

    static func hexValue(_ byte: UInt8) -> UInt16? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt16(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt16(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt16(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// Parses an IPv6 address without brackets into its eight 16-bit pieces (WHATWG URL Standard IPv6 parser,
    /// with a strict dotted quad for an embedded IPv4 address).
    static func parseIPv6<C: Collection<UInt8>>(_ input: C) -> [UInt16]? {
        let bytes = Array(input)
        let count = bytes.count
        guard count > 0 else { return nil }
        var pieces = [UInt16](repeating: 0, count: 8)
        var pieceIndex = 0
        var compress: Int?
        var position = 0
        if bytes[0] == UInt8(ascii: ":") {
            guard count > 1, bytes[1] == UInt8(ascii: ":") else { return nil }
            position = 2
            pieceIndex = 1
            compress = 1
        }
        while position < count {
            guard pieceIndex < 8 else { return nil }
            if bytes[position] == UInt8(ascii: ":") {
                guard compress == nil else { return nil }
                position += 1
                pieceIndex += 1
                compress = pieceIndex
                continue
            }
            var value: UInt16 = 0
            var length = 0
            while length < 4, position < count, let digit = self.hexValue(bytes[position]) {
                value = value << 4 | digit
                position += 1
                length += 1
            }
            if position < count, bytes[position] == UInt8(ascii: ".") {
                guard length > 0, pieceIndex <= 6, let ipv4 = self.parseIPv4(bytes[(position - length)...]) else {
                    return nil
                }
                pieces[pieceIndex] = UInt16(truncatingIfNeeded: ipv4 >> 16)
                pieces[pieceIndex + 1] = UInt16(truncatingIfNeeded: ipv4)
                pieceIndex += 2
                position = count
                break
            }
            guard length > 0 else { return nil }
            if position < count {
                guard bytes[position] == UInt8(ascii: ":") else { return nil }
                position += 1
                guard position < count else { return nil }
            }
            pieces[pieceIndex] = value
            pieceIndex += 1
        }
        if let compress {
            var swaps = pieceIndex - compress
            pieceIndex = 7
            while pieceIndex != 0 && swaps > 0 {
                pieces.swapAt(pieceIndex, compress + swaps - 1)
                pieceIndex -= 1
                swaps -= 1
            }
        } else if pieceIndex != 8 {
            return nil
        }
        return pieces
    }

    /// Writes an IPv6 address in the RFC 5952 form, without brackets.
    static func formatIPv6(_ pieces: [UInt16]) -> String {
        // The longest run of at least two zero pieces; the first one wins a tie.
        var bestStart = -1
        var bestLength = 1
        var index = 0
        while index < 8 {
            guard pieces[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8 && pieces[end] == 0 {
                end += 1
            }
            if end - index > bestLength {
                bestStart = index
                bestLength = end - index
            }
            index = end
        }
        var result = ""
        index = 0
        while index < 8 {
            if index == bestStart {
                result += "::"
                index += bestLength
                continue
            }
            if !result.isEmpty && !result.hasSuffix(":") {
                result += ":"
            }
            result += String(pieces[index], radix: 16)
            index += 1
        }
        return result
    }
}
