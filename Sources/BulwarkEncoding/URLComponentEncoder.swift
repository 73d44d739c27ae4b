/// Percent-encoding of URL components (a path segment, a query name or value, a fragment), RFC 3986 section 2.
///
/// Every byte but the unreserved characters — ASCII letters, digits, `-`, `.`, `_` and `~` — is written as `%HH`
/// with upper-case hex digits, non-ASCII text byte by byte in UTF-8. The result is plain ASCII with no delimiter
/// of any URL part (`/`, `?`, `#`, `&`, `=`, `:`, `@`, space), so it cannot change the structure of the URL it is
/// placed in, and no character with a meaning in HTML, so it is also safe in an HTML attribute value.
///
/// `+` is encoded (`%2B`) and decoding leaves `+` alone: this is RFC 3986, not the `application/x-www-form-urlencoded`
/// form encoding in which `+` means a space.
///
/// ```swift
/// URLComponentEncoder.encode("a b/c?d")        // "a%20b%2Fc%3Fd"
/// URLComponentEncoder.decode("a%20b%2Fc%3Fd")  // "a b/c?d"
/// ```
public enum URLComponentEncoder {
    private static let table = EscapeTable<Candidates> { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return nil
        default:
            return "%\(EscapeTable<Candidates>.hex(byte))"
        }
    }

    /// Whether the encoder uses the vector kernel on this processor (see ``HexEscapeKernel``).
    static var usesVectorKernel: Bool { self.table.kernel != nil }

    /// Whether the encoder uses a vector kernel on `path`.
    static func usesVectorKernel(on path: VectorPath) -> Bool { self.table.kernels.kernel(for: path) != nil }

    /// The bytes ``table`` replaces: all but ASCII letters, digits, `-`, `.`, `_` and `~`.
    private enum Candidates: EscapeCandidates {
        @inline(__always)
        static func flags(_ bytes: SIMD16<UInt8>) -> SIMD16<UInt8> {
            let unreserved =
                (bytes | 0x20).lanes(in: UInt8(ascii: "a")...UInt8(ascii: "z"))
                | bytes.lanes(in: UInt8(ascii: "0")...UInt8(ascii: "9"))
                | bytes.lanes(in: UInt8(ascii: "-")...UInt8(ascii: ".")) | bytes.lanes(equalTo: UInt8(ascii: "_"))
                | bytes.lanes(equalTo: UInt8(ascii: "~"))
            return ~unreserved
        }
    }

    /// Percent-encodes the UTF-8 bytes of `component`.
    public static func encode(_ component: String) -> String {
        self.table.encode(component)
    }

    /// Percent-encodes `bytes` exactly as they are; unlike the HTML and JavaScript encoders, invalid UTF-8 is not
    /// replaced, since every byte outside the unreserved set is written as `%HH` and ``decodeBytes(_:)`` gives it
    /// back.
    public static func encode(bytes: some Collection<UInt8>) -> String {
        self.table.encode(bytes: bytes)
    }

    /// ``encode(_:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    @_spi(Benchmarks)
    public static func encode(_ component: String, path: VectorPath) -> String {
        self.table.encode(component, path: path)
    }

    /// ``encode(bytes:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    static func encode(bytes: some Collection<UInt8>, path: VectorPath) -> String {
        self.table.encode(bytes: bytes, path: path)
    }

    /// Decodes a percent-encoded component to text.
    ///
    /// - Returns: The decoded text, or nil if a `%` is not followed by two hex digits (either case) or the decoded
    ///   bytes are not valid UTF-8. Characters other than `%HH` are copied, whether or not they should have been
    ///   encoded.
    public static func decode(_ component: String) -> String? {
        guard let bytes = self.decodeBytes(component) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // Decoding replaced invalid UTF-8 with U+FFFD exactly when the bytes differ from the text's.
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    /// Decodes a percent-encoded component to bytes.
    ///
    /// - Returns: The decoded bytes, or nil if a `%` is not followed by two hex digits (either case).
    public static func decodeBytes(_ component: String) -> [UInt8]? {
        var component = component
        return component.withUTF8 { source -> [UInt8]? in
            var decoded = [UInt8]()
            decoded.reserveCapacity(source.count)
            var index = 0
            while index < source.count {
                let byte = source[index]
                guard byte == UInt8(ascii: "%") else {
                    decoded.append(byte)
                    index += 1
                    continue
                }
                guard index + 2 < source.count,
                    let high = self.hexValue(source[index + 1]),
                    let low = self.hexValue(source[index + 2])
                else {
                    return nil
                }
                decoded.append(high << 4 | low)
                index += 3
            }
            return decoded
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
