/// The byte-level engine shared by the output encoders: a table that says, for every byte value, whether it is
/// copied or replaced, and by what.
///
/// Encoding tests the UTF-8 bytes of the input sixteen at a time with the encoder's ``EscapeCandidates``, which flag
/// the bytes that may need replacing, and looks up only the flagged ones. A string with nothing to escape is returned
/// as it is, without a copy. Otherwise the input is encoded in blocks of 8 KiB into a buffer sized for the longest
/// possible output of a block, small enough to stay in the processor's first-level cache: each group of sixteen
/// bytes is copied with one 16-byte store, and each flagged byte then written over its copy with one 8-byte store,
/// followed by the sixteen input bytes after it. Text in which most groups have several bytes to replace is written
/// byte by byte through the table instead, without a branch; which of the two is chosen once per input, from a
/// sample. A table whose replacements are hexadecimal escapes of one shape has its groups written by a vector kernel
/// first (``HexEscapeKernel``, on the ``VectorPath`` the processor has), in either layout; the groups the kernel leaves (a byte
/// replaced some other way) go through the loops above. Each block's output is made into a string without validating
/// it again (it is valid UTF-8 by construction, see below) and appended to the result, whose capacity is estimated
/// from the same sample.
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
    /// Whether every byte of 0x80 and above is replaced, so that any bytes, valid UTF-8 or not, encode to valid UTF-8.
    private let replacesNonASCII: Bool
    /// Whether some replacement is not ASCII (U+FFFD in the HTML tables), so that ASCII input can give output that
    /// is not.
    private let hasNonASCIIReplacement: Bool
    /// The vector kernels for the table's hexadecimal escapes, on each path (see ``HexEscapeKernel``).
    let kernels: HexEscapeKernels

    /// The vector kernel that ``VectorPath/selected`` uses, or nil if it uses none.
    var kernel: HexEscapeKernel? { self.kernels.selected }

    /// The bits of an entry that are set if what it writes is not ASCII.
    private static var nonASCIIBits: UInt64 { 0x0080_8080_8080_8080 }
    /// Marks a byte that starts a sequence needing a closer look.
    private static var special: UInt8 { 0xFF }
    /// The longest replacement allowed: an entry holds seven bytes and the length.
    private static var longestReplacement: Int { 7 }

    /// A table in which each byte for which `replacement` returns a string is replaced by that string's UTF-8 bytes.
    ///
    /// - Parameter replacement: The replacement of a byte, or nil to copy it: 1 to 7 bytes of UTF-8. Must return nil
    ///   for 0xE2 when ``EscapeCandidates/escapesLineSeparators`` is set, and a replacement for every byte that
    ///   `Candidates` does not flag.
    init(_ replacement: (UInt8) -> String?) {
        var lengths = [UInt8](repeating: 0, count: 256)
        var entries = (0...255).map { UInt64($0) | 1 << 56 }
        var replacements = [[UInt8]?](repeating: nil, count: 256)
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
                replacements[byte] = Array(text.utf8)
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
        self.replacesNonASCII = lengths[0x80...].allSatisfy { $0 != 0 && $0 != Self.special }
        precondition(
            self.replacesNonASCII || lengths[0x80...].allSatisfy { $0 == 0 || $0 == Self.special },
            "a table replaces every byte of 0x80 and above or none, so that characters are copied whole"
        )
        self.hasNonASCIIReplacement = (0...255).contains { byte in
            lengths[byte] != 0 && lengths[byte] != Self.special && entries[byte] & Self.nonASCIIBits != 0
        }
        self.kernels = HexEscapeKernels(
            shape: HexEscapeShape(replacements: replacements, escapesLineSeparators: Candidates.escapesLineSeparators)
        )
    }

    /// The input with every byte the table names replaced, returned without a copy when there is none; the vector
    /// kernel of `path` writes the groups it can (the output is the same on every path).
    func encode(_ input: String, path: VectorPath = .selected) -> String {
        var input = input
        let inputIsASCII: Bool
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            inputIsASCII = input.utf8Span.isKnownASCII
        } else {
            inputIsASCII = false
        }
        let encoded = input.withUTF8 { source in
            self.encode(source, isASCII: inputIsASCII, path: path)
        }
        return encoded ?? input
    }

    /// The UTF-8 bytes `input` encoded; invalid UTF-8 is replaced by U+FFFD first (the maximal-subpart practice of
    /// the Unicode Standard, as `String(decoding:as:)` does).
    func encode(utf8 input: some Collection<UInt8>, path: VectorPath = .selected) -> String {
        self.encode(String(decoding: input, as: UTF8.self), path: path)
    }

    /// Any bytes encoded, valid UTF-8 or not; only for a table that replaces every byte of 0x80 and above, so that
    /// the output is valid UTF-8 whatever the input.
    func encode(bytes input: some Collection<UInt8>, path: VectorPath = .selected) -> String {
        precondition(self.replacesNonASCII, "only a table that replaces non-ASCII bytes can encode any bytes")
        let encoded = input.withContiguousStorageIfAvailable { source in
            self.encode(bytes: source, path: path)
        }
        return encoded ?? Array(input).withUnsafeBufferPointer { self.encode(bytes: $0, path: path) }
    }

    private func encode(bytes source: UnsafeBufferPointer<UInt8>, path: VectorPath) -> String {
        // Nothing replaced: every byte is an unreplaced byte below 0x80.
        self.encode(source, isASCII: true, path: path) ?? String(decoding: source, as: UTF8.self)
    }

    /// Upper-case hexadecimal digits of a byte, two characters.
    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }

    /// The encoded `source`, or nil if nothing in it needs replacing; `isASCII` tells whether every byte of `source`
    /// that is copied is ASCII.
    private func encode(_ source: UnsafeBufferPointer<UInt8>, isASCII: Bool, path: VectorPath) -> String? {
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
                            isASCII: isASCII,
                            checksASCII: isASCII && self.hasNonASCIIReplacement,
                            copiesNonASCII: !self.replacesNonASCII,
                            kernel: self.kernels.kernel(for: path)
                        ).encode()
                    }
                }
            }
        }
    }

    /// How the groups of sixteen bytes of one input are written, chosen from a sample of it: the cheaper way
    /// depends on how many bytes of a group are flagged, and choosing once per input keeps the choice off the
    /// branches that the processor has to predict.
    private enum Layout {
        /// Groups without a flagged byte are copied, the others flagged byte by flagged byte.
        case sparse
        /// All sixteen bytes of each group are written through the table, without a branch.
        case dense

        /// The layout for text in which `flagged` bytes of `sampled` are flagged.
        init(flagged: Int, of sampled: Int) {
            // Measured on markup: a flagged byte costs about as much as four bytes through the table.
            self = flagged * 4 >= sampled ? .dense : .sparse
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
        /// Whether every byte of the input that is copied is ASCII.
        let isASCII: Bool
        /// Whether the output of ASCII input must be checked for non-ASCII replacements.
        let checksASCII: Bool
        /// Whether bytes of 0x80 and above are copied as they are: the input is then valid UTF-8, whose characters
        /// are copied whole, and replaced bytes are replaced by whole characters.
        let copiesNonASCII: Bool
        /// Writes the groups it can, in either layout, before the table's own loops (see ``HexEscapeKernel``).
        let kernel: HexEscapeKernel?

        /// How many input bytes are written between two checks of the output's capacity.
        static var blockLength: Int { 8 * 1024 }
        /// How many bytes after the first replaced one are measured to size the output and choose its ``Layout``.
        static var sampleLength: Int { 4096 }
        /// The fewest bytes after the first replaced one for which sampling pays.
        static var shortestSampled: Int { 1024 }
        /// How far past the start of a group of sixteen bytes ``writeGroups(from:to:layout:to:delta:entryBits:)``
        /// reads: sixteen bytes from the end of a line separator that starts in the group's last lane.
        static var lookahead: Int { 16 + 18 }
        /// How far past the output of the input bytes it has consumed a group may store: the sixteen bytes stored
        /// after its last flagged byte (see ``writeLane(of:group:end:_:_:_:_:_:)``), or the 64-byte stores of the
        /// vector kernels, at most 56 bytes past the output of what they encoded (see `bulwark_hex_escape_run`). The
        /// SSE2 kernel also writes the group it stops before, which ``room(for:)`` holds: it counts the longest
        /// output for every byte that a group starting in the block can consume.
        static var slack: Int { 64 }

        /// The encoded input, or nil if nothing in it needs replacing.
        ///
        /// The input is encoded a block at a time into one buffer sized for the longest possible output of a block,
        /// and each block's output appended to the result, which is sized from the expansion of a sample after the
        /// first replaced byte. The buffer is small enough to stay in the first-level cache, where the many small
        /// stores of the encoding are cheap; with one buffer as large as the output, they went to memory, and the
        /// output was read back from there to make the string (measured: attribute encoding a third slower).
        func encode() -> String? {
            let first = self.firstReplaced()
            guard first < self.count else { return nil }
            let rest = self.count - first
            var layout = Layout.sparse
            var estimate = first + rest * self.longestOutput
            if rest >= Self.shortestSampled {
                let sampleEnd = first + min(rest / 4, Self.sampleLength)
                let sampled = sampleEnd - first
                // The output's length is only needed for more than one block.
                let sizes = self.count > Self.blockLength
                let (encoded, flagged) = self.sample(from: first, to: sampleEnd, measuresOutput: sizes)
                layout = Layout(flagged: flagged, of: sampled)
                if sizes {
                    // The rest is assumed to expand like the sample, plus a sixteenth and a little more for safety;
                    // if it expands more, the result grows.
                    let expanded = encoded + (self.count - sampleEnd) * encoded / sampled
                    estimate = first + expanded + expanded >> 4 + 64
                }
            }
            let capacity = self.room(for: min(self.count, Self.blockLength))
            return withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 16) { scratch -> String in
                let output = scratch.baseAddress!
                var result = ""
                var index = 0
                // Loads of sixteen bytes up to `lookahead` bytes past a group's start stay in the input.
                let lastGroup = self.count - Self.lookahead
                while index < self.count {
                    let blockStart = index
                    let blockEnd = min(self.count, index + Self.blockLength)
                    if index < first {
                        // Bytes before the first replaced one are copied as they are.
                        index = min(first, blockEnd)
                        output.copyMemory(from: self.source + blockStart, byteCount: index - blockStart)
                    }
                    var delta = -blockStart
                    var entryBits: UInt64 = 0
                    let end = min(blockEnd, lastGroup + 1)
                    if index < end {
                        self.writeGroups(
                            from: &index,
                            to: end,
                            layout: layout,
                            to: output,
                            delta: &delta,
                            entryBits: &entryBits
                        )
                    }
                    var written = index + delta
                    if index < self.count && self.copiesNonASCII {
                        // Each piece is a string of its own, so it must not end inside a character: step back to the
                        // start of a character cut by the block's end. Its bytes (at most three, after the lead byte)
                        // were copied as they are, so the output loses as many.
                        let cut = index
                        while index > cut - 3 && self.source[index] & 0xC0 == 0x80 {
                            index -= 1
                        }
                        written -= cut - index
                    }
                    if index > lastGroup {
                        // Fewer than `lookahead` bytes are left: at most that many times `longestOutput`.
                        let bytes = output.assumingMemoryBound(to: UInt8.self)
                        written = self.writeTail(from: index, to: bytes, at: written, entryBits: &entryBits)
                        index = self.count
                    }
                    let isASCII = self.isASCII && entryBits & EscapeTable.nonASCIIBits == 0
                    let piece = Self.string(
                        UnsafeBufferPointer(start: output.assumingMemoryBound(to: UInt8.self), count: written),
                        isASCII: isASCII
                    )
                    if blockStart == 0 && index == self.count {
                        return piece
                    }
                    if blockStart == 0 {
                        result.reserveCapacity(estimate)
                    }
                    result.append(piece)
                }
                return result
            }
        }

        /// The most output bytes that a block of `inputCount` bytes can store: the groups that start in it consume
        /// at most `lookahead` bytes past it, and the tail of the input is shorter than `lookahead`.
        func room(for inputCount: Int) -> Int {
            (inputCount + Self.lookahead) * self.longestOutput + Self.slack
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

        /// The sixteen input bytes at `index`, which must be at most `count - 16`.
        @inline(__always)
        func group(at index: Int) -> SIMD16<UInt8> {
            UnsafeRawPointer(self.source + index).loadUnaligned(as: SIMD16<UInt8>.self)
        }

        /// One bit per lane of `flags`, lane 0 in the lowest bit, set where the lane's high bit is set.
        @inline(__always)
        static func mask(_ flags: SIMD16<UInt8>) -> UInt32 {
            let words = unsafeBitCast(flags, to: SIMD2<UInt64>.self)
            let highBits: UInt64 = 0x8080_8080_8080_8080
            // Bit 7 of byte i times bit 7 * (7 - i) of the multiplier lands on bit 56 + i, and no two products of
            // bits share a bit, so nothing carries.
            let gather: UInt64 = 0x0002_0408_1020_4081
            let low = ((UInt64(littleEndian: words[0]) & highBits) &* gather) >> 56
            let high = ((UInt64(littleEndian: words[1]) & highBits) &* gather) >> 56
            return UInt32(truncatingIfNeeded: low | high << 8)
        }

        /// Whether no lane of `flags` has its high bit set.
        @inline(__always)
        static func isEmpty(_ flags: SIMD16<UInt8>) -> Bool {
            let words = unsafeBitCast(flags, to: SIMD2<UInt64>.self)
            return (words[0] | words[1]) & 0x8080_8080_8080_8080 == 0
        }

        /// The flagged lanes of the sixteen bytes at `index`.
        @inline(__always)
        func candidates(at index: Int) -> UInt32 {
            Self.mask(Candidates.flags(self.group(at: index)))
        }

        /// The flagged lanes of the first group of sixteen bytes, from `index` on in steps of sixteen and ending at
        /// or before `end`, that has any; `index` is moved to that group, or past the last group if none has.
        @inline(__always)
        func nextCandidates(from index: inout Int, to end: Int) -> UInt32 {
            while index &+ 32 <= end {
                let first = Candidates.flags(self.group(at: index))
                let second = Candidates.flags(self.group(at: index &+ 16))
                if Self.isEmpty(first | second) {
                    index &+= 32
                    continue
                }
                let lanes = Self.mask(first)
                if lanes != 0 { return lanes }
                index &+= 16
                return Self.mask(second)
            }
            while index &+ 16 <= end {
                let lanes = self.candidates(at: index)
                if lanes != 0 { return lanes }
                index &+= 16
            }
            return 0
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
                if lanes == 0 { break }
                repeat {
                    let position = index + lanes.trailingZeroBitCount
                    if self.isReplaced(at: position) { return position }
                    lanes &= lanes &- 1
                } while lanes != 0
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

        /// How many bytes of `source[start..<end]` are flagged (in whole groups of sixteen only), and, if
        /// `measuresOutput`, its length once encoded (a separator starting before `end` is counted whole).
        func sample(from start: Int, to end: Int, measuresOutput: Bool) -> (encoded: Int, flagged: Int) {
            var total = end - start
            var flagged = 0
            var index = start
            // The first byte not yet counted: bytes of a separator are counted with its first byte.
            var next = start
            while index + 16 <= end {
                var lanes = self.candidates(at: index)
                flagged += lanes.nonzeroBitCount
                while measuresOutput && lanes != 0 {
                    let position = index + lanes.trailingZeroBitCount
                    lanes &= lanes &- 1
                    guard position >= next else { continue }
                    let (growth, consumed) = self.growth(at: position)
                    total += growth
                    next = position + consumed
                }
                index += 16
            }
            index = max(index, next)
            while measuresOutput && index < end {
                let (growth, consumed) = self.growth(at: index)
                total += growth
                index += consumed
            }
            return (total, flagged)
        }

        /// Writes the groups of sixteen input bytes that start from `index` up to `end`, which is at most
        /// `count - lookahead + 1`, to `output`, where the output of the byte at `index` goes at `index + delta`;
        /// moves `index` past them and updates `delta`, and adds the bits of the entries written to `entryBits`
        /// (at least those of the replacements).
        ///
        /// Each group is first copied as it is with one 16-byte store. Each flagged byte's entry is then stored over
        /// its copy with one 8-byte store, followed by the sixteen input bytes after it: the rest of the group ends
        /// up in place, moved by the growth so far. The bytes stored past the output so far are overwritten by what
        /// follows, and stay within ``slack`` bytes of the output of the bytes consumed.
        @inline(__always)
        func writeGroups(
            from index: inout Int,
            to end: Int,
            layout: Layout,
            to output: UnsafeMutableRawPointer,
            delta: inout Int,
            entryBits: inout UInt64
        ) {
            // Two copies of the loop, each with its layout's branches only. The SSE2 kernel writes every byte through
            // its table, which pays in the dense layout only: in the sparse one, the Swift engine copies whole groups.
            let sparseKernel = self.kernel?.path == .sse2 ? nil : self.kernel
            switch layout {
            case .sparse:
                self.writeGroups(
                    from: &index,
                    to: end,
                    dense: false,
                    collectsAll: false,
                    kernel: sparseKernel,
                    output,
                    &delta,
                    &entryBits
                )
            case .dense where self.checksASCII:
                self.writeGroups(
                    from: &index,
                    to: end,
                    dense: true,
                    collectsAll: true,
                    kernel: self.kernel,
                    output,
                    &delta,
                    &entryBits
                )
            case .dense:
                self.writeGroups(
                    from: &index,
                    to: end,
                    dense: true,
                    collectsAll: false,
                    kernel: self.kernel,
                    output,
                    &delta,
                    &entryBits
                )
            }
        }

        /// See above; `collectsAll` tells whether the bits of the entries of copied bytes are needed too, and `kernel`
        /// writes the groups it can first.
        @inline(__always)
        func writeGroups(
            from index: inout Int,
            to end: Int,
            dense: Bool,
            collectsAll: Bool,
            kernel: HexEscapeKernel?,
            _ output: UnsafeMutableRawPointer,
            _ delta: inout Int,
            _ entryBits: inout UInt64
        ) {
            // In locals, so that they stay in registers: the stores to the output could otherwise change them.
            let source = self.source
            let entries = self.entries
            let outputLengths = self.outputLengths
            while index < end {
                if let kernel {
                    var written = index &+ delta
                    kernel.run(source, index: &index, end: end, output: output, written: &written)
                    delta = written &- index
                    // Stopped before a group with a byte the kernel leaves to the table, which is written below.
                    guard index < end else { break }
                }
                let bytes = UnsafeRawPointer(source + index).loadUnaligned(as: SIMD16<UInt8>.self)
                if dense && !(Candidates.escapesLineSeparators && !Self.isEmpty(bytes.lanes(equalTo: 0xE2))) {
                    // All sixteen bytes through the table, without a branch (a group with a possible line separator
                    // is written flagged byte by flagged byte below).
                    var written = index &+ delta
                    for lane in 0..<16 {
                        let byte = Int(source[index &+ lane])
                        let entry = entries[byte]
                        output.storeBytes(of: entry.littleEndian, toByteOffset: written, as: UInt64.self)
                        written &+= Int(outputLengths[byte])
                        if collectsAll { entryBits |= entry }
                    }
                    index &+= 16
                    delta = written &- index
                    continue
                }
                output.storeBytes(of: bytes, toByteOffset: index &+ delta, as: SIMD16<UInt8>.self)
                var lanes = Self.mask(Candidates.flags(bytes))
                if lanes == 0 {
                    index &+= 16
                    continue
                }
                // The end of the input consumed by the group: past its last byte, or past a separator that starts
                // in its last two lanes.
                var consumed = index &+ 16
                repeat {
                    self.writeLane(
                        of: &lanes,
                        group: index,
                        end: &consumed,
                        source,
                        entries,
                        output,
                        &delta,
                        &entryBits
                    )
                } while lanes != 0
                index = consumed
            }
        }

        /// Writes the lowest flagged lane of `lanes`, a group at `index`, and removes it: its entry with one 8-byte
        /// store at its output, and the sixteen input bytes after it (or after the separator it starts) with one
        /// 16-byte store right after its replacement, which puts the rest of the group in place. Moves `end` past a
        /// separator that ends after the group.
        ///
        /// This reads at most `lookahead` bytes past the group's start (a separator in lane 15, then sixteen bytes),
        /// and stores at most ``slack`` bytes past the output of the input consumed.
        @inline(__always)
        func writeLane(
            of lanes: inout UInt32,
            group index: Int,
            end: inout Int,
            _ source: UnsafePointer<UInt8>,
            _ entries: UnsafePointer<UInt64>,
            _ output: UnsafeMutableRawPointer,
            _ delta: inout Int,
            _ entryBits: inout UInt64
        ) {
            let position = index &+ lanes.trailingZeroBitCount
            lanes &= lanes &- 1
            var entry = entries[Int(source[position])]
            var consumed = 1
            if Candidates.escapesLineSeparators && entry >> 56 == UInt64(EscapeTable.special) {
                // A separator's other bytes are never flagged; 0xE2 that does not start one is copied.
                if self.isSeparator(at: position) {
                    entry = self.separatorEntry(at: position)
                    consumed = 3
                    end = max(end, position &+ 3)
                } else {
                    entry = 0xE2 | 1 << 56
                }
            }
            output.storeBytes(of: entry.littleEndian, toByteOffset: position &+ delta, as: UInt64.self)
            delta &+= Int(entry >> 56) &- consumed
            let next = position &+ consumed
            output.storeBytes(
                of: UnsafeRawPointer(source + next).loadUnaligned(as: SIMD16<UInt8>.self),
                toByteOffset: next &+ delta,
                as: SIMD16<UInt8>.self
            )
            entryBits |= entry
        }

        /// Writes `source[index..<count]` encoded one byte at a time to `output` at `written`, which has room for
        /// `longestOutput` bytes for each; returns where the output ends.
        func writeTail(
            from index: Int,
            to output: UnsafeMutablePointer<UInt8>,
            at written: Int,
            entryBits: inout UInt64
        ) -> Int {
            var index = index
            var written = written
            var runStart = index
            while index < self.count {
                let byte = self.source[index]
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
                (output + written).update(from: self.source + runStart, count: run)
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
            (output + written).update(from: self.source + runStart, count: run)
            return written + run
        }
    }
}
