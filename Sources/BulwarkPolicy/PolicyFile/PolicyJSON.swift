/// A JSON value as Bulwark's policy formats read it: objects keep their members in the order written and may not
/// repeat a key, numbers keep their text (so an integer is told from a fraction and from a Boolean), and every
/// value knows the line it starts on, so that a finding can point at the line.
///
/// Foundation's JSON parsers keep the last of two equal keys: a policy in which `"pins"` appears twice would say
/// two things at once. This reader refuses that, nesting deeper than 32 levels, and anything after the value.
package struct PolicyJSON: Sendable, Hashable {
    /// What a value is.
    package enum Value: Sendable, Hashable {
        /// An object, its members in the order written.
        case object([Member])
        /// An array.
        case array([PolicyJSON])
        /// A string, unescaped.
        case string(String)
        /// A number, as written.
        case number(String)
        /// `true` or `false`.
        case bool(Bool)
        /// `null`.
        case null
    }

    /// One member of an object.
    package struct Member: Sendable, Hashable {
        /// The key, unescaped.
        package var key: String
        /// The value.
        package var value: PolicyJSON

        /// A member `key: value`.
        package init(_ key: String, _ value: PolicyJSON) {
            self.key = key
            self.value = value
        }
    }

    /// Why a text is not JSON, with the line and column where reading stopped.
    package struct SyntaxError: Error, Sendable, Hashable {
        /// The line (from 1) where reading stopped.
        package var line: Int
        /// The column (from 1, in bytes) where reading stopped.
        package var column: Int
        /// What is wrong, in words.
        package var detail: String
    }

    /// The value.
    package var value: Value
    /// The line (from 1) the value starts on; 0 for values made in code.
    package var line: Int

    /// A value made in code (for the encoders).
    package init(_ value: Value, line: Int = 0) {
        self.value = value
        self.line = line
    }

    /// The value of member `key` of an object, or nil.
    package subscript(key: String) -> PolicyJSON? {
        guard case .object(let members) = self.value else { return nil }
        return members.first(where: { $0.key == key })?.value
    }

    /// Reads `bytes`, which must hold exactly one JSON value (whitespace around it allowed), in UTF-8.
    package static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> PolicyJSON {
        var reader = Reader(bytes: bytes)
        reader.skipWhitespace()
        let value = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        if reader.offset != bytes.count {
            throw reader.failure("text after the end of the JSON value")
        }
        return value
    }

    /// Pretty-printed JSON text: two-space indentation, members in their order, one value per line in arrays of
    /// objects, short arrays of scalars on one line; ends with a newline.
    package func formatted() -> String {
        var output = ""
        Self.write(self, indent: 0, to: &output)
        output += "\n"
        return output
    }

    private static func write(_ json: PolicyJSON, indent: Int, to output: inout String) {
        let padding = String(repeating: " ", count: indent + 2)
        switch json.value {
        case .object(let members):
            guard !members.isEmpty else {
                output += "{}"
                return
            }
            output += "{\n"
            for (index, member) in members.enumerated() {
                output += padding + Self.quoted(member.key) + ": "
                Self.write(member.value, indent: indent + 2, to: &output)
                output += index == members.count - 1 ? "\n" : ",\n"
            }
            output += String(repeating: " ", count: indent) + "}"
        case .array(let items):
            guard !items.isEmpty else {
                output += "[]"
                return
            }
            let scalars = items.allSatisfy {
                switch $0.value {
                case .object, .array: return false
                default: return true
                }
            }
            if scalars {
                var line = "["
                for (index, item) in items.enumerated() {
                    if index > 0 { line += ", " }
                    Self.write(item, indent: indent, to: &line)
                }
                line += "]"
                if line.count + indent < 100 && !line.contains("\n") {
                    output += line
                    return
                }
            }
            output += "[\n"
            for (index, item) in items.enumerated() {
                output += padding
                Self.write(item, indent: indent + 2, to: &output)
                output += index == items.count - 1 ? "\n" : ",\n"
            }
            output += String(repeating: " ", count: indent) + "]"
        case .string(let text):
            output += Self.quoted(text)
        case .number(let text):
            output += text
        case .bool(let flag):
            output += flag ? "true" : "false"
        case .null:
            output += "null"
        }
    }

    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped, the rest as it is.
    package static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || (0x2028...0x2029).contains(scalar.value) {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}

extension PolicyJSON {
    /// A JSON reader over bytes that tracks the line.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        var line = 1
        var lineStart = 0
        static let maximumDepth = 32

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        func failure(_ detail: String) -> SyntaxError {
            SyntaxError(line: self.line, column: self.offset - self.lineStart + 1, detail: detail)
        }

        mutating func skipWhitespace() {
            while self.offset < self.bytes.count {
                switch self.bytes[self.offset] {
                case 0x20, 0x09, 0x0D:
                    self.offset += 1
                case 0x0A:
                    self.offset += 1
                    self.line += 1
                    self.lineStart = self.offset
                default:
                    return
                }
            }
        }

        func peek() throws(SyntaxError) -> UInt8 {
            guard self.offset < self.bytes.count else { throw self.failure("the text ends in the middle of a value") }
            return self.bytes[self.offset]
        }

        mutating func expect(_ literal: String) throws(SyntaxError) {
            for byte in literal.utf8 {
                guard self.offset < self.bytes.count, self.bytes[self.offset] == byte else {
                    throw self.failure("expected \"\(literal)\"")
                }
                self.offset += 1
            }
        }

        mutating func readValue(depth: Int) throws(SyntaxError) -> PolicyJSON {
            guard depth <= Self.maximumDepth else {
                throw self.failure("values are nested more than \(Self.maximumDepth) levels deep")
            }
            let line = self.line
            switch try self.peek() {
            case UInt8(ascii: "{"):
                return PolicyJSON(.object(try self.readObject(depth: depth)), line: line)
            case UInt8(ascii: "["):
                return PolicyJSON(.array(try self.readArray(depth: depth)), line: line)
            case UInt8(ascii: "\""):
                return PolicyJSON(.string(try self.readString()), line: line)
            case UInt8(ascii: "t"):
                try self.expect("true")
                return PolicyJSON(.bool(true), line: line)
            case UInt8(ascii: "f"):
                try self.expect("false")
                return PolicyJSON(.bool(false), line: line)
            case UInt8(ascii: "n"):
                try self.expect("null")
                return PolicyJSON(.null, line: line)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return PolicyJSON(.number(try self.readNumber()), line: line)
            default:
                throw self.failure("expected a JSON value")
            }
        }

        mutating func readObject(depth: Int) throws(SyntaxError) -> [Member] {
            self.offset += 1
            var members: [Member] = []
            var keys = Set<String>()
            self.skipWhitespace()
            if try self.peek() == UInt8(ascii: "}") {
                self.offset += 1
                return members
            }
            while true {
                self.skipWhitespace()
                guard try self.peek() == UInt8(ascii: "\"") else { throw self.failure("expected a member name") }
                let key = try self.readString()
                guard keys.insert(key).inserted else {
                    throw self.failure("the member \(PolicyJSON.quoted(key)) appears twice in one object")
                }
                self.skipWhitespace()
                guard try self.peek() == UInt8(ascii: ":") else { throw self.failure("expected \":\"") }
                self.offset += 1
                self.skipWhitespace()
                members.append(Member(key, try self.readValue(depth: depth + 1)))
                self.skipWhitespace()
                switch try self.peek() {
                case UInt8(ascii: ","):
                    self.offset += 1
                case UInt8(ascii: "}"):
                    self.offset += 1
                    return members
                default:
                    throw self.failure("expected \",\" or \"}\"")
                }
            }
        }

        mutating func readArray(depth: Int) throws(SyntaxError) -> [PolicyJSON] {
            self.offset += 1
            var items: [PolicyJSON] = []
            self.skipWhitespace()
            if try self.peek() == UInt8(ascii: "]") {
                self.offset += 1
                return items
            }
            while true {
                self.skipWhitespace()
                items.append(try self.readValue(depth: depth + 1))
                self.skipWhitespace()
                switch try self.peek() {
                case UInt8(ascii: ","):
                    self.offset += 1
                case UInt8(ascii: "]"):
                    self.offset += 1
                    return items
                default:
                    throw self.failure("expected \",\" or \"]\"")
                }
            }
        }

        mutating func readNumber() throws(SyntaxError) -> String {
            let start = self.offset
            func digits(_ reader: inout Reader) -> Int {
                var count = 0
                while reader.offset < reader.bytes.count,
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(reader.bytes[reader.offset])
                {
                    reader.offset += 1
                    count += 1
                }
                return count
            }
            if self.bytes[self.offset] == UInt8(ascii: "-") { self.offset += 1 }
            let integerStart = self.offset
            guard digits(&self) > 0 else { throw self.failure("a number needs digits") }
            if self.bytes[integerStart] == UInt8(ascii: "0") && self.offset - integerStart > 1 {
                throw self.failure("a number may not start with 0")
            }
            if self.offset < self.bytes.count && self.bytes[self.offset] == UInt8(ascii: ".") {
                self.offset += 1
                guard digits(&self) > 0 else { throw self.failure("a fraction needs digits") }
            }
            if self.offset < self.bytes.count
                && (self.bytes[self.offset] == UInt8(ascii: "e") || self.bytes[self.offset] == UInt8(ascii: "E"))
            {
                self.offset += 1
                if self.offset < self.bytes.count
                    && (self.bytes[self.offset] == UInt8(ascii: "+") || self.bytes[self.offset] == UInt8(ascii: "-"))
                {
                    self.offset += 1
                }
                guard digits(&self) > 0 else { throw self.failure("an exponent needs digits") }
            }
            return String(decoding: self.bytes[start..<self.offset], as: UTF8.self)
        }

        mutating func readString() throws(SyntaxError) -> String {
            self.offset += 1
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush(_ raw: inout [UInt8], into scalars: inout String.UnicodeScalarView) -> Bool {
                guard !raw.isEmpty else { return true }
                guard let text = String(validating: raw, as: UTF8.self) else { return false }
                scalars.append(contentsOf: text.unicodeScalars)
                raw.removeAll(keepingCapacity: true)
                return true
            }
            while true {
                guard self.offset < self.bytes.count else { throw self.failure("a string is not closed") }
                let byte = self.bytes[self.offset]
                switch byte {
                case UInt8(ascii: "\""):
                    guard flush(&raw, into: &scalars) else { throw self.failure("a string is not valid UTF-8") }
                    self.offset += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    guard flush(&raw, into: &scalars) else { throw self.failure("a string is not valid UTF-8") }
                    self.offset += 1
                    guard self.offset < self.bytes.count else { throw self.failure("a string is not closed") }
                    let escape = self.bytes[self.offset]
                    self.offset += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        let unit = try self.readHexUnit()
                        if (0xD800...0xDBFF).contains(unit) {
                            guard self.offset + 1 < self.bytes.count, self.bytes[self.offset] == UInt8(ascii: "\\"),
                                self.bytes[self.offset + 1] == UInt8(ascii: "u")
                            else { throw self.failure("a high surrogate escape without its low surrogate") }
                            self.offset += 2
                            let low = try self.readHexUnit()
                            guard (0xDC00...0xDFFF).contains(low) else {
                                throw self.failure("a high surrogate escape without its low surrogate")
                            }
                            let value = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                            scalars.append(Unicode.Scalar(value)!)
                        } else if let scalar = Unicode.Scalar(unit) {
                            scalars.append(scalar)
                        } else {
                            throw self.failure("a lone low surrogate escape")
                        }
                    default:
                        throw self.failure("an unknown escape in a string")
                    }
                default:
                    guard byte >= 0x20 else { throw self.failure("a control character inside a string") }
                    raw.append(byte)
                    self.offset += 1
                }
            }
        }

        mutating func readHexUnit() throws(SyntaxError) -> UInt32 {
            guard self.offset + 4 <= self.bytes.count else { throw self.failure("a \\u escape needs 4 hex digits") }
            var value: UInt32 = 0
            for byte in self.bytes[self.offset..<self.offset + 4] {
                guard let digit = UInt32(String(UnicodeScalar(byte)), radix: 16) else {
                    throw self.failure("a \\u escape needs 4 hex digits")
                }
                value = value * 16 + digit
            }
            self.offset += 4
            return value
        }
    }
}
