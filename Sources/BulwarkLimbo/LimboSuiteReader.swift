import Foundation

/// Reads the suite's test cases, decoding the 41 MB `limbo.json` on every core.
///
/// `JSONDecoder` takes about half a second for the whole file, on one core, before any case can run. The reader
/// first finds where each element of the top-level `testcases` array starts and ends (one pass over the bytes,
/// skipping strings), then decodes runs of elements concurrently and puts them back in order. A file it cannot
/// split that way is decoded whole, as before, so malformed input fails the same way.
enum LimboSuiteReader {
    /// Elements decoded per task.
    static let chunkSize = 256

    static func testCases(from data: Data, concurrency: Int) async throws -> [LimboTestCase] {
        guard let ranges = data.withUnsafeBytes({ Self.testCaseRanges(in: $0) }), !ranges.isEmpty else {
            return try JSONDecoder().decode(LimboFile.self, from: data).testcases
        }
        let chunks = stride(from: 0, to: ranges.count, by: Self.chunkSize).map {
            ranges[$0..<min($0 + Self.chunkSize, ranges.count)]
        }
        var decoded = [[LimboTestCase]?](repeating: nil, count: chunks.count)
        try await withThrowingTaskGroup(of: (Int, [LimboTestCase]).self) { group in
            var next = 0
            func addTask() {
                let index = next
                let first = chunks[index].first!.lowerBound
                let last = chunks[index].last!.upperBound
                group.addTask {
                    // The elements with the separators between them, as one JSON array.
                    var array = Data(capacity: last - first + 2)
                    array.append(UInt8(ascii: "["))
                    array.append(data[data.startIndex + first..<data.startIndex + last])
                    array.append(UInt8(ascii: "]"))
                    return (index, try JSONDecoder().decode([LimboTestCase].self, from: array))
                }
                next += 1
            }
            while next < min(max(1, concurrency), chunks.count) { addTask() }
            while let (index, cases) = try await group.next() {
                decoded[index] = cases
                if next < chunks.count { addTask() }
            }
        }
        return decoded.flatMap { $0! }
    }

    /// The byte ranges of the elements of the `testcases` array of the top-level object, or nil when the bytes are
    /// not shaped that way (or the object has no `version`, which the suite format requires).
    static func testCaseRanges(in bytes: UnsafeRawBufferPointer) -> [Range<Int>]? {
        var scanner = Scanner(bytes: bytes)
        var ranges: [Range<Int>]?
        var sawVersion = false
        guard scanner.consume(UInt8(ascii: "{")) else { return nil }
        if scanner.consume(UInt8(ascii: "}")) { return nil }
        repeat {
            guard let key = scanner.string(), scanner.consume(UInt8(ascii: ":")) else { return nil }
            if key.elementsEqual("testcases".utf8) {
                guard ranges == nil, let elements = scanner.arrayElements() else { return nil }
                ranges = elements
            } else {
                if key.elementsEqual("version".utf8) { sawVersion = true }
                guard scanner.skipValue() else { return nil }
            }
        } while scanner.consume(UInt8(ascii: ","))
        guard scanner.consume(UInt8(ascii: "}")), scanner.atEnd, sawVersion else { return nil }
        return ranges
    }

    /// A forward-only walk over JSON bytes that finds value boundaries without decoding values.
    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        var atEnd: Bool {
            mutating get {
                self.skipWhitespace()
                return self.index == self.bytes.count
            }
        }

        mutating func skipWhitespace() {
            while self.index < self.bytes.count {
                switch self.bytes[self.index] {
                case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
                default: return
                }
            }
        }

        /// Skips whitespace, then `byte` if it comes next.
        mutating func consume(_ byte: UInt8) -> Bool {
            self.skipWhitespace()
            guard self.index < self.bytes.count, self.bytes[self.index] == byte else { return false }
            self.index += 1
            return true
        }

        /// The raw bytes between the quotes of the string that comes next (escapes left as they are).
        mutating func string() -> UnsafeRawBufferPointer? {
            guard self.consume(UInt8(ascii: "\"")) else { return nil }
            let start = self.index
            while self.index < self.bytes.count {
                switch self.bytes[self.index] {
                case UInt8(ascii: "\\"): self.index += 2
                case UInt8(ascii: "\""):
                    self.index += 1
                    return UnsafeRawBufferPointer(rebasing: self.bytes[start..<(self.index - 1)])
                default: self.index += 1
                }
            }
            return nil
        }

        /// The ranges of the elements of the array that comes next.
        mutating func arrayElements() -> [Range<Int>]? {
            guard self.consume(UInt8(ascii: "[")) else { return nil }
            var ranges: [Range<Int>] = []
            if self.consume(UInt8(ascii: "]")) { return ranges }
            repeat {
                self.skipWhitespace()
                let start = self.index
                guard self.skipValue() else { return nil }
                ranges.append(start..<self.index)
            } while self.consume(UInt8(ascii: ","))
            return self.consume(UInt8(ascii: "]")) ? ranges : nil
        }

        /// Skips the value that comes next: a string, an object or array (with everything nested in it), or a
        /// number or literal.
        mutating func skipValue() -> Bool {
            self.skipWhitespace()
            guard self.index < self.bytes.count else { return false }
            switch self.bytes[self.index] {
            case UInt8(ascii: "\""):
                return self.string() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while self.index < self.bytes.count {
                    switch self.bytes[self.index] {
                    case UInt8(ascii: "\""):
                        guard self.string() != nil else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            self.index += 1
                            return true
                        }
                    default:
                        break
                    }
                    self.index += 1
                }
                return false
            default:
                let start = self.index
                while self.index < self.bytes.count {
                    switch self.bytes[self.index] {
                    case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D:
                        return self.index > start
                    default:
                        self.index += 1
                    }
                }
                return self.index > start
            }
        }
    }
}
