import BulwarkTestHelpers
import Foundation
import Testing

@_spi(Benchmarks) @testable import BulwarkEncoding

// The output encoders as they were before the fast engine (EscapeTable with an 8-byte table scan), kept verbatim as
// a reference: the library's encoders must give exactly the same bytes for every input.

// MARK: - Differential tests

@Suite("Encoders match the reference implementation byte for byte", .tags(.encoders))
struct EncoderDifferentialTests {
    /// Every encoder and context, new and reference, on text.
    static let textEncoders:
        [(name: String, new: @Sendable (String) -> String, reference: @Sendable (String) -> String)] = [
            ("HTMLEncoder.text", HTMLEncoder.text, ReferenceEncoders.text),
            ("HTMLEncoder.attribute", HTMLEncoder.attribute, ReferenceEncoders.attribute),
            ("JavaScriptEncoder.stringLiteral", JavaScriptEncoder.stringLiteral, ReferenceEncoders.javaScript),
            ("URLComponentEncoder.encode", URLComponentEncoder.encode, ReferenceEncoders.urlComponent),
        ]

    /// Every encoder that takes bytes, new and reference.
    static let byteEncoders:
        [(name: String, new: @Sendable ([UInt8]) -> String, reference: @Sendable ([UInt8]) -> String)] = [
            ("HTMLEncoder.text(utf8:)", { HTMLEncoder.text(utf8: $0) }, { ReferenceEncoders.text(utf8: $0) }),
            (
                "HTMLEncoder.attribute(utf8:)", { HTMLEncoder.attribute(utf8: $0) },
                { ReferenceEncoders.attribute(utf8: $0) }
            ),
            (
                "JavaScriptEncoder.stringLiteral(utf8:)", { JavaScriptEncoder.stringLiteral(utf8: $0) },
                { ReferenceEncoders.javaScript(utf8: $0) }
            ),
            (
                "URLComponentEncoder.encode(bytes:)", { URLComponentEncoder.encode(bytes: $0) },
                { ReferenceEncoders.urlComponent(bytes: $0) }
            ),
        ]

