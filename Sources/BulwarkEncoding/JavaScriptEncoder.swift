/// Encodes text for the inside of a JavaScript string literal.
///
/// The result is safe between single quotes, double quotes or backticks, in a `<script>` block and in an HTML event
/// handler attribute (`onclick="f('…')"`): it never holds a quote, a backtick, a backslash that is not part of an
/// escape, `<`, `>`, `&`, `$` (so `${` cannot start a template substitution), a line terminator or any other control
/// character. Those are written as `\xHH`, `\\`, `\n`, `\r`, `\t`, and U+2028 and U+2029 as `\u2028` and
/// `\u2029` (line terminators inside string literals before ES2019). NUL is kept, as `\x00`. Other characters are
/// copied, so the JavaScript value equals the input.
///
/// ```swift
/// JavaScriptEncoder.stringLiteral("</script><script>alert(1)</script>")
/// // "\x3C/script\x3E\x3Cscript\x3Ealert(1)\x3C/script\x3E"
/// ```
///
/// Encoding does not make code safe: never place untrusted text anywhere in a script but inside a quoted string,
/// and never pass the string to `eval`, `setTimeout` or `innerHTML`.
public enum JavaScriptEncoder {
    private static let table = EscapeTable<Candidates> { byte in
        switch byte {
        case UInt8(ascii: "\\"): return "\\\\"
        case UInt8(ascii: "\n"): return "\\n"
        case UInt8(ascii: "\r"): return "\\r"
        case UInt8(ascii: "\t"): return "\\t"
        case 0x00...0x1F, 0x7F, UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "`"), UInt8(ascii: "<"),
            UInt8(ascii: ">"), UInt8(ascii: "&"), UInt8(ascii: "$"):
            return "\\x\(EscapeTable<Candidates>.hex(byte))"
        default:
            return nil
        }
    }

    /// Whether the encoder uses the vector kernel on this processor (see ``HexEscapeKernel``).
    static var usesVectorKernel: Bool { self.table.kernel != nil }

    /// Whether the encoder uses a vector kernel on `path`.
    static func usesVectorKernel(on path: VectorPath) -> Bool { self.table.kernels.kernel(for: path) != nil }

    /// The bytes ``table`` replaces, and the lead byte of U+2028 and U+2029; `#`, `%`, `^`, `|` and `~` are flagged
    /// too though copied, which costs less than leaving them out.
    private enum Candidates: EscapeCandidates {
        static var escapesLineSeparators: Bool { true }

        @inline(__always)
        static func flags(_ bytes: SIMD16<UInt8>) -> SIMD16<UInt8> {
            let ascii =
                ((bytes &+ 1) & 0x7F).asciiLanes(below: 0x21)  // C0 controls and DEL
                | (bytes & 0x9D).asciiLanes(equalTo: 0x1C)  // < > \ (and ^ | ~)
                | bytes.asciiLanes(equalTo: UInt8(ascii: "`"))
            return (ascii & ~bytes) | bytes.lanes(in: UInt8(ascii: "\"")...UInt8(ascii: "'"))  // " # $ % & '
                | bytes.lanes(equalTo: 0xE2)
        }
    }

    /// Encodes `text` for the inside of a JavaScript string literal (OWASP rule #3).
    public static func stringLiteral(_ text: String) -> String {
        self.table.encode(text)
    }

    /// Encodes UTF-8 bytes for the inside of a JavaScript string literal, replacing invalid UTF-8 with U+FFFD
    /// first. See ``stringLiteral(_:)``.
    public static func stringLiteral(utf8 bytes: some Collection<UInt8>) -> String {
        self.table.encode(utf8: bytes)
    }

    /// ``stringLiteral(_:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    @_spi(Benchmarks)
    public static func stringLiteral(_ text: String, path: VectorPath) -> String {
        self.table.encode(text, path: path)
    }

    /// ``stringLiteral(utf8:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    static func stringLiteral(utf8 bytes: some Collection<UInt8>, path: VectorPath) -> String {
        self.table.encode(utf8: bytes, path: path)
    }
}
