import Foundation

/// Reads the host of a Foundation `URL` for ``HostName/canonicalize(_:)``.
///
/// Foundation keeps a URL's host percent-encoded: `https://bücher.example/` has the encoded host
/// `b%C3%BCcher.example`. Decoding escapes of non-ASCII bytes gives back the Unicode spelling of an internationalized
/// name, which canonicalizes to punycode like any other; this is what the WHATWG URL Standard does as well. Escapes
/// of ASCII bytes (`a%2eb.example`) are left in place, so the host is refused for its `%` rather than read as
/// `a.b.example`: a name spelled that way is ambiguous between parsers.
enum URLHost {
    /// The host of `url` (made absolute first) ready to canonicalize, or nil if it has none.
    static func host(of url: URL) -> String? {
        guard let encoded = url.absoluteURL.host(percentEncoded: true), !encoded.isEmpty else {
            return nil
        }
        guard encoded.utf8.contains(UInt8(ascii: "%")) else {
            return encoded
        }
        let bytes = Array(encoded.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%") else {
                decoded.append(bytes[index])
                index += 1
                continue
            }
            guard index + 2 < bytes.count,
                let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16),
                value >= 0x80
            else {
                return encoded
            }
            decoded.append(value)
            index += 3
        }
        let text = String(decoding: decoded, as: UTF8.self)
        return text.utf8.elementsEqual(decoded) ? text : encoded
    }
}