    /// Compares the UTF-8 bytes (`==` on strings would accept canonically equivalent text).
    static func expectSame(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for encoder in self.textEncoders {
            let new = encoder.new(text)
            let reference = encoder.reference(text)
            #expect(
                new.utf8.elementsEqual(reference.utf8),
                "\(encoder.name) differs on \(Array(text.utf8))",
                sourceLocation: sourceLocation
            )
        }
    }

    static func expectSame(bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        for encoder in self.byteEncoders {
            let new = encoder.new(bytes)
            let reference = encoder.reference(bytes)
            #expect(
                new.utf8.elementsEqual(reference.utf8),
                "\(encoder.name) differs on \(bytes)",
                sourceLocation: sourceLocation
            )
        }
        // Collections other than arrays, with and without contiguous storage, and the bytes as (repaired) text.
        let reference = ReferenceEncoders.urlComponent(bytes: bytes)
        #expect(URLComponentEncoder.encode(bytes: bytes[...]).utf8.elementsEqual(reference.utf8))
        #expect(URLComponentEncoder.encode(bytes: bytes.lazy.map { $0 }).utf8.elementsEqual(reference.utf8))
        #expect(
            HTMLEncoder.text(utf8: bytes.lazy.map { $0 }).utf8.elementsEqual(ReferenceEncoders.text(utf8: bytes).utf8)
        )
        self.expectSame(String(decoding: bytes, as: UTF8.self), sourceLocation: sourceLocation)
    }

    @Test("random text: ASCII, markup, controls, NUL, multibyte UTF-8, line separators; short and long")
    func randomText() {
        var generator = SeededGenerator(seed: 0xD1FF_E4E7)
        for round in 0..<3000 {
            // Mostly short strings, where the group boundaries and the tail matter; some long enough to pass the
            // 4 KiB sample that sizes the output.
            let maximumLength = round % 50 == 0 ? 9000 : (round % 5 == 0 ? 300 : 48)
            let bytes = DifferentialInputs.randomText(&generator, maximumLength: maximumLength)
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(Array(text.utf8) == bytes, "the generator makes valid UTF-8")
            Self.expectSame(text)
        }
    }

    @Test("random bytes, invalid UTF-8 included: overlong forms, surrogates, truncated and lone bytes")
    func randomBytes() {
        var generator = SeededGenerator(seed: 0xBAD_0B17E5)
        for round in 0..<2000 {
            let maximumLength = round % 40 == 0 ? 6000 : 64
            Self.expectSame(bytes: DifferentialInputs.randomBytes(&generator, maximumLength: maximumLength))
        }
    }

    @Test("every byte value at every position of a 48-byte window of plain text")
    func everyBytePosition() {
        for value in 0...255 {
            for position in 0..<48 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 48)
                bytes[position] = UInt8(value)
                Self.expectSame(bytes: bytes)
                Self.expectSame(bytes: Array(bytes[..<(position + 1)]))
            }
        }
    }

    @Test("line and paragraph separators and their look-alikes at every offset")
    func separators() {
        let sequences: [[UInt8]] = [
            [0xE2, 0x80, 0xA8], [0xE2, 0x80, 0xA9], [0xE2, 0x80, 0xAA], [0xE2, 0x80, 0xA7], [0xE2, 0x81, 0xA8],
            [0xE2, 0x80, 0x94], [0xE2, 0x80], [0xE2], [0xE2, 0xA8],
        ]
        for sequence in sequences {
            for position in 0..<40 {
                for length in [position + sequence.count, 40, 41, 64] where length >= position + sequence.count {
                    var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    bytes.replaceSubrange(position..<(position + sequence.count), with: sequence)
                    Self.expectSame(bytes: bytes)
                    bytes[0] = UInt8(ascii: "<")
                    Self.expectSame(bytes: bytes)
                }
            }
        }
    }

    @Test("long inputs whose expansion changes after the sample, in both directions")
    func sizing() {
        var generator = SeededGenerator(seed: 0x5123)
        let dense = "<>&\"'\u{0}\u{2028}\\ `$=%/"
        for plainLength in [0, 1, 15, 16, 17, 4095, 4096, 4097, 5000, 9000] {
            for denseLength in [1, 7, 300, 3000, 20_000] {
                let plain = String(repeating: "a", count: plainLength)
                let heavy = String((0..<denseLength).map { _ in dense.randomElement(using: &generator)! })
                Self.expectSame("<" + plain + heavy + "end")
                Self.expectSame(heavy + plain)
                Self.expectSame(plain + heavy)
            }
        }
    }

    @Test("empty input, and input with nothing but bytes to replace")
    func allReplaced() {
        Self.expectSame("")
        Self.expectSame(bytes: [])
        for piece in ["<", "\"", " ", "\u{0}", "\u{7F}", "\u{2028}", "\u{2029}", "<>&\"'", "\\`$\n"] {
            for count in [1, 2, 15, 16, 17, 33, 34, 35, 100, 1100] {
                Self.expectSame(String(repeating: piece, count: count))
            }
        }
        // More than one block.
        Self.expectSame(String(repeating: "<", count: 8300))
        Self.expectSame(String(repeating: "\u{2028}", count: 2800))
    }

    @Test("every kind of character at each offset around the end of an 8 KiB block and the end of the input")
    func blockBoundaries() {
        // Each character over backgrounds that make the sampled layout sparse (letters) or dense (markup) for the
        // HTML, JavaScript and URL encoders: at offsets around the first block's end (8 KiB, the first replaced
        // byte being at 0), and before the end of the input (its last 34 bytes are written one at a time).
        let characters = ["é", "😀", "\u{2028}", "<"]
        let backgrounds = ["abcdefghijklmnop", "<a>&'\" =<a>&'\" =", "ab<c d&éf—g😀h\u{2028}"]
        let blockEnd = 8192
        for background in backgrounds {
            let base = Array(String(repeating: background, count: blockEnd / background.utf8.count + 8).utf8)
            // A prefix of the background, cut before a character that the cut would split.
            func prefix(_ count: Int) -> [UInt8] {
                var bytes = Array(base[0..<count])
                while let last = bytes.last, last >= 0x80 { bytes.removeLast() }
                return bytes
            }
            for character in characters.map({ Array($0.utf8) }) {
                for offset in (blockEnd - 6)...(blockEnd + 1) {
                    Self.expectSame(
                        String(decoding: [UInt8(ascii: "<")] + prefix(offset) + character + prefix(40), as: UTF8.self)
                    )
                }
                for after in [0, 1, 2, 3, 15, 16, 17, 18, 31, 32, 33, 34, 35, 36] {
                    Self.expectSame(
                        String(decoding: [UInt8(ascii: "<")] + prefix(1100) + character + prefix(after), as: UTF8.self)
                    )
                }
            }
        }
    }

    @Test("a multi-byte character cut by a block's end, in every layout and at every offset from the first replaced")
    func charactersAcrossBlocks() {
        // Blocks start at 0 and every 8 KiB; the groups before a block's end start at the first replaced byte, so
        // the cut falls at every offset within a character as the first replaced byte moves.
        for character in ["é", "—", "東", "😀", "\u{2028}"] {
            for background in ["a", "<", " "] {
                let body = String(repeating: background + character, count: 8300 / (1 + character.utf8.count))
                for firstReplaced in 0..<8 {
                    Self.expectSame(String(repeating: "a", count: firstReplaced) + "<" + body)
                }
            }
        }
    }

    @Test("the benchmark's inputs")
    func benchmarkInputs() {
        let snippet = "Café review: the <b>best</b> croissant & \"flat white\" in town, isn't it? 5 > 3 — été. "
        let prose = "The committee's report, published on Monday, recommends that the city invest in cycle lanes. "
        Self.expectSame(String(repeating: snippet, count: 200))
        Self.expectSame(String(repeating: prose, count: 200))
        Self.expectSame(String(repeating: "plain ascii text without any markup at all ", count: 200))
        Self.expectSame(String(repeating: "plainasciitextwithoutanymarkup", count: 200))
    }
}

