/// Encoders for text placed in HTML: element content and attribute values.
///
/// Follow the OWASP XSS Prevention Cheat Sheet: pick the encoder for the context the value lands in. Both encoders
/// return their input unchanged (and without a copy) when it has nothing to encode, and copy runs of safe bytes in
/// bulk, so mostly-plain text encodes at memory speed.
///
/// Characters HTML does not allow in a document — NUL, the C0 controls other than tab, line feed, form feed and
/// carriage return, and DEL — are replaced by U+FFFD REPLACEMENT CHARACTER, as is invalid UTF-8 given to the byte
/// array variants. Non-ASCII characters are copied as they are (the document is assumed to be UTF-8).
///
/// ```swift
/// HTMLEncoder.text("<script>alert(1)</script>")  // "&lt;script&gt;alert(1)&lt;/script&gt;"
/// HTMLEncoder.attribute("x\" onmouseover=\"alert(1)")  // "x&#x22;&#x20;onmouseover&#x3D;&#x22;alert&#x28;1&#x29;"
/// ```
///
/// Neither encoder makes a URL safe: `javascript:alert(1)` is inert as text but runs in an `href`, whatever its
/// encoding. Check URLs with ``SafeURL``.
public enum HTMLEncoder {
    /// Element content: `&`, `<`, `>`, `"` and `'` become `&amp;`, `&lt;`, `&gt;`, `&quot;` and `&#39;`.
    private static let textTable = EscapeTable<TextCandidates> { byte in
        switch byte {
        case UInt8(ascii: "&"): return "&amp;"
        case UInt8(ascii: "<"): return "&lt;"
        case UInt8(ascii: ">"): return "&gt;"
        case UInt8(ascii: "\""): return "&quot;"
        case UInt8(ascii: "'"): return "&#39;"
        default: return HTMLEncoder.isForbiddenControl(byte) ? "\u{FFFD}" : nil
        }
    }

    /// Attribute values: everything in ASCII but letters, digits, `,`, `.`, `-` and `_` becomes `&#xHH;`.
    private static let attributeTable = EscapeTable<AttributeCandidates> { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ","), UInt8(ascii: "."), UInt8(ascii: "-"),
            UInt8(ascii: "_"):
            return nil
        case 0x80...0xFF:
            return nil
        default:
            return HTMLEncoder.isForbiddenControl(byte)
                ? "\u{FFFD}" : "&#x\(EscapeTable<AttributeCandidates>.hex(byte));"
        }
    }

    /// Whether ``text(_:)`` and ``attribute(_:)`` use the vector kernel on this processor (see ``HexEscapeKernel``).
    static var vectorKernels: (text: Bool, attribute: Bool) {
        (self.textTable.kernel != nil, self.attributeTable.kernel != nil)
    }

    /// Whether ``text(_:path:)`` and ``attribute(_:path:)`` use a vector kernel on `path`.
    static func vectorKernels(on path: VectorPath) -> (text: Bool, attribute: Bool) {
        (self.textTable.kernels.kernel(for: path) != nil, self.attributeTable.kernels.kernel(for: path) != nil)
    }

    /// The bytes ``textTable`` replaces: C0 controls, DEL, `"`, `&`, `'`, `<` and `>`. Tab, line feed, form feed,
    /// carriage return and `#` are flagged too though copied: leaving them out would cost more on every group than
    /// looking them up where they are.
    private enum TextCandidates: EscapeCandidates {
        @inline(__always)
        static func flags(_ bytes: SIMD16<UInt8>) -> SIMD16<UInt8> {
            let ascii =
                ((bytes &+ 1) & 0x7F).asciiLanes(below: 0x21)  // C0 controls and DEL
                | (bytes | 0x05).asciiLanes(equalTo: UInt8(ascii: "'"))  // ", #, & and '
                | (bytes | 0x02).asciiLanes(equalTo: UInt8(ascii: ">"))  // < and >
            return ascii & ~bytes
        }
    }

    /// The bytes ``attributeTable`` replaces: ASCII but letters, digits, `,`, `-`, `.` and `_`.
    private enum AttributeCandidates: EscapeCandidates {
        @inline(__always)
        static func flags(_ bytes: SIMD16<UInt8>) -> SIMD16<UInt8> {
            let copied =
                (bytes | 0x20).lanes(in: UInt8(ascii: "a")...UInt8(ascii: "z"))
                | bytes.lanes(in: UInt8(ascii: "0")...UInt8(ascii: "9"))
                | bytes.lanes(in: UInt8(ascii: ",")...UInt8(ascii: ".")) | bytes.lanes(equalTo: UInt8(ascii: "_"))
                | bytes
            return ~copied
        }
    }

    /// Whether HTML forbids `byte` as a character in a document: NUL, C0 controls other than tab, line feed, form
    /// feed and carriage return, and DEL.
    private static func isForbiddenControl(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x09, 0x0A, 0x0C, 0x0D: return false
        case 0x00...0x1F, 0x7F: return true
        default: return false
        }
    }

    /// Encodes `text` for HTML element content (between tags), OWASP rule #1.
    ///
    /// Both quotes are encoded as well, so the result is also safe inside a *quoted* attribute value; for any
    /// attribute value, quoted or not, prefer ``attribute(_:)``. Not for `<script>` or `<style>` content, comments,
    /// or tag and attribute names.
    public static func text(_ text: String) -> String {
        self.textTable.encode(text)
    }

    /// Encodes UTF-8 bytes for HTML element content, replacing invalid UTF-8 with U+FFFD first. See ``text(_:)``.
    public static func text(utf8 bytes: some Collection<UInt8>) -> String {
        self.textTable.encode(utf8: bytes)
    }

    /// Encodes `value` for an HTML attribute value, OWASP rule #2: every ASCII character other than letters, digits,
    /// `,`, `.`, `-` and `_` becomes a hexadecimal character reference (`&#x20;`), which the browser decodes back.
    ///
    /// Because no space, quote, backtick, `=`, `<`, `>` or `&` survives, the result cannot leave the attribute
    /// value whether the value is double-quoted, single-quoted or not quoted at all. It does not make a URL
    /// attribute (`href`, `src`, `action`, …) or an event handler (`onclick`) safe: use ``SafeURL`` and
    /// ``JavaScriptEncoder`` for those.
    public static func attribute(_ value: String) -> String {
        self.attributeTable.encode(value)
    }

    /// Encodes UTF-8 bytes for an HTML attribute value, replacing invalid UTF-8 with U+FFFD first. See
    /// ``attribute(_:)``.
    public static func attribute(utf8 bytes: some Collection<UInt8>) -> String {
        self.attributeTable.encode(utf8: bytes)
    }

    /// ``text(_:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    @_spi(Benchmarks)
    public static func text(_ text: String, path: VectorPath) -> String {
        self.textTable.encode(text, path: path)
    }

    /// ``text(utf8:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    static func text(utf8 bytes: some Collection<UInt8>, path: VectorPath) -> String {
        self.textTable.encode(utf8: bytes, path: path)
    }

    /// ``attribute(_:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    @_spi(Benchmarks)
    public static func attribute(_ value: String, path: VectorPath) -> String {
        self.attributeTable.encode(value, path: path)
    }

    /// ``attribute(utf8:)`` with its hexadecimal escapes written on `path` (the output is the same on every path), for tests and
    /// benchmarks.
    static func attribute(utf8 bytes: some Collection<UInt8>, path: VectorPath) -> String {
        self.attributeTable.encode(utf8: bytes, path: path)
    }
}
