import BulwarkPolicy
import Crypto
import Foundation
import Testing

@testable import BulwarkAudit

/// The strict line format of the tamper-evident log: a line is accepted only if it is exactly the signed content plus
/// the `hash` / `hmac` trailer, and every verified field comes from the signed bytes (issue 16, defect 1).
@Suite("Tamper-evident log: strict line format")
struct TamperEvidentLogFormatTests {
    let key = try! TamperEvidentLog.Key(bytes: Array("0123456789abcdef0123456789abcdef".utf8))

    /// The signed content of a line as the writer made it: everything before the trailer, closed with `}`.
    static func content(of line: String) throws -> String {
        let marker = try #require(line.range(of: ",\"hash\":\"", options: .backwards))
        return String(line[..<marker.lowerBound]) + "}"
    }

    /// `content` with a correct hash and, given a key, a correct HMAC: what a key holder could write.
    static func sign(_ content: String, key: TamperEvidentLog.Key?) -> String {
        let bytes = Array(content.utf8)
        var line = String(content.dropLast()) + ",\"hash\":\"\(TamperEvidentLog.hex(SHA256.hash(data: bytes)))\""
        if let key { line += ",\"hmac\":\"\(TamperEvidentLog.hex(key.authenticationCode(for: bytes)))\"" }
        return line + "}"
    }

    static func hash(of line: String) throws -> String {
        let marker = try #require(line.range(of: ",\"hash\":\"", options: .backwards))
        return String(line[marker.upperBound...].prefix(64))
    }

    /// The forgery from the review: record 2 deleted, and after the trailer of every later record the keys that
    /// make it look in place, `"seq"` one lower and `"prev"` the hash of the line now before it. Nothing signed
    /// changes, so every `hash` and `hmac` still matches its content.
    static func forgeDeletionOfRecord2(_ lines: [String]) throws -> [String] {
        var forged = lines
        forged.remove(at: 1)
        for index in 1..<forged.count {
            let previousHash = try Self.hash(of: forged[index - 1])
            forged[index] = String(forged[index].dropLast()) + ",\"seq\":\(index + 1),\"prev\":\"\(previousHash)\"}"
        }
        return forged
    }

    @Test func deletedRecordHiddenByDuplicateKeysAfterTheTrailerIsRefused() throws {
        let path = try TamperEvidentLogTests.makeLog(records: 6, key: key)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let forged = try Self.forgeDeletionOfRecord2(try TamperEvidentLogTests.lines(path))
        #expect(forged.count == 5)
        try TamperEvidentLogTests.write(forged, to: path)
        let error = try #require(TamperEvidentLogTests.failure(path, key: key), "the forged log verified")
        #expect(error.line == 2)
        #expect(error.code == .nonCanonical)
        #expect(error.description.hasPrefix("line 2: non_canonical_record: "))
        #expect(error.detail.contains("\"seq\", \"prev\" after the hash and HMAC"), "\(error)")
        // Without the key the hash chain alone must refuse it too.
        #expect(TamperEvidentLogTests.failure(path)?.line == 2)
    }

    /// Variations of the last line of a log (so that no later `prev` gives them away), each re-signed with a correct
    /// hash and HMAC where the trailer is left as it was, so that only the format can refuse them.
    enum Variation: String, CaseIterable, CustomTestStringConvertible {
        case duplicateKeyInContent, duplicateKeyInDetails, extraKeyInContent, spaceAfterColon, newlineInside
        case reorderedKeys, escapedLetter, floatSequence, leadingSpace
        case textAfterTrailer, spaceAfterTrailer, keyAfterTrailer, secondTrailer, upperCaseHash

        var testDescription: String { self.rawValue }

        /// What the error's detail must say, where it can be precise.
        var explanation: String? {
            switch self {
            case .duplicateKeyInContent: "the key \"seq\" appears twice"
            case .duplicateKeyInDetails: "the key \"to\" appears twice"
            case .keyAfterTrailer: "\"note\" after the hash and HMAC"
            case .spaceAfterColon, .newlineInside: "whitespace outside a string"
            case .leadingSpace: "whitespace before the record"
            case .textAfterTrailer, .spaceAfterTrailer: "after the end of the record"
            case .upperCaseHash: "the hash is not 64 lower-case hex digits"
            default: nil
            }
        }

