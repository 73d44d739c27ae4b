/// The bytes an output encoder may replace, tested sixteen at a time: ``EscapeTable`` copies a group of sixteen
/// bytes none of which is flagged without looking any of them up.
///
/// A conforming type flags bytes with the lane-wise helpers below (plain SIMD arithmetic, which compiles to a few
/// vector instructions per group on every target; SIMD comparisons do not). It must flag every byte its table
/// replaces, which ``EscapeTable`` checks when it is built; flagging a byte that is copied is allowed and costs
/// only speed.
protocol EscapeCandidates {
    /// The high bit of each lane of the result is set if the byte in that lane of `bytes` may be replaced; the other
    /// bits are ignored.
    static func flags(_ bytes: SIMD16<UInt8>) -> SIMD16<UInt8>

    /// Whether U+2028 and U+2029 are written as `\u2028` and `\u2029` (JavaScript string literals); their lead byte
    /// 0xE2 must then be flagged, and must have no replacement of its own.
    static var escapesLineSeparators: Bool { get }
}

extension EscapeCandidates {
    static var escapesLineSeparators: Bool { false }
}

extension SIMD16 where Scalar == UInt8 {
    /// The high bit set in exactly the lanes equal to `value`.
    @inline(__always)
    func lanes(equalTo value: UInt8) -> Self {
        let difference = self ^ Self(repeating: value)
        // Only 0 - 1 has its high bit set where the byte itself has not.
        return (difference &- 1) & ~difference
    }

    /// The high bit set in exactly the lanes below `bound`, which is at most 0x80.
    @inline(__always)
    func lanes(below bound: UInt8) -> Self {
        // A byte below 0x80 minus the bound wraps around to 0x80 or more exactly when it is below the bound.
        (self &- Self(repeating: bound)) & ~self
    }

    /// The high bit set in exactly the lanes in `range`, which holds at most 0x80 values.
    @inline(__always)
    func lanes(in range: ClosedRange<UInt8>) -> Self {
        (self &- Self(repeating: range.lowerBound)).lanes(below: range.upperBound - range.lowerBound + 1)
    }

    /// Like ``lanes(equalTo:)`` for an ASCII `value`, but right only in the lanes that hold ASCII: the result must
    /// be masked with `& ~self` (which several such tests can share, saving an instruction each).
    @inline(__always)
    func asciiLanes(equalTo value: UInt8) -> Self {
        // For two bytes below 0x80, their difference is below 0x80 too, and 0 - 1 is the only one that wraps.
        (self ^ Self(repeating: value)) &- 1
    }

    /// Like ``lanes(below:)``, but right only in the lanes that hold ASCII: the result must be masked with
    /// `& ~self`.
    @inline(__always)
    func asciiLanes(below bound: UInt8) -> Self {
        self &- Self(repeating: bound)
    }
}
