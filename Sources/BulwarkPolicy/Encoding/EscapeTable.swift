/// The byte-level engine shared by the output encoders: a table that says, for every byte value, whether it is
/// copied or replaced, and by what.
///
/// Encoding tests the UTF-8 bytes of the input sixteen at a time with the encoder's ``EscapeCandidates``, which flag
/// the bytes that may need replacing, and looks up only the flagged ones. A string with nothing to escape is returned
/// as it is, without a copy. Otherwise the input is encoded in blocks of 16 KiB into a buffer sized for the longest
/// possible output of a block: each run of copied bytes with one move, each replacement with one 8-byte store, and a
/// group with many bytes to replace byte by byte through the table, without a branch. Each block's output is made
/// into a string without validating it again (it is valid UTF-8 by construction, see below) and appended to the
/// result, whose capacity is estimated from the expansion of the first few kilobytes.
///
/// Only bytes below 0x80 (and, with ``EscapeCandidates/escapesLineSeparators``, the three-byte sequences of U+2028
/// and U+2029) are replaced by the text encoders, by valid UTF-8; the input is a `String`, so every other byte
/// belongs to a valid UTF-8 sequence and is copied whole. Byte arrays are turned into strings first, with U+FFFD for
/// invalid UTF-8 (see ``encode(utf8:)``), except by a table that replaces every byte of 0x80 and above
/// (``encode(bytes:)``).
struct EscapeTable<Candidates: EscapeCandidates>: Sendable {
    /// For each byte value, the length of its replacement; 0 means the byte is copied, ``special`` means the byte
    /// starts a sequence that needs a closer look (U+2028 and U+2029).
    private let lengths: [UInt8]
    /// For each byte value, what is written for it: the replacement (or the byte itself, if copied) in the low seven
    /// bytes, little-endian, and its length in the top byte (``special`` for a sequence that needs a closer look).
    /// The whole word is stored at once; the bytes past the length are overwritten by what follows.
    private let entries: [UInt64]
    /// For each byte value, how many bytes are written for it (1 if it is copied; ``special`` as in ``lengths``).
    private let outputLengths: [UInt8]
    /// The entries of the U+2028 and U+2029 escapes, at the low bit of the sequences' last byte (0xA8, 0xA9).
    private let separatorEntries: [UInt64]
    /// The most bytes written for one byte of input.
    private let longestOutput: Int
    /// The fewest bytes a replaced byte is replaced with.
    private let shortestReplacement: Int
    /// Whether every byte of 0x80 and above is replaced, so that any bytes, valid UTF-8 or not, encode to valid UTF-8.
    private let replacesNonASCII: Bool
    /// Whether some replacement is not ASCII (U+FFFD in the HTML tables), so that ASCII input can give output that
    /// is not.
    private let hasNonASCIIReplacement: Bool

    /// The bits of an entry that are set if what it writes is not ASCII.
    private static var nonASCIIBits: UInt64 { 0x0080_8080_8080_8080 }
    /// Marks a byte that starts a sequence needing a closer look.
    private static var special: UInt8 { 0xFF }
    /// The longest replacement allowed: an entry holds seven bytes and the length.
    private static var longestReplacement: Int { 7 }
    /// How many input bytes are encoded at a time: with the longest replacement, the buffer for a block stays below
    /// the 128 KiB from which allocators map memory of its own.
    private static var blockLength: Int { 16 * 1024 }
    /// How many flagged bytes make a group of sixteen dense, written byte by byte rather than flagged byte by
    /// flagged byte.
    private static var denseGroup: Int { 4 }
    /// How many bytes after the first replaced one are measured to size the output.
    private static var sampleLength: Int { 4096 }

