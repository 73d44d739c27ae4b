import Crypto
import Foundation

/// Checks a tamper-evident log written by ``TamperEvidentLog`` and names the first broken entry by line.
///
/// What it proves without anything kept outside the log: every line is exactly what the writer wrote (with a key:
/// what a holder of the key wrote), and no entry was edited, removed, inserted or reordered before the last line.
/// What it cannot prove alone: that nothing was cut from the end. Removing the last entries, their checkpoints
/// included, leaves a log that ends at an earlier entry or checkpoint, which is what a crash leaves too. An
/// ``Expectation`` with the `count` and `head` of an earlier ``Summary``, kept elsewhere, detects that. When the
/// writer opens the log again after such a cut, it finds no close checkpoint at the end and says so in a
/// `previous_session_unclosed` checkpoint, which the verifier reports in ``Summary/unclosedSessions``; only a cut
/// back to an earlier close checkpoint leaves no such trace.
public enum TamperEvidentLogVerifier {
    /// How a verified log ends.
    public enum Ending: Sendable, Hashable {
        /// No entries.
        case empty
        /// With a record: the writer is still running or crashed, or the end was cut off (or the log was written
        /// before checkpoints existed).
        case open
        /// With an interval or `previous_session_unclosed` checkpoint: as ``open``, but nothing was written after
        /// the checkpoint.
        case checkpoint
        /// With a close checkpoint: the writer closed the log, or everything after an earlier close was cut off.
        case closed
    }

    /// The result of a successful check.
    public struct Summary: Sendable, Hashable {
        /// Security-event records verified.
        public var records: Int
        /// Whether every entry's HMAC was checked with a key.
        public var authenticated: Bool
        /// Checkpoints verified.
        public var checkpoints: Int = 0
        /// Entries (records and checkpoints): the `seq` of the last one. Keep it with ``head`` as an anchor.
        public var count: Int = 0
        /// The `hash` of the last entry (64 zeros for an empty log). Keep it with ``count`` as an anchor.
        public var head: String = TamperEvidentLog.zeroHash
        /// How the log ends.
        public var ending: Ending = .empty
        /// The line of the last checkpoint, if there is one.
        public var lastCheckpointLine: Int?
        /// The sessions of the writer that ended without a close checkpoint, in the order of the log: each is a
        /// warning that the writer crashed there or that entries were cut off there.
        public var unclosedSessions: [UnclosedSession] = []
    }

    /// A `previous_session_unclosed` checkpoint: a session of the writer found the log without a close checkpoint at
    /// its end. Either the session before crashed (or was killed, or released its log without closing it), or
    /// entries after entry ``count`` were cut off before the log was opened again; only a head kept elsewhere tells
    /// which.
    public struct UnclosedSession: Sendable, Hashable, CustomStringConvertible {
        /// The line of the `previous_session_unclosed` checkpoint.
        public var line: Int
        /// The entries the new session found: the `seq` of the last one.
        public var count: Int
        /// The `hash` of the last entry the new session found (64 zeros when it found none).
        public var head: String

        /// A session that found `count` entries ending with `head`, marked on `line`.
        public init(line: Int, count: Int, head: String) {
            self.line = line
            self.count = count
            self.head = head
        }

        /// `line N: previous_session_unclosed:` and what it means, in words.
        public var description: String {
            "line \(self.line): \(TamperEvidentLogError.Code.previousSessionUnclosed): \(self.explanation)"
        }

        /// What the mark means, without its line.
        var explanation: String {
            "the log was opened again after entry \(self.count) (hash \(self.head)) without a close checkpoint "
                + "after it: its writer crashed, or entries after entry \(self.count) were cut off"
        }
    }

    /// What the log must also satisfy, from knowledge kept outside it.
    public struct Expectation: Sendable, Hashable {
        /// The log must hold at least this many entries (an earlier ``Summary/count``).
        public var count: Int?
        /// The entry numbered `count` must have this `hash` (an earlier ``Summary/head``); without `count`, some
        /// entry must have it. Entries after it are allowed: the log may have grown since.
        public var head: String?
        /// Every session of the writer must have been closed: the log must end with a close checkpoint, and hold
        /// no `previous_session_unclosed` checkpoint (a session that found the log unclosed).
        public var closed: Bool

