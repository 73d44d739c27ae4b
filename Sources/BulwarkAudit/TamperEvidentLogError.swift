/// A problem found in, or while writing, a tamper-evident log. `line` is 1-based.
public struct TamperEvidentLogError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The file or key file cannot be read or written.
        public static let unreadable = Code("unreadable")
        /// A line is not a log record (edited into invalid JSON, or torn by a crash mid-write).
        public static let malformed = Code("malformed")
        /// The last line is incomplete: a write was interrupted, or the file was truncated.
        public static let tornLastLine = Code("torn_last_line")
        /// A record's content does not match its own hash: it was edited.
        public static let editedRecord = Code("edited_record")
        /// A record's `prev` does not match the previous record: a record was changed, removed or inserted.
        public static let brokenChain = Code("broken_chain")
        /// Sequence numbers skip: records were removed.
        public static let missingRecords = Code("missing_records")
        /// Sequence numbers go backwards or repeat: records were reordered or duplicated.
        public static let reorderedRecords = Code("reordered_records")
        /// The HMAC does not match: the record was rewritten without the key, or the key is wrong.
        public static let badHMAC = Code("bad_hmac")
        /// A key was given but the record carries no HMAC.
        public static let missingHMAC = Code("missing_hmac")
        /// The HMAC key is too short.
        public static let keyTooShort = Code("key_too_short")
        /// A line is not exactly what the writer writes: its signed content plus the `hash` / `hmac` trailer and
        /// nothing else. Duplicate keys, text after the trailer, spacing, key order, escapes or extra keys that the
        /// writer never produces are refused, even when the hash and HMAC match.
        public static let nonCanonical = Code("non_canonical_record")
        /// A checkpoint's `count` or `head` does not describe the entries before it.
        public static let badCheckpoint = Code("bad_checkpoint")
        /// The log holds fewer entries than an outside anchor says it had: entries were cut from its end.
        public static let truncated = Code("truncated")
        /// The entry an outside anchor names has another hash, or no entry has the anchor's hash.
        public static let anchorMismatch = Code("anchor_mismatch")
        /// The log was expected to end with a close checkpoint and does not.
        public static let notClosed = Code("not_closed")
        /// The log was closed; nothing more can be appended through this object.
        public static let closed = Code("closed")
        /// A session of the writer ended without a close checkpoint, as the next session found the log: the writer
        /// crashed, or entries after its last one were cut off. Reported by the verifier as a warning, and as an
        /// error when every session must have been closed.
        public static let previousSessionUnclosed = Code("previous_session_unclosed")
        /// The last line is numbered outside what its place in the file can hold (below 1, or above its line
        /// number): it was forged. The writer refuses to chain onto it.
        public static let sequenceOutOfRange = Code("sequence_out_of_range")
        /// The log is signed with an HMAC key and was opened for appending without one.
        public static let keyRequired = Code("key_required")
        /// A record is longer than the longest line a log may hold; it was not written.
        public static let recordTooLarge = Code("record_too_large")

        /// The code's stable label.
        public var description: String { self.name }
    }

    /// What is wrong: compare with the static members of ``Code``.
    public let code: Code
    /// The line of the first broken record, when the problem is in the file.
    public let line: Int?
    /// What is wrong, in words.
    public let detail: String

    init(_ code: Code, line: Int?, detail: String) {
        self.code = code
        self.line = line
        self.detail = detail
    }

    /// The line number, when there is one, and what is wrong there.
    public var description: String {
        if let line { return "line \(line): \(self.code): \(self.detail)" }
        return "\(self.code): \(self.detail)"
    }
}