/// Seeded inputs for the differential tests.
enum DifferentialInputs {
    /// Pieces of valid UTF-8 that matter to some encoder, or to the engine (line separators, the lead byte 0xE2 in
    /// other characters, every length of UTF-8 sequence).
    static let pieces: [[UInt8]] = [
        "<", ">", "&", "\"", "'", "`", "=", "/", "\\", ":", ";", "%", "+", "?", "#", "@", "$", ".", ",", "-", "_", "~",
        "!", "(", ")", "{", "}", "[", "]", " ", "\t", "\n", "\r", "\u{B}", "\u{C}", "\u{0}", "\u{1}", "\u{1F}",
        "\u{7F}", "é", "ß", "\u{85}", "\u{A0}", "€", "—", "\u{2020}", "\u{2027}", "\u{2028}", "\u{2029}", "\u{202A}",
        "\u{FFFD}", "東", "😀", "\u{10FFFF}", "a<b", "&amp;", "</script>",
    ].map { Array($0.utf8) }

    /// Bytes that are not valid UTF-8 where they stand.
    static let invalid: [[UInt8]] = [
        [0x80], [0xBF], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],
        [0xF4, 0x90, 0x80, 0x80], [0xF5], [0xFE], [0xFF], [0xE2, 0x80], [0xE2], [0xF0, 0x9F, 0x98], [0xC3],
    ]

    /// Valid UTF-8: runs of plain ASCII and the pieces above.
    static func randomText(_ generator: inout SeededGenerator, maximumLength: Int) -> [UInt8] {
        let length = Int.random(in: 0...maximumLength, using: &generator)
        let plainShare = [0.0, 0.5, 0.9, 0.99].randomElement(using: &generator)!
        var bytes: [UInt8] = []
        while bytes.count < length {
            if Double.random(in: 0..<1, using: &generator) < plainShare {
                let run = Int.random(in: 1...24, using: &generator)
                for _ in 0..<run {
                    bytes.append(
                        Bool.random(using: &generator)
                            ? UInt8.random(in: 0x61...0x7A, using: &generator)
                            : UInt8.random(in: 0x20...0x7E, using: &generator)
                    )
                }
            } else {
                bytes += self.pieces.randomElement(using: &generator)!
            }
        }
        return bytes
    }

    /// Any bytes: valid pieces, invalid sequences and uniformly random bytes.
    static func randomBytes(_ generator: inout SeededGenerator, maximumLength: Int) -> [UInt8] {
        let length = Int.random(in: 0...maximumLength, using: &generator)
        var bytes: [UInt8] = []
        while bytes.count < length {
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: bytes += self.pieces.randomElement(using: &generator)!
            case 1: bytes += self.invalid.randomElement(using: &generator)!
            case 2: bytes.append(UInt8.random(in: 0...255, using: &generator))
            default: bytes.append(UInt8.random(in: 0x61...0x7A, using: &generator))
            }
        }
        return bytes
    }
}

