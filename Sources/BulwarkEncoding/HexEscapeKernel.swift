import CBulwarkVector
import Foundation

/// The vector kernel of a table whose replacements are mostly hexadecimal escapes of one shape (`&#xHH;`, `%HH`,
/// `\xHH`): on a processor with AVX-512 VBMI, it writes each half of a group of sixteen bytes with one byte
/// permutation and one store, instead of one store per byte (`CBulwarkVector`). Bytes the table replaces otherwise
/// (U+FFFD for a control, `\n`, a line separator) stop it before their group, which the Swift engine then writes.
///
/// Set `BULWARK_NO_VECTOR_ENCODING=1` in the environment to turn the kernel off (to compare, or to test the Swift
/// engine alone on such a processor); the output is the same byte for byte.
final class HexEscapeKernel: @unchecked Sendable {
    // The tables are written once, in `init`, and only read after that.
    let pointer: OpaquePointer

    /// The kernel for a table that replaces each byte as `replacement` says (nil: copied; `special`: the byte starts
    /// a sequence the engine looks at), or nil if the processor has no kernel, the environment turns it off, or the
    /// replacements have no common hexadecimal shape.
    init?(replacements: [[UInt8]?], stops: [UInt8]) {
        precondition(replacements.count == 256)
        guard Self.isEnabled else { return nil }
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
        for byte in stops { classes[Int(byte)] = UInt8(BULWARK_HEX_STOP) }
        // A table with few such escapes gains nothing.
        guard escaped >= 16 else { return nil }
        let suffix = shape.suffix.map { Int32($0) } ?? -1
        guard let pointer = bulwark_hex_escape_create(classes, shape.prefix, shape.prefix.count, suffix) else {
            return nil
        }
        self.pointer = pointer
    }

    deinit {
        bulwark_hex_escape_destroy(self.pointer)
    }

    /// Whether the environment leaves the kernel on (see above).
    static let isEnabled: Bool = ProcessInfo.processInfo.environment["BULWARK_NO_VECTOR_ENCODING"] != "1"

    /// Whether this processor can run the kernel at all.
    static var isSupported: Bool { bulwark_hex_escape_supported() }

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
