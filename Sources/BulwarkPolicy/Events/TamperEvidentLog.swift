import Crypto
import Foundation

/// An append-only JSON-lines file of security events in which every record is chained to the one before it.
///
/// Each line is one JSON object: `seq` (1, 2, 3, …), `time`, `kind`, `host`, `request_id`, `reason`, `message`,
/// `details`, then `prev` (the SHA-256 of the previous line's content, 64 zeros for the first), `hash` (the
/// SHA-256 of this line's content: everything before `,"hash"`), and, with a key, `hmac` (HMAC-SHA-256 of the same
/// content). Editing a byte breaks `hash` (and `hmac`); removing or reordering records breaks `seq` and `prev`;
/// rewriting the whole tail consistently needs the HMAC key. ``TamperEvidentLogVerifier`` checks all of it.
///
/// Writing is safe from any number of threads of one process (one lock, one `write(2)` per record on an
/// `O_APPEND` descriptor). A crash in the middle of a write leaves a torn last line: reopening starts a fresh line
/// and chains to the last complete record, and the verifier reports the torn line; it is never trusted.
public final class TamperEvidentLog: @unchecked Sendable {
    /// The HMAC key, held in ``SecretBytes`` (locked in memory, zeroized when the key is released). Its bytes are
    /// only read while a record is signed or verified, and it prints as `<redacted>`.
    public final class Key: Sendable, CustomStringConvertible {
        private let secret: SecretBox

        /// A key that takes over `secret` (at least 16 bytes).
        public init(secret: consuming SecretBytes) throws {
            guard secret.count >= 16 else {
                throw TamperEvidentLogError(.keyTooShort, line: nil, detail: "an HMAC key needs at least 16 bytes")
            }
            self.secret = SecretBox(secret)
        }

        /// A key copied from `bytes`; the caller should wipe its own copy.
        public convenience init(bytes: [UInt8]) throws {
            try self.init(secret: SecretBytes(bytes))
        }

        /// Reads a key file: its raw bytes, exactly (a binary key may end in a newline byte).
        public convenience init(contentsOfFile path: String) throws {
            let secret: SecretBytes
            do {
                secret = try SecretBytes(contentsOfFile: path, trimmingTrailingNewlines: false)
            } catch {
                throw TamperEvidentLogError(.unreadable, line: nil, detail: "cannot read key file \(path): \(error)")
            }
            try self.init(secret: secret)
        }

        /// The HMAC-SHA-256 of `content`.
        func authenticationCode(for content: [UInt8]) -> [UInt8] {
            self.secret.withUnsafeBytes { bytes in
                Array(HMAC<SHA256>.authenticationCode(for: content, using: SymmetricKey(data: bytes)))
            } ?? []
        }

        public var description: String { "<redacted>" }
    }

    public let path: String
    private let key: Key?
    private let lock = NSLock()
    private let descriptor: Int32
    private var sequence: Int
    private var previousHash: String

    static let zeroHash = String(repeating: "0", count: 64)

    /// Opens (or creates) the log at `path` for appending.
    ///
    /// - Throws: ``TamperEvidentLogError`` when the file cannot be opened or its last complete record is unreadable.
    public init(path: String, key: Key? = nil) throws {
        self.path = path
        self.key = key
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw TamperEvidentLogError(.unreadable, line: nil, detail: "cannot open \(path): errno \(errno)")
        }
        self.descriptor = descriptor
        let existing = FileManager.default.contents(atPath: path) ?? Data()
        let (sequence, hash, endsWithNewline) = Self.lastRecord(in: existing)
        self.sequence = sequence
        self.previousHash = hash
        if !existing.isEmpty && !endsWithNewline {
            // A torn line from a crash: leave it for the verifier to report, start the next record on a new line.
            _ = Self.writeAll(descriptor, Array("\n".utf8))
        }
    }

    deinit {
        close(self.descriptor)
    }

    /// Appends one event.
    public func append(_ event: SecurityEvent) throws {
        self.lock.lock()
        defer { self.lock.unlock() }
        let sequence = self.sequence + 1
        let content = try Self.content(of: event, sequence: sequence, previousHash: self.previousHash)
        let hash = Self.hex(SHA256.hash(data: Array(content.utf8)))
        var line = String(content.dropLast()) + ",\"hash\":\"\(hash)\""
        if let key = self.key {
            line += ",\"hmac\":\"\(Self.hex(key.authenticationCode(for: Array(content.utf8))))\""
        }
        line += "}\n"
        guard Self.writeAll(self.descriptor, Array(line.utf8)) else {
            throw TamperEvidentLogError(.unreadable, line: sequence, detail: "write to \(self.path) failed: errno \(errno)")
        }
        self.sequence = sequence
        self.previousHash = hash
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    struct Content: Encodable {
        var seq: Int
        var time: String
        var kind: String
        var host: String?
        var requestID: UInt64?
        var reason: String?
        var message: String
        var details: [String: String]
        var prev: String

        enum CodingKeys: String, CodingKey {
            case seq, time, kind, host, reason, message, details, prev
            case requestID = "request_id"
        }
    }

    static func content(of event: SecurityEvent, sequence: Int, previousHash: String) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let content = Content(
            seq: sequence,
            time: event.time.formatted(.iso8601),
            kind: event.kind.name,
            host: event.host,
            requestID: event.requestID,
            reason: event.reason,
            message: event.message,
            details: event.details,
            prev: previousHash
        )
        // `prev` sorts after the other keys, so the text ends with it; `hash` and `hmac` follow.
        return String(decoding: try encoder.encode(content), as: UTF8.self)
    }

    /// The sequence number and hash of the last complete record, and whether the data ends with a newline.
    static func lastRecord(in data: Data) -> (Int, String, Bool) {
        let bytes = [UInt8](data)
        let endsWithNewline = bytes.last == UInt8(ascii: "\n")
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).reversed() {
            if let record = try? ParsedRecord(line: Array(line)) {
                return (record.sequence, record.hash, endsWithNewline)
            }
        }
        return (0, Self.zeroHash, endsWithNewline)
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}

/// One line of the log, split into its signed content and its `hash` / `hmac` fields.
struct ParsedRecord {
    var sequence: Int
    var previousHash: String
    var hash: String
    var hmac: String?
    /// The exact bytes that `hash` and `hmac` cover.
    var content: [UInt8]

    init(line: [UInt8]) throws {
        let text = String(decoding: line, as: UTF8.self)
        guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
            let sequence = object["seq"] as? Int,
            let previousHash = object["prev"] as? String,
            let hash = object["hash"] as? String,
            let marker = text.range(of: ",\"hash\":\"", options: .backwards)
        else {
            throw TamperEvidentLogError(.malformed, line: nil, detail: "not a log record")
        }
        self.sequence = sequence
        self.previousHash = previousHash
        self.hash = hash
        self.hmac = object["hmac"] as? String
        self.content = Array((String(text[..<marker.lowerBound]) + "}").utf8)
    }
}
