@_spi(Benchmarks) @testable import BulwarkEncoding

/// The output encoders on every vector path the processor has (AVX-512 VBMI, AVX2, SSE2, NEON, the Swift engine).
///
/// Input: any bytes, given to the byte entry points (invalid UTF-8 included) and, repaired, to the text ones. Oracles:
/// - every path gives the same bytes as the Swift engine alone (`VectorPath.scalar`), for `HTMLEncoder.text`,
///   `HTMLEncoder.attribute`, `JavaScriptEncoder.stringLiteral` and `URLComponentEncoder.encode`;
/// - a percent-encoded component decodes back to the input's bytes, and holds only unreserved characters and `%HH`;
/// - an attribute value holds no ASCII but letters, digits, `,`, `.`, `-`, `_` and the `&#xHH;` references.
enum EncodersTarget {
    static let paths = VectorPath.allCases.filter { $0.isSupported && $0 != .scalar }

    static func run(_ input: FuzzInput) {
        let bytes = Array(input.rest)
        let text = String(decoding: bytes, as: UTF8.self)
        let encoders: [(String, (VectorPath) -> String)] = [
            ("HTMLEncoder.text", { HTMLEncoder.text(text, path: $0) }),
            ("HTMLEncoder.attribute", { HTMLEncoder.attribute(text, path: $0) }),
            ("JavaScriptEncoder.stringLiteral", { JavaScriptEncoder.stringLiteral(text, path: $0) }),
            ("URLComponentEncoder.encode", { URLComponentEncoder.encode(text, path: $0) }),
            ("HTMLEncoder.text(utf8:)", { HTMLEncoder.text(utf8: bytes, path: $0) }),
            ("HTMLEncoder.attribute(utf8:)", { HTMLEncoder.attribute(utf8: bytes, path: $0) }),
            ("JavaScriptEncoder.stringLiteral(utf8:)", { JavaScriptEncoder.stringLiteral(utf8: bytes, path: $0) }),
            ("URLComponentEncoder.encode(bytes:)", { URLComponentEncoder.encode(bytes: bytes, path: $0) }),
        ]
        for (name, encode) in encoders {
            let scalar = encode(.scalar)
            for path in self.paths {
                let encoded = encode(path)
                if !encoded.utf8.elementsEqual(scalar.utf8) {
                    violated(
                        "every vector path gives the Swift engine's bytes",
                        "\(name) on \(path.name) differs on \(bytes.count) bytes \(bytes.prefix(64))"
                    )
                }
            }
        }
        let component = URLComponentEncoder.encode(bytes: bytes)
        if URLComponentEncoder.decodeBytes(component) != bytes {
            violated("percent-encoding round trip", "\(bytes.prefix(64)) gave \(component.prefix(200))")
        }
        let unreserved = component.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "%"):
                return true
            default:
                return false
            }
        }
        if !unreserved { violated("percent-encoding holds unreserved characters only", String(component.prefix(200))) }
        let attribute = HTMLEncoder.attribute(utf8: bytes)
        let safe = attribute.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ","), UInt8(ascii: "."), UInt8(ascii: "-"),
                UInt8(ascii: "_"), UInt8(ascii: "&"), UInt8(ascii: "#"), UInt8(ascii: ";"), 0x80...0xFF:
                return true
            default:
                return false
            }
        }
        if !safe { violated("attribute values hold no markup", String(attribute.prefix(200))) }
        trace("encoders: \(bytes.count) bytes on \(self.paths.map(\.name))")
    }
}
