import CBulwarkVector
import Foundation

/// The vector kernel of a table whose replacements are mostly hexadecimal escapes of one shape (`&#xHH;`, `%HH`,
/// `\xHH`), on one ``VectorPath``: with AVX-512 VBMI, it writes each half of a group of sixteen bytes with one byte
/// permutation and one store; with AVX2, each quarter with one byte shuffle and one store; with NEON, each half with
/// three table lookups; with SSE2, each byte through a table without a branch (`CBulwarkVector`). Bytes the table
/// replaces otherwise (U+FFFD for a control, `\n`, a line separator) stop it before their group, which the Swift
/// engine then writes; the AVX2 and AVX-512 kernels copy the first byte of U+2028 and U+2029 (0xE2) when it starts
/// something else, such as U+2014 or U+2019. The output is the same byte for byte on every path.
final class HexEscapeKernel: @unchecked Sendable {
    // The tables are written once, in `init`, and only read after that.
    let pointer: OpaquePointer

    /// The path the kernel runs on.
    let path: VectorPath

    /// The kernel for `shape` on `path`, or nil for ``VectorPath/scalar`` or a path this processor cannot run.
    init?(shape: HexEscapeShape, path: VectorPath) {
        let suffix = shape.suffix.map { Int32($0) } ?? -1
        guard
            let pointer = bulwark_hex_escape_create(
                shape.classes,
                shape.prefix,
                shape.prefix.count,
                suffix,
                path.rawValue
            )
        else {
            return nil
        }
        self.pointer = pointer
        self.path = path
    }

    deinit {
        bulwark_hex_escape_destroy(self.pointer)
    }

    /// Encodes the groups from `index` up to `end` (see `bulwark_hex_escape_run`).
    @inline(__always)
    func run(
        _ source: UnsafePointer<UInt8>,
        index: inout Int,
        end: Int,
        output: UnsafeMutableRawPointer,
        written: inout Int
    ) {
        bulwark_hex_escape_run(
            self.pointer,
            source,
            &index,
            end,
            output.assumingMemoryBound(to: UInt8.self),
            &written
        )
    }
}

/// What a ``HexEscapeKernel`` writes for a table: the class of each byte value (copied, escaped, or left to the Swift
/// engine), and the escapes' prefix and suffix.
struct HexEscapeShape: Sendable {
    /// For each byte value, `BULWARK_HEX_COPY`, `BULWARK_HEX_ESCAPE`, `BULWARK_HEX_STOP` or (0xE2 only)
    /// `BULWARK_HEX_LINE_SEPARATOR`.
    let classes: [UInt8]
    let prefix: [UInt8]
    let suffix: UInt8?

    /// The shape of a table that replaces each byte as `replacement` says (nil: copied), with U+2028 and U+2029
    /// left to the engine if `escapesLineSeparators` (0xE2 has no replacement then; the AVX2 and AVX-512 kernels copy
    /// it when it starts neither, the others stop at it); nil if the replacements have no common hexadecimal shape,
    /// or too few have it for a kernel to pay.
    init?(replacements: [[UInt8]?], escapesLineSeparators: Bool) {
        precondition(replacements.count == 256)
        // The shape: the first replacement that ends in the byte's digits, or in its digits and one more byte.
        var shape: (prefix: [UInt8], suffix: UInt8?)?
        for byte in 0...255 {
            guard let text = replacements[byte] else { continue }
            if let found = Self.shape(of: text, for: UInt8(byte)) {
                shape = found
                break
            }
        }
        guard let shape, (1...3).contains(shape.prefix.count) else { return nil }
        var classes = [UInt8](repeating: UInt8(BULWARK_HEX_COPY), count: 256)
        var escaped = 0
        for byte in 0...255 {
            guard let text = replacements[byte] else { continue }
            if let found = Self.shape(of: text, for: UInt8(byte)), found.prefix == shape.prefix,
                found.suffix == shape.suffix
            {
                classes[byte] = UInt8(BULWARK_HEX_ESCAPE)
                escaped += 1
            } else {
                classes[byte] = UInt8(BULWARK_HEX_STOP)
            }
        }
        // `EscapeTable` gives 0xE2 no replacement then (its own precondition).
        if escapesLineSeparators { classes[0xE2] = UInt8(BULWARK_HEX_LINE_SEPARATOR) }
        // A table with few such escapes gains nothing.
        guard escaped >= 16 else { return nil }
        self.classes = classes
        self.prefix = shape.prefix
        self.suffix = shape.suffix
    }

    /// `text` as prefix, the upper-case digits of `byte` and an optional one-byte suffix.
    private static func shape(of text: [UInt8], for byte: UInt8) -> (prefix: [UInt8], suffix: UInt8?)? {
        let hex = Array("0123456789ABCDEF".utf8)
        let digits = [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
        for suffixLength in 0...1 where text.count >= 3 + suffixLength {
            let digitsEnd = text.count - suffixLength
            if Array(text[(digitsEnd - 2)..<digitsEnd]) == digits {
                return (Array(text[..<(digitsEnd - 2)]), suffixLength == 1 ? text.last : nil)
            }
        }
        return nil
    }
}
