/// The byte-level engine shared by the output encoders: a table that says, for every byte value, whether it is
/// copied or replaced, and by what.
///
/// Encoding scans the UTF-8 bytes of the input, eight at a time, and copies runs of bytes that need no escaping in
/// bulk. A string with nothing to escape is returned as it is, without a copy. Otherwise the output is written in one
/// pass straight into the new string's storage, sized from the expansion measured on the first few kilobytes; only
/// when that estimate is too small is the exact length counted and the output written again.
///
/// Only bytes below 0x80 (and, with ``escapesLineSeparators``, the lead byte 0xE2 of U+2028 and U+2029) are
/// replaced by the encoders; the input is a `String`, so every other byte belongs to a valid UTF-8 sequence and is
/// copied. Byte arrays are turned into strings first, with U+FFFD for invalid UTF-8 (see ``encode(utf8:)``).
struct EscapeTable: Sendable {
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
            let sampleEnd = min(self.count, first + EscapeTable.sampleLength)
            let sampled = self.encodedCount(from: first, to: sampleEnd)
            let rest = self.count - sampleEnd
            // The rest is assumed to expand like the sample, plus an eighth and a little more for safety.
            let estimate = first + sampled + rest + rest * max(0, sampled - (sampleEnd - first)) / (sampleEnd - first)
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
        /// replaces; nil if the byte at `index` is a ``EscapeTable/special`` byte that starts no line or paragraph
        /// separator, and so is copied.
        @inline(__always)
        func replacement(at index: Int) -> (slot: Int, length: Int, consumed: Int)? {
            let byte = self.source[index]
            let length = self.lengths[Int(byte)]
            guard length == EscapeTable.special else {
                return (Int(byte) * EscapeTable.slotSize, Int(length), 1)
            }
            guard index + 2 < self.count, self.source[index + 1] == 0x80,
                self.source[index + 2] == 0xA8 || self.source[index + 2] == 0xA9
            else {
                return nil
            }
            let slot = EscapeTable.lineSeparatorSlot + (self.source[index + 2] == 0xA8 ? 0 : EscapeTable.slotSize)
            return (slot, EscapeTable.separatorEscapeLength, 3)
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
                    self.copy(self.slots + replacement.slot, slot: replacement.length, to: out + written,
                              room: capacity - written)
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
        private func copy(_ start: UnsafePointer<UInt8>, count: Int, to destination: UnsafeMutablePointer<UInt8>,
                          room: Int) {
            if count <= 16 && room >= 16 && start + 16 <= self.source + self.count {
                let raw = UnsafeRawPointer(start)
                let target = UnsafeMutableRawPointer(destination)
                target.storeBytes(of: raw.loadUnaligned(as: UInt64.self), as: UInt64.self)
                target.storeBytes(of: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self), toByteOffset: 8,
                                  as: UInt64.self)
            } else {
                destination.update(from: start, count: count)
            }
        }

        /// Copies a replacement of `length` bytes from its slot to `destination`, which has `room` bytes: the whole
        /// 8-byte slot at once when there is room for it, the padding being overwritten later.
        @inline(__always)
        private func copy(_ slot: UnsafePointer<UInt8>, slot length: Int, to destination: UnsafeMutablePointer<UInt8>,
                          room: Int) {
            if room >= EscapeTable.slotSize {
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
