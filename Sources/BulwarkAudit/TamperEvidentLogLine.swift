/// One line of a ``TamperEvidentLog``, read strictly: accepted only if it is exactly the signed content followed by
/// the trailer, and nothing else.
///
/// A line is `CONTENT` with its closing `}` replaced by `,"hash":"H"}` or `,"hash":"H","hmac":"M"}`, where `CONTENT`
/// is the entry in the writer's one form (see ``TamperEvidentLogEntry``) and `H` and `M` are 64 lower-case hex
/// digits: the SHA-256 and the HMAC-SHA-256 of `CONTENT`. Everything the verifier checks (`seq`, `prev`, the
/// event) is decoded from `CONTENT`, the bytes that `hash` and `hmac` cover. A line with a key repeated at any
/// depth, any member after the trailer, whitespace outside strings, or content that the writer would have encoded
/// differently is refused, even when its hash and HMAC match.
struct TamperEvidentLogLine {
    /// Why a line was refused: ``TamperEvidentLogError/Code/malformed`` for what is not a record at all (a line
    /// torn by a crash), ``TamperEvidentLogError/Code/nonCanonical`` for a record in any form but the writer's.
    struct Refusal: Error {
        var code: TamperEvidentLogError.Code
        var detail: String
    }

    /// The entry, decoded from the signed content.
    var entry: TamperEvidentLogEntry
    /// The `hash` of the line (64 lower-case hex digits).
    var hash: String
    /// The `hmac` of the line, when it was written with a key.
    var hmac: String?
    /// The exact bytes that `hash` and `hmac` cover.
    var content: [UInt8]

    var sequence: Int { self.entry.sequence }
    var previousHash: String { self.entry.previousHash }

    init(_ line: [UInt8], codec: TamperEvidentLogEntry.Codec) throws {
        guard let (content, hash, hmac) = Self.split(line), let entry = codec.decodeExactly(content) else {
            throw Self.refusal(for: line)
        }
        self.entry = entry
        self.hash = hash
        self.hmac = hmac
        self.content = content
    }

    private static let hashMarker = Array(",\"hash\":\"".utf8)
    private static let hmacMarker = Array(",\"hmac\":\"".utf8)

    /// Splits a line into its signed content and the 64-digit values of its trailer, if it ends with exactly
    /// `,"hash":"H","hmac":"M"}` or `,"hash":"H"}`. The trailer is found from the end, so whatever stands before it
    /// is the content, and nothing can stand after it.
    private static func split(_ line: [UInt8]) -> ([UInt8], String, String?)? {
        guard line.last == UInt8(ascii: "}") else { return nil }
        // One `,"name":"` + 64 digits + `"`: 74 bytes.
        func field(_ marker: [UInt8], at start: Int) -> String? {
            guard start >= 1, line[start..<start + 9].elementsEqual(marker),
                line[start + 73] == UInt8(ascii: "\"")
            else { return nil }
            return Self.hex(line[(start + 9)..<(start + 73)])
        }
        let end = line.count - 1
        if end >= 148, let hmac = field(Self.hmacMarker, at: end - 74),
            let hash = field(Self.hashMarker, at: end - 148)
        {
            return (Array(line[..<(end - 148)]) + [UInt8(ascii: "}")], hash, hmac)
        }
        if end >= 74, let hash = field(Self.hashMarker, at: end - 74) {
            return (Array(line[..<(end - 74)]) + [UInt8(ascii: "}")], hash, nil)
        }
        return nil
    }

    /// `digits` as a string, if they are exactly 64 lower-case hex digits.
    private static func hex(_ digits: ArraySlice<UInt8>) -> String? {
        guard digits.count == 64 else { return nil }
        for digit in digits {
            guard
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(digit)
            else { return nil }
        }
        return String(decoding: digits, as: UTF8.self)
    }

    /// Says precisely why `line` is not in the writer's form. Only called for a line already refused, so that the
    /// decision itself rests on one simple rule (exact content, exact trailer) and this only explains it.
    private static func refusal(for line: [UInt8]) -> Refusal {
        let scanner: StrictJSONScanner
        do {
            scanner = try StrictJSONScanner(line)
        } catch let failure as StrictJSONScanner.Failure {
            return Refusal(code: failure.isSyntax ? .malformed : .nonCanonical, detail: failure.detail)
        } catch {
            return Refusal(code: .malformed, detail: "not a log record")
        }
        let members = scanner.members
        guard let hashIndex = members.firstIndex(where: { $0.key == "hash" }) else {
            return Refusal(code: .malformed, detail: "not a log record (no hash)")
        }
        let after = members[(hashIndex + 1)...]
        if after.count > 1 || after.contains(where: { $0.key != "hmac" }) {
            let keys = after.filter { $0.key != "hmac" }.map { "\"\($0.key)\"" }.joined(separator: ", ")
            return Refusal(
                code: .nonCanonical,
                detail: "\(keys) after the hash and HMAC, which must end the line: they were not signed"
            )
        }
        if let duplicate = scanner.duplicateKey {
            return Refusal(code: .nonCanonical, detail: "the key \"\(duplicate)\" appears twice")
        }
        for member in members[hashIndex...] {
            let value = line[member.value]
            if value.count != 66 || Self.hex(value.dropFirst().dropLast()) == nil {
                return Refusal(code: .nonCanonical, detail: "the \(member.key) is not 64 lower-case hex digits")
            }
        }
        return Refusal(
            code: .nonCanonical,
            detail: "the signed content is not a record as the writer writes it (its fields, key order or escapes)"
        )
    }
}