// MARK: - Reference encoders (test only)

/// The encoders' tables and entry points as they were.
enum ReferenceEncoders {
    static let textTable = ReferenceEscapeTable { byte in
        switch byte {
        case UInt8(ascii: "&"): return "&amp;"
        case UInt8(ascii: "<"): return "&lt;"
        case UInt8(ascii: ">"): return "&gt;"
        case UInt8(ascii: "\""): return "&quot;"
        case UInt8(ascii: "'"): return "&#39;"
        default: return Self.isForbiddenControl(byte) ? "\u{FFFD}" : nil
        }
    }

    static let attributeTable = ReferenceEscapeTable { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ","), UInt8(ascii: "."), UInt8(ascii: "-"),
            UInt8(ascii: "_"):
            return nil
        case 0x80...0xFF:
            return nil
        default:
            return Self.isForbiddenControl(byte) ? "\u{FFFD}" : "&#x\(ReferenceEscapeTable.hex(byte));"
        }
    }

    static let javaScriptTable = ReferenceEscapeTable(escapesLineSeparators: true) { byte in
        switch byte {
        case UInt8(ascii: "\\"): return "\\\\"
        case UInt8(ascii: "\n"): return "\\n"
        case UInt8(ascii: "\r"): return "\\r"
        case UInt8(ascii: "\t"): return "\\t"
        case 0x00...0x1F, 0x7F, UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "`"), UInt8(ascii: "<"),
            UInt8(ascii: ">"), UInt8(ascii: "&"), UInt8(ascii: "$"):
            return "\\x\(ReferenceEscapeTable.hex(byte))"
        default:
            return nil
        }
    }

    static let urlComponentTable = ReferenceEscapeTable { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return nil
        default:
            return "%\(ReferenceEscapeTable.hex(byte))"
        }
    }

    static func isForbiddenControl(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x09, 0x0A, 0x0C, 0x0D: return false
        case 0x00...0x1F, 0x7F: return true
        default: return false
        }
    }

    static func text(_ text: String) -> String { self.textTable.encode(text) }
    static func text(utf8 bytes: [UInt8]) -> String { self.textTable.encode(utf8: bytes) }
    static func attribute(_ value: String) -> String { self.attributeTable.encode(value) }
    static func attribute(utf8 bytes: [UInt8]) -> String { self.attributeTable.encode(utf8: bytes) }
    static func javaScript(_ text: String) -> String { self.javaScriptTable.encode(text) }
    static func javaScript(utf8 bytes: [UInt8]) -> String { self.javaScriptTable.encode(utf8: bytes) }
    static func urlComponent(_ component: String) -> String { self.urlComponentTable.encode(component) }

    static func urlComponent(bytes: [UInt8]) -> String {
        var encoded = [UInt8]()
        encoded.reserveCapacity(bytes.count)
        for byte in bytes {
            if self.isUnreserved(byte) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(self.hexDigit(byte >> 4))
                encoded.append(self.hexDigit(byte & 0x0F))
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}

/// The byte-level engine as it was (Sources/BulwarkPolicy/Encoding/EscapeTable.swift before the fast engine).
struct ReferenceEscapeTable: Sendable {
    /// For each byte value, the length of its replacement; 0 means the byte is copied, ``special`` means the byte
    /// starts a sequence that needs a closer look (U+2028 and U+2029).
    private let lengths: [UInt8]
    /// For each byte value, its replacement in a slot of ``slotSize`` bytes padded with zeros (at `byte * slotSize`),
    /// followed by the slots of the U+2028 and U+2029 escapes. A whole slot is stored at once where the output has
    /// room for it; the padding is overwritten by what follows.
    private let slots: [UInt8]

    /// The size of a replacement slot, and the longest replacement allowed.
    private static let slotSize = 8
    /// Marks a byte that starts a sequence needing a closer look.
    private static let special: UInt8 = 0xFF
    /// Where the slot of the U+2028 escape starts in ``slots``; the U+2029 escape follows it.
    private static let lineSeparatorSlot = 256 * slotSize
    /// The length of the U+2028 and U+2029 escapes.
    private static let separatorEscapeLength = 6
    /// How many bytes after the first replaced one are measured to size the output.
    private static let sampleLength = 4096

    /// Whether U+2028 and U+2029 are written as `\u2028` and `\u2029` (JavaScript string literals).
    let escapesLineSeparators: Bool

    /// A table in which each byte for which `replacement` returns a string is replaced by that string's UTF-8 bytes.
    ///
    /// - Parameters:
    ///   - escapesLineSeparators: Whether U+2028 and U+2029 are written as `\u2028` and `\u2029`.
    ///   - replacement: The replacement of a byte, or nil to copy it: 1 to 8 bytes of UTF-8. Must return nil for
    ///     0xE2 when `escapesLineSeparators` is set.
    init(escapesLineSeparators: Bool = false, _ replacement: (UInt8) -> String?) {
        var lengths = [UInt8](repeating: 0, count: 256)
        var slots = [UInt8](repeating: 0, count: 258 * Self.slotSize)
        func fill(_ text: String, at slot: Int) -> UInt8 {
            let bytes = Array(text.utf8)
            precondition(!bytes.isEmpty && bytes.count <= Self.slotSize, "a replacement must be 1-8 bytes")
            slots.replaceSubrange(slot..<(slot + bytes.count), with: bytes)
            return UInt8(bytes.count)
        }
        for byte in 0...255 {
            if let text = replacement(UInt8(byte)) {
                lengths[byte] = fill(text, at: byte * Self.slotSize)
            }
        }
        if escapesLineSeparators {
            precondition(lengths[0xE2] == 0, "0xE2 cannot have a replacement when line separators are escaped")
            lengths[0xE2] = Self.special
            _ = fill("\\u2028", at: Self.lineSeparatorSlot)
            _ = fill("\\u2029", at: Self.lineSeparatorSlot + Self.slotSize)
        }
        self.lengths = lengths
        self.slots = slots
        self.escapesLineSeparators = escapesLineSeparators
    }

    /// The input with every byte the table names replaced, returned without a copy when there is none.
    func encode(_ input: String) -> String {
        var input = input
        let encoded: String? = input.withUTF8 { source in
            self.lengths.withUnsafeBufferPointer { lengths in
                self.slots.withUnsafeBufferPointer { slots in
                    guard let base = source.baseAddress else { return nil }
                    let writer = Writer(
                        source: base,
                        count: source.count,
                        lengths: lengths.baseAddress!,
                        slots: slots.baseAddress!
                    )
                    return writer.encode()
                }
            }
        }
        return encoded ?? input
    }

    /// The UTF-8 bytes `input` encoded; invalid UTF-8 is replaced by U+FFFD first (the maximal-subpart practice of
    /// the Unicode Standard, as `String(decoding:as:)` does).
    func encode(utf8 input: some Collection<UInt8>) -> String {
        self.encode(String(decoding: input, as: UTF8.self))
    }

    /// Upper-case hexadecimal digits of a byte, two characters.
    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }

    /// One encoding of one input.
    private struct Writer {
        let source: UnsafePointer<UInt8>
        let count: Int
        let lengths: UnsafePointer<UInt8>
        let slots: UnsafePointer<UInt8>

        /// The encoded input, or nil if nothing in it needs replacing.
        func encode() -> String? {
            let first = self.skipCopiedBytes(from: 0)
            guard first < self.count else { return nil }
            let sampleEnd = min(self.count, first + ReferenceEscapeTable.sampleLength)
            let sampled = self.encodedCount(from: first, to: sampleEnd)
            let rest = self.count - sampleEnd
            // The rest is assumed to expand like the sample, plus an eighth and a little more for safety.
            let estimate =
                first + sampled + rest + rest * max(0, sampled - (sampleEnd - first)) / (sampleEnd - first)
                + rest >> 3 + 64
            if let encoded = self.write(first: first, capacity: estimate) {
                return encoded
            }
            let exact = first + self.encodedCount(from: first, to: self.count)
            return self.write(first: first, capacity: exact)!
        }

        /// The index of the first byte at or after `index` whose length in `lengths` is not 0, or `count`.
        ///
        /// Eight bytes are checked at a time by OR-ing their table entries; in the group that holds a replaced byte,
        /// the entries are gathered into one word whose lowest non-zero byte gives the position, without a branch
        /// per byte.
        @inline(__always)
        func skipCopiedBytes(from index: Int) -> Int {
            let base = self.source
            let lengths = self.lengths
            var index = index
            while index + 8 <= self.count {
                let any =
                    lengths[Int(base[index])] | lengths[Int(base[index + 1])] | lengths[Int(base[index + 2])]
                    | lengths[Int(base[index + 3])] | lengths[Int(base[index + 4])] | lengths[Int(base[index + 5])]
                    | lengths[Int(base[index + 6])] | lengths[Int(base[index + 7])]
                if any != 0 {
                    var word: UInt64 = 0
                    for offset in 0..<8 {
                        word |= UInt64(lengths[Int(base[index + offset])]) << (offset * 8)
                    }
                    return index + word.trailingZeroBitCount >> 3
                }
                index += 8
            }
            while index < self.count && lengths[Int(base[index])] == 0 {
                index += 1
            }
            return index
        }

        /// The slot and length of the replacement for the sequence at `index`, and how many input bytes it
        /// replaces; nil if the byte at `index` is a ``ReferenceEscapeTable/special`` byte that starts no line or paragraph
        /// separator, and so is copied.
        @inline(__always)
        func replacement(at index: Int) -> (slot: Int, length: Int, consumed: Int)? {
            let byte = self.source[index]
            let length = self.lengths[Int(byte)]
            guard length == ReferenceEscapeTable.special else {
                return (Int(byte) * ReferenceEscapeTable.slotSize, Int(length), 1)
            }
            guard index + 2 < self.count, self.source[index + 1] == 0x80,
                self.source[index + 2] == 0xA8 || self.source[index + 2] == 0xA9
            else {
                return nil
            }
            let slot =
                ReferenceEscapeTable.lineSeparatorSlot
                + (self.source[index + 2] == 0xA8 ? 0 : ReferenceEscapeTable.slotSize)
            return (slot, ReferenceEscapeTable.separatorEscapeLength, 3)
        }

        /// The length of `source[start..<end]` once encoded; a separator starting before `end` is counted whole.
        func encodedCount(from start: Int, to end: Int) -> Int {
            var total = 0
            var index = start
            var runStart = index
            while true {
                index = min(self.skipCopiedBytes(from: index), end)
                guard index < end else { break }
                guard let replacement = self.replacement(at: index) else {
                    index += 1
                    continue
                }
                total += index - runStart + replacement.length
                index += replacement.consumed
                runStart = index
            }
            return total + max(0, end - runStart)
        }

        /// The encoded output, whose first `first` bytes are the input's, or nil if it does not fit in `capacity`.
        func write(first: Int, capacity: Int) -> String? {
            var fits = true
            let encoded = String(unsafeUninitializedCapacity: capacity) { output in
                let out = output.baseAddress!
                out.update(from: self.source, count: first)
                var written = first
                var index = first
                var runStart = index
                while true {
                    index = self.skipCopiedBytes(from: index)
                    guard index < self.count else { break }
                    guard let replacement = self.replacement(at: index) else {
                        index += 1
                        continue
                    }
                    let run = index - runStart
                    guard written + run + replacement.length <= capacity else {
                        fits = false
                        return 0
                    }
                    self.copy(self.source + runStart, count: run, to: out + written, room: capacity - written)
                    written += run
                    self.copy(
                        self.slots + replacement.slot,
                        slot: replacement.length,
                        to: out + written,
                        room: capacity - written
                    )
                    written += replacement.length
                    index += replacement.consumed
                    runStart = index
                }
                let run = self.count - runStart
                guard written + run <= capacity else {
                    fits = false
                    return 0
                }
                (out + written).update(from: self.source + runStart, count: run)
                return written + run
            }
            return fits ? encoded : nil
        }

        /// Copies a run of `count` input bytes to `destination`, which has `room` bytes; a short run is copied
        /// with two 8-byte moves when both the input and the output have 16 bytes to spare, the rest being
        /// overwritten later.
        @inline(__always)
        private func copy(
            _ start: UnsafePointer<UInt8>,
            count: Int,
            to destination: UnsafeMutablePointer<UInt8>,
            room: Int
        ) {
            if count <= 16 && room >= 16 && start + 16 <= self.source + self.count {
                let raw = UnsafeRawPointer(start)
                let target = UnsafeMutableRawPointer(destination)
                target.storeBytes(of: raw.loadUnaligned(as: UInt64.self), as: UInt64.self)
                target.storeBytes(
                    of: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                    toByteOffset: 8,
                    as: UInt64.self
                )
            } else {
                destination.update(from: start, count: count)
            }
        }

        /// Copies a replacement of `length` bytes from its slot to `destination`, which has `room` bytes: the whole
        /// 8-byte slot at once when there is room for it, the padding being overwritten later.
        @inline(__always)
        private func copy(
            _ slot: UnsafePointer<UInt8>,
            slot length: Int,
            to destination: UnsafeMutablePointer<UInt8>,
            room: Int
        ) {
            if room >= ReferenceEscapeTable.slotSize {
                UnsafeMutableRawPointer(destination).storeBytes(
                    of: UnsafeRawPointer(slot).loadUnaligned(as: UInt64.self),
                    as: UInt64.self
                )
            } else {
                destination.update(from: slot, count: length)
            }
        }
    }
}