        /// Expectations of at least `count` entries, of the entry `count` (or some entry) having the hash `head`, and
        /// of every session closed when `closed` is true.
        ///
        /// `count` alone is weaker than `count` with `head`: it shows that the log holds that many entries, not that
        /// they are the ones counted. A log cut and then grown past `count` again (by a later session of the
        /// writer, or by anyone when the log has no key) passes it; `head` proves that entry `count` is the one
        /// anchored, and with a key, every entry before it.
        public init(count: Int? = nil, head: String? = nil, closed: Bool = false) {
            self.count = count
            self.head = head.map { $0.lowercased() }
            self.closed = closed
        }
    }

    /// Verifies the file at `path`.
    ///
    /// - Throws: ``TamperEvidentLogError`` for the first problem, with its 1-based line number.
    public static func verify(
        path: String,
        key: TamperEvidentLog.Key? = nil,
        expecting expectation: Expectation = Expectation()
    ) throws -> Summary {
        let descriptor = try TamperEvidentLogFile.openLog(path, appending: false)
        defer { TamperEvidentLogFile.closeDescriptor(descriptor) }
        let bytes = try TamperEvidentLogFile.readAll(descriptor, path: path)
        return try self.verify(bytes, key: key, expecting: expectation)
    }

    /// Verifies log bytes.
    public static func verify(
        _ bytes: [UInt8],
        key: TamperEvidentLog.Key? = nil,
        expecting expectation: Expectation = Expectation()
    ) throws -> Summary {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let complete = bytes.last == UInt8(ascii: "\n") || bytes.isEmpty
        let codec = TamperEvidentLogEntry.Codec()
        var summary = Summary(records: 0, authenticated: key != nil)
        var anchoredHashFound = false
        for (index, line) in lines.enumerated() {
            let number = index + 1
            let isLast = index == lines.count - 1
            if line.isEmpty && isLast { break }
            if isLast && !complete {
                throw TamperEvidentLogError(
                    .tornLastLine,
                    line: number,
                    detail: "the last record is incomplete (a write was interrupted or the file was cut)"
                )
            }
            let entry: TamperEvidentLogLine
            do {
                entry = try TamperEvidentLogLine(Array(line), codec: codec)
            } catch let refusal as TamperEvidentLogLine.Refusal {
                throw TamperEvidentLogError(refusal.code, line: number, detail: refusal.detail)
            }
            try self.check(entry, line: number, key: key)
            try self.checkPlace(of: entry, line: number, after: summary, following: lines[(index + 1)...], codec: codec)
            switch entry.entry {
            case .record:
                summary.records += 1
                summary.ending = .open
            case .checkpoint(let checkpoint):
                try self.check(checkpoint, line: number)
                summary.checkpoints += 1
                summary.lastCheckpointLine = number
                summary.ending = checkpoint.checkpoint == TamperEvidentLog.closeCheckpoint ? .closed : .checkpoint
                if checkpoint.checkpoint == TamperEvidentLog.unclosedCheckpoint {
                    summary.unclosedSessions.append(
                        UnclosedSession(line: number, count: checkpoint.count, head: checkpoint.head)
                    )
                }
            }
            summary.count = entry.sequence
            summary.head = entry.hash
            if let head = expectation.head?.lowercased() {
                if let count = expectation.count, entry.sequence == count, entry.hash != head {
                    throw TamperEvidentLogError(
                        .anchorMismatch,
                        line: number,
                        detail: "entry \(count) has hash \(entry.hash), the anchor says \(head): the log was rewritten"
                    )
                }
                if entry.hash == head { anchoredHashFound = true }
            }
        }
        try self.check(summary, against: expectation, anchoredHashFound: anchoredHashFound)
        return summary
    }

