/// The Punycode transfer encoding of RFC 3492, used for internationalized domain name labels.
///
/// ``encode(_:)`` turns one label of Unicode text into its ASCII form *without* the `xn--` prefix (the caller adds
/// it); ``decode(_:)`` is its inverse. Both work on Unicode scalars and apply no mapping or normalization of their
/// own: basic (ASCII) code points are copied as they are, including their case, exactly as in the RFC's samples.
public enum Punycode {
    private static let base: UInt32 = 36
    private static let tMin: UInt32 = 1
    private static let tMax: UInt32 = 26
    private static let skew: UInt32 = 38
    private static let damp: UInt32 = 700
    private static let initialBias: UInt32 = 72
    private static let initialN: UInt32 = 128
    private static let delimiter = UInt8(ascii: "-")

    /// Encodes `input` with Punycode (RFC 3492 section 6.3).
    ///
    /// - Returns: The encoded ASCII text without the `xn--` prefix, or `nil` if the encoding overflows (only possible
    ///   for inputs far longer than any DNS label).
    public static func encode(_ input: String) -> String? {
        let scalars = input.unicodeScalars.map(\.value)
        var output: [UInt8] = []
        output.reserveCapacity(scalars.count + 8)
        for value in scalars where value < 0x80 {
            output.append(UInt8(value))
        }
        let basicCount = UInt32(output.count)
        if basicCount > 0 {
            output.append(self.delimiter)
        }

        var n = self.initialN
        var delta: UInt32 = 0
        var bias = self.initialBias
        var handled = basicCount
        let total = UInt32(scalars.count)
        while handled < total {
            // The smallest code point not yet handled; one exists because handled < total.
            var m = UInt32.max
            for value in scalars where value >= n && value < m {
                m = value
            }
            let (step, stepOverflow) = (m - n).multipliedReportingOverflow(by: handled + 1)
            guard !stepOverflow else { return nil }
            let (advanced, addOverflow) = delta.addingReportingOverflow(step)
            guard !addOverflow else { return nil }
            delta = advanced
            n = m
            for value in scalars {
                if value < n {
                    let (next, overflow) = delta.addingReportingOverflow(1)
                    guard !overflow else { return nil }
                    delta = next
                } else if value == n {
                    var q = delta
                    var k = self.base
                    while true {
                        let t = self.threshold(k, bias: bias)
                        if q < t { break }
                        output.append(self.digit(t + (q - t) % (self.base - t)))
                        q = (q - t) / (self.base - t)
                        k += self.base
                    }
                    output.append(self.digit(q))
                    bias = self.adapt(delta: delta, count: handled + 1, first: handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            let (nextDelta, overflow) = delta.addingReportingOverflow(1)
            guard !overflow else { return nil }
            delta = nextDelta
            n += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes Punycode text without the `xn--` prefix (RFC 3492 section 6.2). Letters are read case-insensitively.
    ///
    /// - Returns: The decoded text, or `nil` if `input` is not valid Punycode (a non-ASCII character, a bad digit,
    ///   a truncated number, an overflow, or a result that is not a Unicode scalar value).
    public static func decode(_ input: String) -> String? {
        let bytes = Array(input.utf8)
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        var output: [UInt32] = []
        var position = 0
        if let lastDelimiter = bytes.lastIndex(of: self.delimiter) {
            output = bytes[..<lastDelimiter].map(UInt32.init)
            position = lastDelimiter + 1
        }

        var n = self.initialN
        var i: UInt32 = 0
        var bias = self.initialBias
        while position < bytes.count {
            let oldI = i
            var w: UInt32 = 1
            var k = self.base
            while true {
                guard position < bytes.count, let digit = self.digitValue(bytes[position]) else { return nil }
                position += 1
                let (product, productOverflow) = digit.multipliedReportingOverflow(by: w)
                guard !productOverflow else { return nil }
                let (sum, sumOverflow) = i.addingReportingOverflow(product)
                guard !sumOverflow else { return nil }
                i = sum
                let t = self.threshold(k, bias: bias)
                if digit < t { break }
                let (weight, weightOverflow) = w.multipliedReportingOverflow(by: self.base - t)
                guard !weightOverflow else { return nil }
                w = weight
                k += self.base
            }
            let length = UInt32(output.count) + 1
            bias = self.adapt(delta: i - oldI, count: length, first: oldI == 0)
            let (nextN, nOverflow) = n.addingReportingOverflow(i / length)
            guard !nOverflow else { return nil }
            n = nextN
            i %= length
            guard n >= 0x80, Unicode.Scalar(n) != nil else { return nil }
            output.insert(n, at: Int(i))
            i += 1
        }

        var result = String.UnicodeScalarView()
        for value in output {
            guard let scalar = Unicode.Scalar(value) else { return nil }
            result.append(scalar)
        }
        return String(result)
    }

    private static func threshold(_ k: UInt32, bias: UInt32) -> UInt32 {
        if k <= bias { return self.tMin }
        if k >= bias + self.tMax { return self.tMax }
        return k - bias
    }

    private static func adapt(delta: UInt32, count: UInt32, first: Bool) -> UInt32 {
        var delta = first ? delta / self.damp : delta / 2
        delta += delta / count
        var k: UInt32 = 0
        while delta > ((self.base - self.tMin) * self.tMax) / 2 {
            delta /= self.base - self.tMin
            k += self.base
        }
        return k + (((self.base - self.tMin + 1) * delta) / (delta + self.skew))
    }

    /// The lower-case ASCII character for a digit value 0...35.
    private static func digit(_ value: UInt32) -> UInt8 {
        value < 26 ? UInt8(ascii: "a") + UInt8(value) : UInt8(ascii: "0") + UInt8(value - 26)
    }

    private static func digitValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(byte - UInt8(ascii: "a"))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(byte - UInt8(ascii: "A"))
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0")) + 26
        default: return nil
        }
    }
}
