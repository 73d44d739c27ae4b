/// RFC 9110's `token` (section 5.6.2): what an HTTP method or a field name is made of. One definition for the
/// package: credential header names, the HTTP/2 codec's request fields, the command line's methods and headers.
package enum HTTPToken {
    /// Whether `byte` is a `tchar`: a letter, a digit or one of ``!#$%&'*+-.^_`|~``.
    package static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `text` is a token: one `tchar` or more (so ASCII, and never empty). Not generic: the HTTP/2 codec asks
    /// this of every request field, and a generic call across the module boundary cost it about 6k instructions per
    /// request (callgrind, h2-c1), more than the rest of the head's conversion.
    package static func isToken(_ text: String) -> Bool {
        Self.allBytes(of: text) { Self.isTokenByte($0) }
    }

    /// Whether `text` is a token without upper-case letters, as HTTP/2 field names are (RFC 9113 section 8.2.1).
    package static func isLowerCaseToken(_ text: String) -> Bool {
        Self.allBytes(of: text) { Self.isTokenByte($0) && !($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) }
    }

    /// Whether `text` has bytes and every one satisfies `test`, read from its contiguous UTF-8.
    private static func allBytes(of text: String, _ test: (UInt8) -> Bool) -> Bool {
        var text = text
        return text.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy(test) }
    }
}