    /// A table in which each byte for which `replacement` returns a string is replaced by that string's UTF-8 bytes.
    ///
    /// - Parameter replacement: The replacement of a byte, or nil to copy it: 1 to 7 bytes of UTF-8. Must return nil
    ///   for 0xE2 when ``EscapeCandidates/escapesLineSeparators`` is set, and a replacement for every byte that
    ///   `Candidates` does not flag.
    init(_ replacement: (UInt8) -> String?) {
        var lengths = [UInt8](repeating: 0, count: 256)
        var entries = (0...255).map { UInt64($0) | 1 << 56 }
        func entry(_ text: String) -> UInt64 {
            let bytes = Array(text.utf8)
            precondition(
                !bytes.isEmpty && bytes.count <= Self.longestReplacement,
                "a replacement must be 1-\(Self.longestReplacement) bytes"
            )
            return bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) } | UInt64(bytes.count) << 56
        }
        func flagged(_ byte: UInt8) -> Bool {
            Candidates.flags(SIMD16(repeating: byte))[0] & 0x80 != 0
        }
        for byte in 0...255 {
            if let text = replacement(UInt8(byte)) {
                precondition(flagged(UInt8(byte)), "\(Candidates.self) does not flag the replaced byte \(byte)")
                entries[byte] = entry(text)
                lengths[byte] = UInt8(entries[byte] >> 56)
            }
        }
        var longestOutput = Int(lengths.max()!)
        if Candidates.escapesLineSeparators {
            precondition(lengths[0xE2] == 0, "0xE2 cannot have a replacement when line separators are escaped")
            precondition(flagged(0xE2), "\(Candidates.self) does not flag 0xE2")
            lengths[0xE2] = Self.special
            entries[0xE2] = 0xE2 | UInt64(Self.special) << 56
            self.separatorEntries = [entry("\\u2028"), entry("\\u2029")]
            longestOutput = max(longestOutput, 6)
        } else {
            self.separatorEntries = []
        }
        self.lengths = lengths
        self.outputLengths = (0...255).map { lengths[$0] == 0 ? 1 : lengths[$0] }
        self.entries = entries
        self.longestOutput = max(1, longestOutput)
        self.shortestReplacement = Int(lengths.filter { $0 != 0 && $0 != Self.special }.min() ?? 1)
        self.replacesNonASCII = lengths[0x80...].allSatisfy { $0 != 0 && $0 != Self.special }
        self.hasNonASCIIReplacement = (0...255).contains { byte in
            lengths[byte] != 0 && lengths[byte] != Self.special && entries[byte] & Self.nonASCIIBits != 0
        }
    }

    /// The input with every byte the table names replaced, returned without a copy when there is none.
    func encode(_ input: String) -> String {
        var input = input
        let inputIsASCII: Bool
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            inputIsASCII = input.utf8Span.isKnownASCII
        } else {
            inputIsASCII = false
        }
        let encoded = input.withUTF8 { source in
            self.encode(source, isASCII: inputIsASCII)
        }
        return encoded ?? input
    }

    /// The UTF-8 bytes `input` encoded; invalid UTF-8 is replaced by U+FFFD first (the maximal-subpart practice of
    /// the Unicode Standard, as `String(decoding:as:)` does).
    func encode(utf8 input: some Collection<UInt8>) -> String {
        self.encode(String(decoding: input, as: UTF8.self))
    }

    /// Any bytes encoded, valid UTF-8 or not; only for a table that replaces every byte of 0x80 and above, so that
    /// the output is valid UTF-8 whatever the input.
    func encode(bytes input: some Collection<UInt8>) -> String {
        precondition(self.replacesNonASCII, "only a table that replaces non-ASCII bytes can encode any bytes")
        let encoded = input.withContiguousStorageIfAvailable { source in
            self.encode(bytes: source)
        }
        return encoded ?? Array(input).withUnsafeBufferPointer { self.encode(bytes: $0) }
    }

    private func encode(bytes source: UnsafeBufferPointer<UInt8>) -> String {
        // Nothing replaced: every byte is an unreplaced byte below 0x80.
        self.encode(source, isASCII: true) ?? String(decoding: source, as: UTF8.self)
    }

    /// Upper-case hexadecimal digits of a byte, two characters.
    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }

    /// The encoded `source`, or nil if nothing in it needs replacing; `isASCII` tells whether every byte of `source`
    /// that is copied is ASCII.
    private func encode(_ source: UnsafeBufferPointer<UInt8>, isASCII: Bool) -> String? {
        guard let base = source.baseAddress else { return nil }
        return self.lengths.withUnsafeBufferPointer { lengths in
            self.outputLengths.withUnsafeBufferPointer { outputLengths in
                self.entries.withUnsafeBufferPointer { entries in
                    self.separatorEntries.withUnsafeBufferPointer { separators in
                        Writer(
                            source: base,
                            count: source.count,
                            lengths: lengths.baseAddress!,
                            outputLengths: outputLengths.baseAddress!,
                            entries: entries.baseAddress!,
                            separators: separators.baseAddress,
                            longestOutput: self.longestOutput,
                            denseGrowth: Self.denseGroup * (self.shortestReplacement - 1),
                            isASCII: isASCII,
                            checksASCII: isASCII && self.hasNonASCIIReplacement
                        ).encode()
                    }
                }
            }
        }
    }

    /// The flagged lanes of one group of sixteen bytes, from the first.
    private struct Lanes {
        var low: UInt64
        var high: UInt64

        /// The lanes whose high bit is set in `flags`.
        @inline(__always)
        init(_ flags: SIMD16<UInt8>) {
            let words = unsafeBitCast(flags & 0x80, to: SIMD2<UInt64>.self)
            self.low = UInt64(littleEndian: words[0])
            self.high = UInt64(littleEndian: words[1])
        }

        var isEmpty: Bool { self.low | self.high == 0 }

        /// How many lanes are flagged.
        @inline(__always)
        var count: Int {
            // One bit per flagged lane, at the top of its byte: moved to the bottom, the bytes add up in the top one.
            let perByte: UInt64 = 0x0101_0101_0101_0101
            return Int(((self.low >> 7) &+ (self.high >> 7)) &* perByte >> 56)
        }

        /// The next flagged lane, or nil.
        @inline(__always)
        mutating func next() -> Int? {
            if self.low != 0 {
                defer { self.low &= self.low &- 1 }
                return self.low.trailingZeroBitCount >> 3
            }
            if self.high != 0 {
                defer { self.high &= self.high &- 1 }
                return 8 + self.high.trailingZeroBitCount >> 3
            }
            return nil
        }
    }

    /// One encoding of one input.
    private struct Writer {
        let source: UnsafePointer<UInt8>
        let count: Int
        let lengths: UnsafePointer<UInt8>
        let outputLengths: UnsafePointer<UInt8>
        let entries: UnsafePointer<UInt64>
        let separators: UnsafePointer<UInt64>?
        let longestOutput: Int
        /// How much longer than its input a group written byte by byte must be for the next to be written so too.
        let denseGrowth: Int
        /// Whether every byte of the input that is copied is ASCII.
        let isASCII: Bool
        /// Whether the output of ASCII input must be checked for non-ASCII replacements.
        let checksASCII: Bool

        /// The encoded input, or nil if nothing in it needs replacing.
        ///
        /// The input is encoded a block at a time into one buffer sized for the longest possible output of a block,
        /// and each block's output appended to the result, which is sized from the expansion of the first few
        /// kilobytes after the first replaced byte. The buffer stays small enough to come from the allocator's pool:
        /// a second buffer as large as the output would be mapped and unmapped, page by page, on every call.
        func encode() -> String? {
            let first = self.firstReplaced()
            guard first < self.count else { return nil }
            let scratchCapacity = min(self.count, EscapeTable.blockLength) * self.longestOutput + self.groupRoom
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: scratchCapacity) { scratch -> String in
                var result = ""
                var start = 0
                while start < self.count {
                    var end = min(self.count, start + EscapeTable.blockLength)
                    // Blocks end before the lead byte of a character (the input is valid UTF-8; for other bytes, the
                    // table replaces every non-ASCII byte on its own, and stepping back does no harm).
                    var stepsBack = 0
                    while end < self.count && stepsBack < 3 && self.source[end] & 0xC0 == 0x80 {
                        end -= 1
                        stepsBack += 1
                    }
                    let block = Writer(
                        source: self.source,
                        count: end,
                        lengths: self.lengths,
                        outputLengths: self.outputLengths,
                        entries: self.entries,
                        separators: self.separators,
                        longestOutput: self.longestOutput,
                        denseGrowth: self.denseGrowth,
                        isASCII: self.isASCII,
                        checksASCII: self.checksASCII
                    )
                    let (written, entryBits) = block.write(
                        from: start,
                        first: min(max(start, first), end),
                        to: scratch.baseAddress!
                    )
                    let output = UnsafeBufferPointer(rebasing: scratch[..<written])
                    let isASCII = self.isASCII && entryBits & EscapeTable.nonASCIIBits == 0
                    let piece = Self.string(output, isASCII: isASCII)
                    if start == 0 && end == self.count {
                        return piece
                    }
                    if start == 0 {
                        result.reserveCapacity(self.estimatedCount(first: first))
                    }
                    result.append(piece)
                    start = end
                }
                return result
            }
        }

        /// The length of the encoded input, estimated from the first few kilobytes after the first replaced byte.
        func estimatedCount(first: Int) -> Int {
            let sampleEnd = min(self.count, first + EscapeTable.sampleLength)
            let sampled = self.encodedCount(from: first, to: sampleEnd)
            let rest = self.count - sampleEnd
            // The rest is assumed to expand like the sample, plus a sixteenth and a little more for safety; if it
            // expands more, the result grows.
            return first + sampled + rest + rest * max(0, sampled - (sampleEnd - first)) / (sampleEnd - first)
                + rest >> 4 + 64
        }

        /// A string of `output`, which is valid UTF-8, without validating it again where the standard library allows.
        static func string(_ output: UnsafeBufferPointer<UInt8>, isASCII: Bool) -> String {
            assert(String(decoding: output, as: UTF8.self).utf8.elementsEqual(output), "invalid UTF-8 written")
            assert(!isASCII || output.allSatisfy { $0 < 0x80 }, "non-ASCII output marked ASCII")
            if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                // Valid UTF-8 by construction: ASCII replacements and whole separators replaced, every other byte of
                // the (valid) input copied whole, or only ASCII from a table that replaces every non-ASCII byte.
                return String(copying: unsafe UTF8Span(unchecked: output.span, isKnownASCII: isASCII))
            }
            return String(decoding: output, as: UTF8.self)
        }

        /// The room the output needs for one group of sixteen bytes besides the run of copied bytes before it: all
        /// sixteen replaced, and the bytes stored past the end of the last write.
        var groupRoom: Int { 16 * self.longestOutput + 16 }

        /// The flagged lanes of the sixteen bytes at `index`.
        @inline(__always)
        func candidates(at index: Int) -> Lanes {
            Lanes(self.flags(at: index))
        }

        /// The ``EscapeCandidates`` flags of the sixteen bytes at `index`.
        @inline(__always)
        func flags(at index: Int) -> SIMD16<UInt8> {
            Candidates.flags(UnsafeRawPointer(self.source + index).loadUnaligned(as: SIMD16<UInt8>.self))
        }

        /// The flagged lanes of the first group of sixteen bytes, from `index` on in steps of sixteen and ending at
        /// or before `end`, that has any; `index` is moved to that group, or past the last group if none has.
        @inline(__always)
        func nextCandidates(from index: inout Int, to end: Int) -> Lanes {
            while index &+ 32 <= end {
                let first = self.flags(at: index)
                let second = self.flags(at: index &+ 16)
                if Lanes(first | second).isEmpty {
                    index &+= 32
                    continue
                }
                let lanes = Lanes(first)
                if !lanes.isEmpty { return lanes }
                index &+= 16
                return Lanes(second)
            }
            while index &+ 16 <= end {
                let lanes = self.candidates(at: index)
                if !lanes.isEmpty { return lanes }
                index &+= 16
            }
            return Lanes(SIMD16())
        }

        /// Whether the byte at `index`, which is ``EscapeTable/special``, starts U+2028 or U+2029.
        @inline(__always)
        func isSeparator(at index: Int) -> Bool {
            index + 2 < self.count && self.source[index + 1] == 0x80
                && (self.source[index + 2] == 0xA8 || self.source[index + 2] == 0xA9)
        }

        /// The entry for the separator starting at `index` (see ``isSeparator(at:)``).
        @inline(__always)
        func separatorEntry(at index: Int) -> UInt64 {
            self.separators![Int(self.source[index + 2] & 1)]
        }

        /// Whether the byte at `index` is replaced.
        @inline(__always)
        func isReplaced(at index: Int) -> Bool {
            let length = self.lengths[Int(self.source[index])]
            if Candidates.escapesLineSeparators && length == EscapeTable.special {
                return self.isSeparator(at: index)
            }
            return length != 0
        }

        /// The index of the first byte that is replaced, or `count`.
        func firstReplaced() -> Int {
            var index = 0
            while index + 16 <= self.count {
                var lanes = self.nextCandidates(from: &index, to: self.count)
                if lanes.isEmpty { break }
                while let lane = lanes.next() {
                    if self.isReplaced(at: index + lane) { return index + lane }
                }
                index += 16
            }
            while index < self.count && !self.isReplaced(at: index) {
                index += 1
            }
            return index
        }

        /// How many bytes longer than the input byte at `index` its encoding is, and how many input bytes it takes
        /// (3 for a separator, otherwise 1).
        @inline(__always)
        func growth(at index: Int) -> (growth: Int, consumed: Int) {
            let length = Int(self.entries[Int(self.source[index])] >> 56)
            if Candidates.escapesLineSeparators && length == Int(EscapeTable.special) {
                return self.isSeparator(at: index) ? (3, 3) : (0, 1)
            }
            return (length - 1, 1)
        }

        /// The length of `source[start..<end]` once encoded; a separator starting before `end` is counted whole.
        func encodedCount(from start: Int, to end: Int) -> Int {
            var total = end - start
            var index = start
            // The first byte not yet counted: bytes of a separator are counted with its first byte.
            var next = start
            while index + 16 <= end {
                var lanes = self.nextCandidates(from: &index, to: end)
                if lanes.isEmpty { break }
                while let lane = lanes.next() {
                    guard index + lane >= next else { continue }
                    let (growth, consumed) = self.growth(at: index + lane)
                    total += growth
                    next = index + lane + consumed
                }
                index += 16
            }
            index = max(index, next)
            while index < end {
                let (growth, consumed) = self.growth(at: index)
                total += growth
                index += consumed
            }
            return total
        }

        /// Copies the `count` input bytes at `start` to `output` at `written`, and returns where the copy ends: a
        /// short run with one 16-byte move, which stays in the input while `start + 16 <= self.count`.
        @inline(__always)
        func copyRun(from start: Int, count: Int, to output: UnsafeMutableRawPointer, at written: Int) -> Int {
            if count <= 16 {
                output.storeBytes(
                    of: UnsafeRawPointer(self.source + start).loadUnaligned(as: SIMD16<UInt8>.self),
                    toByteOffset: written,
                    as: SIMD16<UInt8>.self
                )
            } else {
                (output + written).copyMemory(from: self.source + start, byteCount: count)
            }
            return written &+ count
        }

        /// Writes the sixteen bytes at `index` through the table to `output` at `written`, without a branch; returns
        /// where the output ends.
        @inline(__always)
        func writeGroup(
            at index: Int,
            to output: UnsafeMutableRawPointer,
            at written: Int,
            entries: UnsafePointer<UInt64>,
            lengths: UnsafePointer<UInt8>,
            entryBits: inout UInt64
        ) -> Int {
            // Two copies of the loop: the entries are collected only where they can tell something.
            if self.checksASCII {
                return self.writeGroup(at: index, to: output, at: written, entries: entries, lengths: lengths) {
                    entryBits |= $0
                }
            }
            return self.writeGroup(at: index, to: output, at: written, entries: entries, lengths: lengths) { _ in }
        }

        @inline(__always)
        func writeGroup(
            at index: Int,
            to output: UnsafeMutableRawPointer,
            at written: Int,
            entries: UnsafePointer<UInt64>,
            lengths: UnsafePointer<UInt8>,
            collect: (UInt64) -> Void
        ) -> Int {
            var written = written
            var next = self.source + index
            let end = next + 16
            repeat {
                let byte = Int(next.pointee)
                let entry = entries[byte]
                output.storeBytes(of: entry.littleEndian, toByteOffset: written, as: UInt64.self)
                written &+= Int(lengths[byte])
                collect(entry)
                next += 1
            } while next < end
            return written
        }

        /// Whether any of the sixteen bytes at `index` is ``EscapeTable/special``.
        @inline(__always)
        func hasSpecialByte(at index: Int) -> Bool {
            guard Candidates.escapesLineSeparators else { return false }
            let bytes = UnsafeRawPointer(self.source + index).loadUnaligned(as: SIMD16<UInt8>.self)
            return !Lanes(bytes.lanes(equalTo: 0xE2)).isEmpty
        }

        /// Writes `source[start..<count]` encoded to `output`, which has room for `count - start` times
        /// `longestOutput` bytes plus ``groupRoom``; `first` is the index of the first byte that may be replaced.
        /// Returns the number of bytes written, and the bits of the entries written (all of them where
        /// ``checksASCII``, otherwise at least those of the flagged bytes).
        ///
        /// Groups of sixteen input bytes are tested at once. In a group with flagged bytes, the run of copied bytes
        /// before each flagged byte is copied with one 16-byte move (or a memmove if longer), and the flagged byte's
        /// entry is stored as one 8-byte word: no branch depends on the bytes but the loop over the flagged lanes.
        /// The bytes these wide stores write past the output so far are overwritten by what follows (the room of
        /// ``groupRoom`` covers the last). The last 32 bytes are written one at a time.
        func write(from start: Int, first: Int, to output: UnsafeMutablePointer<UInt8>) -> (Int, UInt64) {
            let denseGroup = EscapeTable.denseGroup
            let source = self.source
            let entries = self.entries
            let outputLengths = self.outputLengths
            let raw = UnsafeMutableRawPointer(output)
            output.update(from: source + start, count: first - start)
            var written = first - start
            var entryBits: UInt64 = 0
            var runStart = first
            var index = first
            // Whether the last group was dense: the next is then written byte by byte without testing it first, as long
            // as the groups keep growing as much as a dense group at least.
            var dense = false
            while index + 32 <= self.count {
                if dense {
                    // Right after a dense group: `runStart == index`.
                    dense = !self.hasSpecialByte(at: index)
                    if dense {
                        let before = written
                        written = self.writeGroup(
                            at: index,
                            to: raw,
                            at: written,
                            entries: entries,
                            lengths: outputLengths,
                            entryBits: &entryBits
                        )
                        dense = written &- before >= 16 &+ self.denseGrowth
                        index &+= 16
                        runStart = index
                        continue
                    }
                }
                var lanes = self.nextCandidates(from: &index, to: self.count &- 16)
                if lanes.isEmpty { break }
                if lanes.count >= denseGroup && runStart <= index && !self.hasSpecialByte(at: index) {
                    // Dense: the run before the group, then all sixteen bytes through the table, without a branch.
                    written = self.copyRun(from: runStart, count: index &- runStart, to: raw, at: written)
                    written = self.writeGroup(
                        at: index,
                        to: raw,
                        at: written,
                        entries: entries,
                        lengths: outputLengths,
                        entryBits: &entryBits
                    )
                    dense = true
                    index &+= 16
                    runStart = index
                    continue
                }
                while let lane = lanes.next() {
                    let position = index &+ lane
                    var entry = self.entries[Int(source[position])]
                    var consumed = 1
                    if Candidates.escapesLineSeparators && entry >> 56 == UInt64(EscapeTable.special) {
                        // Not the start of a separator: copied with its run. A separator's other bytes are never
                        // flagged.
                        guard position >= runStart, self.isSeparator(at: position) else { continue }
                        entry = self.separatorEntry(at: position)
                        consumed = 3
                    }
                    written = self.copyRun(from: runStart, count: position &- runStart, to: raw, at: written)
                    raw.storeBytes(of: entry.littleEndian, toByteOffset: written, as: UInt64.self)
                    written &+= Int(entry >> 56)
                    entryBits |= entry
                    runStart = position &+ consumed
                }
                index &+= 16
            }
            index = max(index, runStart)
            while index < self.count {
                let byte = source[index]
                var length = Int(self.lengths[Int(byte)])
                guard length != 0 else {
                    index += 1
                    continue
                }
                var entry = self.entries[Int(byte)]
                var consumed = 1
                if Candidates.escapesLineSeparators && length == Int(EscapeTable.special) {
                    guard self.isSeparator(at: index) else {
                        index += 1
                        continue
                    }
                    entry = self.separatorEntry(at: index)
                    length = Int(entry >> 56)
                    consumed = 3
                }
                let run = index - runStart
                (output + written).update(from: source + runStart, count: run)
                written += run
                for offset in 0..<length {
                    output[written + offset] = UInt8(truncatingIfNeeded: entry >> (8 * offset))
                }
                written += length
                entryBits |= entry
                index += consumed
                runStart = index
            }
            let run = self.count - runStart
            (output + written).update(from: source + runStart, count: run)
            written += run
            return (written, entryBits)
        }
    }
}