@Suite("The vector kernel of the hexadecimal escapes", .tags(.encoders))
struct HexEscapeKernelTests {
    /// `scripts/test` runs the encoder suites twice: on the fastest path the processor has, and with
    /// `BULWARK_NO_VECTOR_ENCODING=1`, which leaves out the AVX-512 VBMI kernel (the next path, AVX2 or SSE2, is used).
    /// ``VectorPathTests`` runs every path in-process.
    @Test("the attribute, URL and JavaScript tables use a kernel exactly where the selected path has one")
    func kernelInUse() {
        let environment = ProcessInfo.processInfo.environment
        #expect(VectorPath.selected == VectorPath.choose(environment: environment))
        #expect(VectorPath.selected.isSupported)
        if environment["BULWARK_NO_VECTOR_ENCODING"] == "1" && environment["BULWARK_VECTOR_ENCODING"] == nil {
            #expect(VectorPath.selected != .avx512)
        }
        let expected = VectorPath.selected != .scalar
        #expect(HTMLEncoder.vectorKernels.attribute == expected)
        #expect(URLComponentEncoder.usesVectorKernel == expected)
        #expect(JavaScriptEncoder.usesVectorKernel == expected)
        // Named entities have no hexadecimal shape.
        #expect(HTMLEncoder.vectorKernels.text == false)
        print("hex escape kernel: path \(VectorPath.selected.name), in use \(expected)")
    }

    @Test("bytes the kernel leaves to the table (controls, short escapes, line separators) in every lane of dense text")
    func stopBytesInEveryLane() {
        // Dense enough for the dense layout; each stop byte at every offset of two groups of sixteen, past the
        // sample that chooses the layout (the first quarter) and more than 128 bytes before the end. The text must stay
        // at least 1,024 bytes long from its first replaced byte, or the encoder would not sample it (and would pick the
        // sparse layout without a word).
        let dense = Array(String(repeating: "a <b> & \"c\" ", count: 100).utf8)
        let stops: [[UInt8]] = [
            [0x00], [0x01], [0x09], [0x0A], [0x7F], [UInt8(ascii: "\\")], [0xE2, 0x80, 0xA8], [0xE2, 0x80, 0xA9],
            [0xE2, 0x82, 0xAC],
        ]
        for stop in stops {
            for offset in 1000..<1032 {
                var bytes = dense
                bytes.replaceSubrange(offset..<offset + stop.count, with: stop)
                EncoderDifferentialTests.expectSame(bytes: bytes)
                VectorPathTests.expectSame(bytes: bytes)
            }
        }
    }
}
