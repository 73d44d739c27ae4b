import Foundation

/// The signed content of one line of a ``TamperEvidentLog``, in the one form the writer produces.
///
/// The content is the JSON object of the entry's fields, encoded by `JSONEncoder` with sorted keys and unescaped
/// slashes, with no whitespace. The verifier decodes a line's signed bytes and encodes the result again: a line is
/// accepted only if that gives back exactly the same bytes, so every field it verifies is read from what was signed
/// and no second reading of the same bytes (a repeated key, an escape the writer never writes) can exist.
enum TamperEvidentLogEntry: Equatable {
    /// A security event.
    case record(Record)
    /// A checkpoint: the count of entries before it and the hash of the last of them.
    case checkpoint(Checkpoint)

    /// The fields of a record, in the order the writer encodes them (sorted by key).
    struct Record: Codable, Equatable {
        var details: [String: String]
        var host: String?
        var kind: String
        var message: String
        var prev: String
        var reason: String?
        var requestID: UInt64?
        var seq: Int
        var time: String

        enum CodingKeys: String, CodingKey {
            case details, host, kind, message, prev, reason, seq, time
            case requestID = "request_id"
        }
    }

    /// The fields of a checkpoint, in the order the writer encodes them (sorted by key). `checkpoint` is `close`
    /// (written by ``TamperEvidentLog/close()``), `interval`, or `previous_session_unclosed` (written as a log is
    /// opened that does not end with a close checkpoint); `count` is the number of entries before this one (its
    /// `seq` minus one) and `head` the `hash` of the last of them (equal to `prev`), so that the line alone, copied
    /// elsewhere, states what the log held.
    struct Checkpoint: Codable, Equatable {
        var checkpoint: String
        var count: Int
        var head: String
        var prev: String
        var seq: Int
        var time: String
    }

    /// The entry's sequence number (1 for the first line of the log).
    var sequence: Int {
        switch self {
        case .record(let record): record.seq
        case .checkpoint(let checkpoint): checkpoint.seq
        }
    }

    /// The `hash` of the entry before this one (64 zeros for the first).
    var previousHash: String {
        switch self {
        case .record(let record): record.prev
        case .checkpoint(let checkpoint): checkpoint.prev
        }
    }

    /// Encodes and decodes entries in the writer's one form. Not shared between threads.
    struct Codec {
        private let encoder: JSONEncoder = {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return encoder
        }()
        private let decoder = JSONDecoder()

        /// The signed content of `entry`.
        func encode(_ entry: TamperEvidentLogEntry) throws -> [UInt8] {
            switch entry {
            case .record(let record): Array(try self.encoder.encode(record))
            case .checkpoint(let checkpoint): Array(try self.encoder.encode(checkpoint))
            }
        }

        /// The entry whose signed content is exactly `content`, or nil when `content` is anything else: not an
        /// entry, or an entry written in some other form (spacing, key order, escapes, extra or repeated keys).
        func decodeExactly(_ content: [UInt8]) -> TamperEvidentLogEntry? {
            let entry: TamperEvidentLogEntry
            if let record = try? self.decoder.decode(Record.self, from: Data(content)) {
                entry = .record(record)
            } else if let checkpoint = try? self.decoder.decode(Checkpoint.self, from: Data(content)),
                TamperEvidentLog.checkpointKinds.contains(checkpoint.checkpoint)
            {
                entry = .checkpoint(checkpoint)
            } else {
                return nil
            }
            guard let again = try? self.encode(entry), again == content else { return nil }
            return entry
        }
    }
}