    /// Checks that a checkpoint's `count` and `head` describe the entries before it, as its own `seq` and `prev`
    /// say. No arithmetic here can overflow, whatever numbers the line holds.
    static func check(_ checkpoint: TamperEvidentLogEntry.Checkpoint, line number: Int) throws {
        let (next, overflow) = checkpoint.count.addingReportingOverflow(1)
        guard !overflow, next == checkpoint.seq, checkpoint.head == checkpoint.prev else {
            throw TamperEvidentLogError(
                .badCheckpoint,
                line: number,
                detail: "the checkpoint's count or head does not describe the entries before it"
            )
        }
    }

    /// Checks the entry's own hash and HMAC.
    static func check(_ entry: TamperEvidentLogLine, line number: Int, key: TamperEvidentLog.Key?) throws {
        if TamperEvidentLog.hex(SHA256.hash(data: entry.content)) != entry.hash {
            throw TamperEvidentLogError(.editedRecord, line: number, detail: "the record does not match its hash")
        }
        if let key {
            guard let hmac = entry.hmac else {
                throw TamperEvidentLogError(
                    .missingHMAC,
                    line: number,
                    detail: "a key was given but the record has no HMAC"
                )
            }
            if TamperEvidentLog.hex(key.authenticationCode(for: entry.content)) != hmac {
                throw TamperEvidentLogError(.badHMAC, line: number, detail: "HMAC mismatch: wrong key, or rewritten")
            }
        }
    }

    /// Checks that the entry follows the one before it: the next `seq`, and `prev` equal to that entry's `hash`.
    private static func checkPlace(
        of entry: TamperEvidentLogLine,
        line number: Int,
        after summary: Summary,
        following later: ArraySlice<ArraySlice<UInt8>>,
        codec: TamperEvidentLogEntry.Codec
    ) throws {
        // `summary.count` is the `seq` of the entry before, which was its line's place in this check: at most the
        // number of lines before, so far below `Int.max`.
        let expected = summary.count + 1
        if entry.sequence > expected {
            if later.contains(where: { (try? TamperEvidentLogLine(Array($0), codec: codec))?.sequence == expected }) {
                throw TamperEvidentLogError(
                    .reorderedRecords,
                    line: number,
                    detail: "record \(entry.sequence) stands where \(expected) belongs: records were reordered"
                )
            }
            throw TamperEvidentLogError(
                .missingRecords,
                line: number,
                detail: "sequence jumps from \(expected - 1) to \(entry.sequence): records were removed"
            )
        }
        if entry.sequence < expected {
            throw TamperEvidentLogError(
                .reorderedRecords,
                line: number,
                detail: "sequence \(entry.sequence) after \(expected - 1): records were reordered"
            )
        }
        if entry.previousHash != summary.head {
            throw TamperEvidentLogError(.brokenChain, line: number, detail: "does not chain to the previous record")
        }
    }

    /// Checks what only an outside anchor, or the expectation of a close, can tell.
    private static func check(
        _ summary: Summary,
        against expectation: Expectation,
        anchoredHashFound: Bool
    ) throws {
        if let count = expectation.count, summary.count < count {
            throw TamperEvidentLogError(
                .truncated,
                line: nil,
                detail: "the log holds \(summary.count) entries, the anchor says at least \(count): "
                    + "entries were cut from its end"
            )
        }
        if expectation.count == 0, let head = expectation.head, head.lowercased() != TamperEvidentLog.zeroHash {
            throw TamperEvidentLogError(.anchorMismatch, line: nil, detail: "an anchor of 0 entries has the zero head")
        }
        // With a count, the entry of that number was compared as it was read.
        if let head = expectation.head?.lowercased(), expectation.count == nil, !anchoredHashFound {
            throw TamperEvidentLogError(
                .anchorMismatch,
                line: nil,
                detail: "no entry has the anchor's hash \(head): the entries up to it were cut off or rewritten"
            )
        }
        if expectation.closed, summary.ending != .closed {
            throw TamperEvidentLogError(
                .notClosed,
                line: nil,
                detail: "the log does not end with a close checkpoint: its writer is still running or crashed, "
                    + "or its end was cut off"
            )
        }
        if expectation.closed, let unclosed = summary.unclosedSessions.first {
            throw TamperEvidentLogError(.previousSessionUnclosed, line: unclosed.line, detail: unclosed.explanation)
        }
    }
}
