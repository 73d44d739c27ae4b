/// A strict reader of one JSON object as the tamper-evident log writes it (RFC 8259 without insignificant
/// whitespace), that finds where each top-level member is and whether any object repeats a key.
///
/// Foundation's JSON parsers keep the last of two equal keys and skip whitespace, so text that parses can still
/// say something other than the bytes that were signed. This scanner exists so that the log's line parser can see
/// the structure of a line exactly: the members in order, the byte range of each, and the first repeated key at
/// any depth. It decodes nothing into values and is not a general JSON parser.
struct StrictJSONScanner {
    /// One member of the top-level object.
    struct Member {
        /// The key, unescaped.
        var key: String
        /// The offset of the key's opening quote.
        var keyStart: Int
        /// The byte range of the value.
        var value: Range<Int>
    }

    /// Why the bytes are not one JSON object.
    struct Failure: Error {
        /// The input is not JSON, or not an object (a line torn by a crash lands here).
        var isSyntax: Bool
        var detail: String
    }

    /// The top-level members, in order.
    private(set) var members: [Member] = []
    /// The first key repeated within one object, at any depth, as a decoder would compare it.
    private(set) var duplicateKey: String?

    private let bytes: [UInt8]
    private var offset = 0
    private static let maximumDepth = 16

    /// Scans `bytes`, which must be exactly one JSON object with nothing before or after it.
    init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        guard bytes.first == UInt8(ascii: "{") else {
            if let first = bytes.first, Self.isWhitespace(first) {
                throw Failure(isSyntax: false, detail: "whitespace before the record")
            }
            throw Failure(isSyntax: true, detail: "not a JSON object")
        }
        try self.scanObject(depth: 0)
        if self.offset != bytes.count {
            throw Failure(isSyntax: false, detail: "\(bytes.count - self.offset) bytes after the end of the record")
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func peek() throws -> UInt8 {
        guard self.offset < self.bytes.count else { throw Failure(isSyntax: true, detail: "the record ends early") }
        let byte = self.bytes[self.offset]
        if Self.isWhitespace(byte) {
            throw Failure(isSyntax: false, detail: "whitespace outside a string at byte \(self.offset + 1)")
        }
        return byte
    }

    private mutating func expect(_ character: Unicode.Scalar) throws {
        guard try self.peek() == UInt8(ascii: character) else {
            throw Failure(isSyntax: true, detail: "expected \"\(character)\" at byte \(self.offset + 1)")
        }
        self.offset += 1
    }

    private mutating func scanValue(depth: Int) throws {
        switch try self.peek() {
        case UInt8(ascii: "{"): try self.scanObject(depth: depth + 1)
        case UInt8(ascii: "["): try self.scanArray(depth: depth + 1)
        case UInt8(ascii: "\""): _ = try self.scanString()
        case UInt8(ascii: "t"): try self.scanLiteral("true")
        case UInt8(ascii: "f"): try self.scanLiteral("false")
        case UInt8(ascii: "n"): try self.scanLiteral("null")
        default: try self.scanNumber()
        }
    }

    private mutating func scanObject(depth: Int) throws {
        guard depth <= Self.maximumDepth else { throw Failure(isSyntax: true, detail: "nested too deeply") }
        try self.expect("{")
        var keys = Set<String>()
        if try self.peek() == UInt8(ascii: "}") {
            self.offset += 1
            return
        }
        while true {
            let keyStart = self.offset
            guard try self.peek() == UInt8(ascii: "\"") else {
                throw Failure(isSyntax: true, detail: "expected a key at byte \(self.offset + 1)")
            }
            let key = try self.scanString()
            if !keys.insert(key).inserted, self.duplicateKey == nil { self.duplicateKey = key }
            try self.expect(":")
            let valueStart = self.offset
            try self.scanValue(depth: depth)
            if depth == 0 { self.members.append(Member(key: key, keyStart: keyStart, value: valueStart..<self.offset)) }
            if try self.peek() == UInt8(ascii: ",") {
                self.offset += 1
                continue
            }
            try self.expect("}")
            return
        }
    }

    private mutating func scanArray(depth: Int) throws {
        guard depth <= Self.maximumDepth else { throw Failure(isSyntax: true, detail: "nested too deeply") }
        try self.expect("[")
        if try self.peek() == UInt8(ascii: "]") {
            self.offset += 1
            return
        }
        while true {
            try self.scanValue(depth: depth)
            if try self.peek() == UInt8(ascii: ",") {
                self.offset += 1
                continue
            }
            try self.expect("]")
            return
        }
    }

    private mutating func scanLiteral(_ literal: String) throws {
        let expected = Array(literal.utf8)
        guard self.bytes.count - self.offset >= expected.count,
            Array(self.bytes[self.offset..<self.offset + expected.count]) == expected
        else {
            throw Failure(isSyntax: true, detail: "unexpected text at byte \(self.offset + 1)")
        }
        self.offset += expected.count
    }

    private mutating func scanDigits() -> Int {
        let start = self.offset
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        while self.offset < self.bytes.count, digits.contains(self.bytes[self.offset]) {
            self.offset += 1
        }
        return self.offset - start
    }

    private mutating func scanNumber() throws {
        let start = self.offset
        if self.offset < self.bytes.count, self.bytes[self.offset] == UInt8(ascii: "-") { self.offset += 1 }
        let integerStart = self.offset
        let integerDigits = self.scanDigits()
        guard integerDigits > 0, integerDigits == 1 || self.bytes[integerStart] != UInt8(ascii: "0") else {
            throw Failure(isSyntax: true, detail: "not a JSON value at byte \(start + 1)")
        }
        if self.offset < self.bytes.count, self.bytes[self.offset] == UInt8(ascii: ".") {
            self.offset += 1
            guard self.scanDigits() > 0 else {
                throw Failure(isSyntax: true, detail: "a bad number at byte \(start + 1)")
            }
        }
        if self.offset < self.bytes.count, self.bytes[self.offset] | 0x20 == UInt8(ascii: "e") {
            self.offset += 1
            if self.offset < self.bytes.count,
                self.bytes[self.offset] == UInt8(ascii: "+") || self.bytes[self.offset] == UInt8(ascii: "-")
            {
                self.offset += 1
            }
            guard self.scanDigits() > 0 else {
                throw Failure(isSyntax: true, detail: "a bad number at byte \(start + 1)")
            }
        }
    }

    /// Scans a string and returns it unescaped (invalid UTF-8 and unpaired surrogates are refused).
    private mutating func scanString() throws -> String {
        try self.expect("\"")
        var scalars = String.UnicodeScalarView()
        var run: [UInt8] = []
        func flush() throws {
            guard !run.isEmpty else { return }
            let text = String(decoding: run, as: UTF8.self)
            guard text.utf8.elementsEqual(run) else {
                throw Failure(isSyntax: true, detail: "a string is not valid UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
            run.removeAll(keepingCapacity: true)
        }
        while true {
            guard self.offset < self.bytes.count else {
                throw Failure(isSyntax: true, detail: "a string is not closed")
            }
            let byte = self.bytes[self.offset]
            self.offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                try flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush()
                scalars.append(try self.scanEscape())
            case 0x00..<0x20:
                throw Failure(isSyntax: true, detail: "a control character inside a string at byte \(self.offset)")
            default:
                run.append(byte)
            }
        }
    }

    private mutating func scanEscape() throws -> Unicode.Scalar {
        guard self.offset < self.bytes.count else { throw Failure(isSyntax: true, detail: "a string is not closed") }
        let byte = self.bytes[self.offset]
        self.offset += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{8}"
        case UInt8(ascii: "f"): return "\u{c}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try self.scanHexUnit()
            if (0xD800..<0xDC00).contains(unit) {
                guard self.bytes.count - self.offset >= 6, self.bytes[self.offset] == UInt8(ascii: "\\"),
                    self.bytes[self.offset + 1] == UInt8(ascii: "u")
                else { throw Failure(isSyntax: true, detail: "an unpaired surrogate in a string") }
                self.offset += 2
                let low = try self.scanHexUnit()
                guard (0xDC00..<0xE000).contains(low) else {
                    throw Failure(isSyntax: true, detail: "an unpaired surrogate in a string")
                }
                return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(unit) else {
                throw Failure(isSyntax: true, detail: "an unpaired surrogate in a string")
            }
            return scalar
        default:
            throw Failure(isSyntax: true, detail: "an unknown escape in a string at byte \(self.offset)")
        }
    }

    private mutating func scanHexUnit() throws -> UInt32 {
        guard self.bytes.count - self.offset >= 4 else { throw Failure(isSyntax: true, detail: "a bad \\u escape") }
        var value: UInt32 = 0
        for byte in self.bytes[self.offset..<self.offset + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Failure(isSyntax: true, detail: "a bad \\u escape")
            }
            value = value << 4 | UInt32(digit)
        }
        self.offset += 4
        return value
    }
}