        func apply(to line: String, key: TamperEvidentLog.Key) throws -> String {
            let content = try TamperEvidentLogFormatTests.content(of: line)
            let body = String(content.dropLast())  // without the closing brace
            let sign = { (content: String) in TamperEvidentLogFormatTests.sign(content, key: key) }
            switch self {
            case .duplicateKeyInContent:
                return sign(body + ",\"seq\":5}")
            case .duplicateKeyInDetails:
                return sign(content.replacingOccurrences(of: "\"details\":{", with: "\"details\":{\"to\":\"x\","))
            case .extraKeyInContent:
                return sign(body + ",\"zzz\":\"x\"}")
            case .spaceAfterColon:
                return sign(content.replacingOccurrences(of: "\"kind\":", with: "\"kind\": "))
            case .newlineInside:
                return sign(content.replacingOccurrences(of: "\"kind\":", with: "\"kind\":\r"))
            case .reorderedKeys:
                let object = try #require(try JSONSerialization.jsonObject(with: Data(content.utf8)) as? [String: Any])
                let reordered = try JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes])
                let text = String(decoding: reordered, as: UTF8.self)
                #expect(text != content, "JSONSerialization kept the order; the variation tests nothing")
                return sign(text)
            case .escapedLetter:
                return sign(content.replacingOccurrences(of: "event number", with: "ev\\u0065nt number"))
            case .floatSequence:
                return sign(content.replacingOccurrences(of: "\"seq\":5,", with: "\"seq\":5.0,"))
            case .leadingSpace:
                return " " + line
            case .textAfterTrailer:
                return line + "x"
            case .spaceAfterTrailer:
                return line + " "
            case .keyAfterTrailer:
                return String(line.dropLast()) + ",\"note\":\"added later\"}"
            case .secondTrailer:
                let trailer = String(line[line.range(of: ",\"hash\":\"", options: .backwards)!.lowerBound...])
                return String(line.dropLast()) + trailer
            case .upperCaseHash:
                let hash = try TamperEvidentLogFormatTests.hash(of: line)
                return line.replacingOccurrences(of: hash, with: hash.uppercased())
            }
        }
    }

    @Test(arguments: Variation.allCases)
    func lineThatIsNotExactlyTheWritersFormIsRefused(_ variation: Variation) throws {
        let path = try TamperEvidentLogTests.makeLog(records: 5, key: key)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var lines = try TamperEvidentLogTests.lines(path)
        let original = lines[4]
        lines[4] = try variation.apply(to: lines[4], key: key)
        #expect(lines[4] != original)
        if variation != .upperCaseHash, variation.rawValue.hasSuffix("Trailer") == false, variation != .leadingSpace {
            // The variation is correctly signed: the hash and HMAC alone would accept it.
            let content = try Self.content(of: lines[4])
            #expect(try Self.hash(of: lines[4]) == TamperEvidentLog.hex(SHA256.hash(data: Array(content.utf8))))
        }
        try TamperEvidentLogTests.write(lines, to: path)
        let error = try #require(TamperEvidentLogTests.failure(path, key: key), "\(variation) verified")
        #expect(error.line == 5)
        #expect(error.code == .nonCanonical || error.code == .malformed, "\(error)")
        if let explanation = variation.explanation { #expect(error.detail.contains(explanation), "\(error)") }
    }

    @Test func hostileLinesAreRefusedAsMalformedWithoutCrashing() throws {
        let hostile: [[UInt8]] = [
            Array(repeating: UInt8(ascii: "["), count: 100_000),
            Array("{\"a\":".utf8) + Array(repeating: UInt8(ascii: "{"), count: 100_000),
            Array("{\"seq\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8),
            Array("{\"seq\":\"\\ud800\"}".utf8),
            Array("{\"seq\":01}".utf8),
            Array("{\"seq\":4,\"time\":".utf8),
            Array("null".utf8),
        ]
        for line in hostile {
            let bytes = line + [UInt8(ascii: "\n")]
            #expect(throws: TamperEvidentLogError.self) { try TamperEvidentLogVerifier.verify(bytes) }
            do {
                _ = try TamperEvidentLogVerifier.verify(bytes)
            } catch let error as TamperEvidentLogError {
                #expect(error.code == .malformed, "\(error)")
                #expect(error.line == 1)
            }
        }
    }

    @Test func awkwardTextInEventsRoundTripsAndVerifies() throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-log-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try TamperEvidentLog(path: path, key: key)
        let awkward = [
            "quote \" backslash \\ slash / tab \t newline \n nul \u{0} del \u{7f}",
            "é (composed) e\u{301} (decomposed) 日本語 🦀 \u{2028}\u{2029}",
            ",\"hash\":\"\(String(repeating: "a", count: 64))\",\"hmac\":\"\(String(repeating: "b", count: 64))\"}",
            "",
        ]
        for (index, text) in awkward.enumerated() {
            try log.append(
                SecurityEvent(
                    kind: .redirectRefused,
                    host: text.isEmpty ? nil : "h.test",
                    requestID: index.isMultiple(of: 2) ? nil : UInt64.max,
                    reason: text,
                    message: text,
                    details: [
                        SecurityEvent.DetailKey(code: text): .text(text),
                        SecurityEvent.DetailKey(code: "e\u{301}"): "1",
                        SecurityEvent.DetailKey(code: "\u{e9}x"): "2",
                    ]
                )
            )
        }
        #expect(try TamperEvidentLogVerifier.verify(path: path, key: key).records == awkward.count)
    }

    /// A line written today, byte for byte: typed details are written as the text they were written as before
    /// (a number in decimal, a flag as `false`, a list joined by `, `, a chain one certificate per line).
    @Test("a record of typed details is the line the writer wrote for text details")
    func goldenLine() throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "bulwark-log-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try TamperEvidentLog(path: path, checkpoints: .onlyOnClose)
        try log.append(
            SecurityEvent(
                kind: .credentialStripped,
                host: "a.example",
                requestID: 7,
                reason: "origin_change",
                message: "authorization, cookie removed",
                details: [
                    .from: "https://a.example/login", .status: 302, .headers: .list(["authorization", "cookie"]),
                    .presented: .lines(["sha256/AAAA: CN=a, O=b", "sha256/BBBB: CN=c"]), .cached: false,
                ],
                time: Date(timeIntervalSince1970: 1_780_000_000)
            )
        )
        let line = try #require(try TamperEvidentLogTests.lines(path).first)
        let golden =
            #"{"details":{"cached":"false","from":"https://a.example/login","headers":"authorization, cookie","#
            + #""presented":"sha256/AAAA: CN=a, O=b\nsha256/BBBB: CN=c","status":"302"},"host":"a.example","#
            + #""kind":"credential_stripped","message":"authorization, cookie removed","#
            + #""prev":"0000000000000000000000000000000000000000000000000000000000000000","reason":"origin_change","#
            + #""request_id":7,"seq":1,"time":"2026-05-28T20:26:40Z","#
            + #""hash":"f6e27c79bedfc09ce8d7dac88734046ac5484bee86fbe07dca7c0ccdd2ea968d"}"#
        #expect(line == golden)
        try log.close()
        #expect(try TamperEvidentLogVerifier.verify(path: path).records == 1)
    }
}
