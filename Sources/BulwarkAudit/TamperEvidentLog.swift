import BulwarkPolicy
import Crypto
import Foundation

/// An append-only JSON-lines file of security events in which every record is chained to the one before it.
///
/// Each line is `CONTENT` with its closing `}` replaced by the trailer `,"hash":"H"}`, or `,"hash":"H","hmac":"M"}`
/// when the log has a key, and then a newline. `CONTENT` is one JSON object with the keys `details`, `host`, `kind`,
/// `message`, `prev`, `reason`, `request_id`, `seq` and `time` (`host`, `reason` and `request_id` only when the event
/// has them), in that order, encoded by `JSONEncoder` with sorted keys, unescaped slashes and no whitespace. `seq` is
/// 1, 2, 3, …; `prev` is the `hash` of the line before (64 zeros for the first); `H` is the SHA-256 of `CONTENT`
/// and `M` its HMAC-SHA-256, both in 64 lower-case hex digits.
///
/// A line is accepted only if it is exactly that: the verifier decodes `CONTENT` and encodes it again and requires
/// the same bytes, and requires the trailer at the very end of the line. So every field it checks comes from the
/// signed bytes; a repeated key, whitespace, another key order or escape, or anything after the trailer is refused.
/// Editing a byte breaks `hash` (and `hmac`); removing or reordering records breaks `seq` and `prev`; rewriting the
/// whole tail consistently needs the HMAC key. ``TamperEvidentLogVerifier`` checks all of it.
///
/// Checkpoints are entries of the same chain, with the same trailer, whose `CONTENT` has the keys `checkpoint`
/// (`close`, `interval` or `previous_session_unclosed`), `count` (the number of entries before it, its `seq` minus
/// one), `head` (the `hash` of the last of them, equal to its `prev`), `prev`, `seq` and `time`, in that order.
/// ``close()`` writes one, and so does ``CheckpointPolicy`` every so many records or seconds. They make the end of
/// the log explicit: a log that ends without a close checkpoint was not closed. Opening a log that does not end with
/// one writes a `previous_session_unclosed` checkpoint first, with the `count` and `head` it found, so that a cut
/// end followed by a new session stays visible (``TamperEvidentLogVerifier/Summary/unclosedSessions``). Checkpoints
/// cannot make every cut detectable on their own: removing the last entries with their checkpoints leaves a log
/// that ends like a crashed one, and a cut back to an earlier close checkpoint leaves a log that ends like a closed
/// one. Only a `count` and `head` kept outside the log (``TamperEvidentLogVerifier/Expectation``) detect that.
///
/// Before it chains onto the last line of an existing log, the writer verifies that line as the verifier would
/// (its exact form, its hash, with a key its HMAC, a checkpoint's `count` and `head`) and that its `seq` is one its
/// place in the file can hold (1 up to its line number), and refuses the log with a ``TamperEvidentLogError``
/// naming the file and the line otherwise, writing nothing: a log that holds a forged or damaged last line is for
/// ``TamperEvidentLogVerifier`` and a person to look at, not to be extended. A log signed with a key is continued
/// only with that key, and one without HMACs is not continued with a key. No line may be longer than
/// ``maximumLineLength``: a record that would be is not written, and a file whose last line is longer is refused.
///
/// Writing is safe from any number of threads of one process (one lock, one `write(2)` per record on an
/// `O_APPEND` descriptor). A crash in the middle of a write leaves a torn last line, without a newline: reopening
/// ends that line and writes the `previous_session_unclosed` checkpoint, chained to the last complete entry, in one
/// `write(2)`. The torn line is never trusted: the verifier reports it as `malformed` until it is removed.
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

        /// `<redacted>`: a key never prints.
        public var description: String { "<redacted>" }
    }

    /// The path of the log file.
    public let path: String
    private let key: Key?
    private let checkpoints: CheckpointPolicy
    private let lock = NSLock()
    private let descriptor: Int32
    private let codec = TamperEvidentLogEntry.Codec()
    private var timer: (any DispatchSourceTimer)?
    // Guarded by `lock`:
    private var sequence: Int
    private var previousHash: String
    private var recordsSinceCheckpoint = 0
    private var endsWithCloseCheckpoint: Bool
    private var isClosed = false

    static let zeroHash = String(repeating: "0", count: 64)

    /// The longest line a log may hold, in bytes without its newline: 16 MiB. It bounds what opening a log reads
    /// into memory, whatever was appended to the file; a record longer than that is not written
    /// (``TamperEvidentLogError/Code/recordTooLarge``).
    public static let maximumLineLength = 16 << 20

    /// Opens (or creates) the log at `path` for appending, with checkpoints as `checkpoints` says.
    ///
    /// Call ``close()`` when done: it writes the close checkpoint. A log released without ``close()`` ends without
    /// one, as if its writer had crashed.
    ///
    /// When the file does not end with a close checkpoint (its last session crashed, or its end was cut off), a
    /// `previous_session_unclosed` checkpoint with the `count` and `head` found is written first.
    ///
    /// - Throws: ``TamperEvidentLogError`` when the file cannot be opened or read, is not a regular file, or its last
    ///   line cannot be verified (see the type's discussion); nothing is written then.
    public init(path: String, key: Key? = nil, checkpoints: CheckpointPolicy = .default) throws {
        self.path = path
        self.key = key
        self.checkpoints = checkpoints
        let descriptor = try TamperEvidentLogFile.openLog(path, appending: true)
        let found: Found
        do {
            let tail = try TamperEvidentLogFile.tail(of: descriptor, path: path, limit: Self.maximumLineLength)
            found = try Self.found(in: tail, path: path, key: key)
        } catch {
            TamperEvidentLogFile.closeDescriptor(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.sequence = found.count
        self.previousHash = found.head
        self.endsWithCloseCheckpoint = found.endsWithClose
        if !found.endsWithClose && (found.count > 0 || found.endsTorn) {
            self.lock.lock()
            defer { self.lock.unlock() }
            // A torn line from a crash is ended first, in the same write: the verifier reports it, nothing chains
            // to it.
            try self.writeCheckpoint(Self.unclosedCheckpoint, startingANewLine: found.endsTorn)
        }
        if let interval = checkpoints.interval {
            let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            // At most 100 years, so that the nanoseconds fit in an `Int` however long the interval asked for.
            let bounded = min(interval, .seconds(100 * 365 * 86_400))
            let nanoseconds =
                Int(bounded.components.seconds) * 1_000_000_000
                + Int(bounded.components.attoseconds / 1_000_000_000)
            timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds))
            timer.setEventHandler { [weak self] in
                // A failed write here surfaces on the next append, which fails the same way.
                try? self?.checkpoint()
            }
            timer.resume()
            self.timer = timer
        }
    }

    deinit {
        self.timer?.cancel()
        if !self.isClosed { TamperEvidentLogFile.closeDescriptor(self.descriptor) }
    }

    static let closeCheckpoint = "close"
    static let intervalCheckpoint = "interval"
    static let unclosedCheckpoint = "previous_session_unclosed"
    static let checkpointKinds: Set<String> = [closeCheckpoint, intervalCheckpoint, unclosedCheckpoint]

    /// What an opened log continues from.
    private struct Found {
        /// The entries in the file: the `seq` of the last one (0 for none).
        var count = 0
        /// The `hash` of the last entry (the zero hash for none).
        var head = TamperEvidentLog.zeroHash
        /// Whether the file ends with a close checkpoint.
        var endsWithClose = false
        /// Whether the file ends with a torn line, without a newline.
        var endsTorn = false
    }

    /// Verifies the last line of `tail` as the entry to chain onto.
    private static func found(in tail: TamperEvidentLogFile.Tail, path: String, key: Key?) throws -> Found {
        var found = Found()
        if let torn = tail.tornLine {
            guard torn.length <= Self.maximumLineLength else {
                throw TamperEvidentLogError(
                    .malformed,
                    line: torn.number,
                    detail: "cannot append to \(path): its line \(torn.number) does not end with a newline and is "
                        + "longer than any line of a log (\(Self.maximumLineLength) bytes), so no write of its writer "
                        + "left it there"
                )
            }
            found.endsTorn = true
        }
        guard let last = tail.lastLine else { return found }
        let number = last.number
        func refusal(_ code: TamperEvidentLogError.Code, _ reason: String) -> TamperEvidentLogError {
            TamperEvidentLogError(
                code,
                line: number,
                detail: "cannot append to \(path): its last complete line, line \(number), \(reason)"
            )
        }
        guard let bytes = last.bytes else {
            throw refusal(.malformed, "is longer than any line of a log (\(Self.maximumLineLength) bytes)")
        }
        let entry: TamperEvidentLogLine
        do {
            entry = try TamperEvidentLogLine(bytes, codec: TamperEvidentLogEntry.Codec())
        } catch let refused as TamperEvidentLogLine.Refusal {
            throw refusal(refused.code, "is not an entry as the writer writes it: \(refused.detail)")
        }
        do {
            try TamperEvidentLogVerifier.check(entry, line: number, key: key)
            if case .checkpoint(let checkpoint) = entry.entry {
                try TamperEvidentLogVerifier.check(checkpoint, line: number)
            }
        } catch let error as TamperEvidentLogError {
            throw refusal(error.code, "is refused: \(error.detail)")
        }
        if key == nil, entry.hmac != nil {
            throw refusal(.keyRequired, "is signed with an HMAC key: the log is continued only with its key")
        }
        // Each entry takes a line of its own, so an entry's number is at most its line number: a bound that keeps
        // every number this writer computes far below `Int.max`.
        guard (1...number).contains(entry.sequence) else {
            throw refusal(
                .sequenceOutOfRange,
                "is numbered \(entry.sequence), a number no entry on line \(number) can have: it was forged"
            )
        }
        found.count = entry.sequence
        found.head = entry.hash
        if case .checkpoint(let checkpoint) = entry.entry, checkpoint.checkpoint == Self.closeCheckpoint {
            found.endsWithClose = !found.endsTorn
        }
        return found
    }

    /// Appends one event, and a checkpoint after it when ``CheckpointPolicy/everyRecords`` records were written
    /// since the last one.
    ///
    /// - Throws: ``TamperEvidentLogError`` when the write fails or the log was closed.
    public func append(_ event: SecurityEvent) throws {
        self.lock.lock()
        defer { self.lock.unlock() }
        try self.ensureOpen()
        try self.writeEntry(Self.record(of: event, sequence: try self.nextSequence(), previousHash: self.previousHash))
        self.recordsSinceCheckpoint += 1
        if let every = self.checkpoints.everyRecords, self.recordsSinceCheckpoint >= every {
            try self.writeCheckpoint(Self.intervalCheckpoint)
        }
    }

    /// Writes a checkpoint now if records were appended since the last one (the timer of
    /// ``CheckpointPolicy/interval`` calls this).
    public func checkpoint() throws {
        self.lock.lock()
        defer { self.lock.unlock() }
        try self.ensureOpen()
        if self.recordsSinceCheckpoint > 0 { try self.writeCheckpoint(Self.intervalCheckpoint) }
    }

    /// Writes the close checkpoint (unless the log already ends with one and nothing was appended since) and closes
    /// the file. Appending afterwards throws; closing again does nothing.
    public func close() throws {
        self.lock.lock()
        defer { self.lock.unlock() }
        guard !self.isClosed else { return }
        self.timer?.cancel()
        defer {
            self.isClosed = true
            TamperEvidentLogFile.closeDescriptor(self.descriptor)
        }
        if !self.endsWithCloseCheckpoint { try self.writeCheckpoint(Self.closeCheckpoint) }
    }

    private func ensureOpen() throws {
        if self.isClosed {
            throw TamperEvidentLogError(.closed, line: nil, detail: "\(self.path) was closed")
        }
    }

    /// The `seq` of the next entry. Called with `lock` held.
    private func nextSequence() throws -> Int {
        // The last entry found when the log was opened is numbered at most its line number; this cannot trigger
        // before the file holds `Int.max` lines.
        let (next, overflow) = self.sequence.addingReportingOverflow(1)
        guard !overflow else {
            throw TamperEvidentLogError(
                .sequenceOutOfRange,
                line: nil,
                detail: "cannot append to \(self.path): it holds the highest entry number there is"
            )
        }
        return next
    }

    /// Writes a checkpoint of the entries so far, after a newline when `startingANewLine`. Called with `lock` held.
    private func writeCheckpoint(_ kind: String, startingANewLine: Bool = false) throws {
        let checkpoint = TamperEvidentLogEntry.Checkpoint(
            checkpoint: kind,
            count: self.sequence,
            head: self.previousHash,
            prev: self.previousHash,
            seq: try self.nextSequence(),
            time: Date().formatted(.iso8601)
        )
        try self.writeEntry(.checkpoint(checkpoint), startingANewLine: startingANewLine)
        self.recordsSinceCheckpoint = 0
        self.endsWithCloseCheckpoint = kind == Self.closeCheckpoint
    }

    /// Signs and writes one entry with a single `write(2)`, after a newline when `startingANewLine`. Called with
    /// `lock` held.
    private func writeEntry(_ entry: TamperEvidentLogEntry, startingANewLine: Bool = false) throws {
        let content = try self.codec.encode(entry)
        let hash = Self.hex(SHA256.hash(data: content))
        var line = Array(content.dropLast()) + Array(",\"hash\":\"\(hash)\"".utf8)
        if let key = self.key {
            line += Array(",\"hmac\":\"\(Self.hex(key.authenticationCode(for: content)))\"".utf8)
        }
        line += Array("}".utf8)
        guard line.count <= Self.maximumLineLength else {
            throw TamperEvidentLogError(
                .recordTooLarge,
                line: nil,
                detail: "a record of \(line.count) bytes was not written to \(self.path): a line of a log holds at "
                    + "most \(Self.maximumLineLength) bytes"
            )
        }
        line = (startingANewLine ? Array("\n".utf8) : []) + line + Array("\n".utf8)
        guard TamperEvidentLogFile.writeAll(self.descriptor, line) else {
            let reason = TamperEvidentLogFile.reason()
            throw TamperEvidentLogError(.unreadable, line: nil, detail: "write to \(self.path) failed: \(reason)")
        }
        self.sequence = entry.sequence
        self.previousHash = hash
        self.endsWithCloseCheckpoint = false
    }

    /// The record of `event` as the `sequence`-th entry, chained to `previousHash`.
    static func record(of event: SecurityEvent, sequence: Int, previousHash: String) -> TamperEvidentLogEntry {
        .record(
            TamperEvidentLogEntry.Record(
                details: event.details.textByCode,
                host: event.host,
                kind: event.kind.name,
                message: event.message,
                prev: previousHash,
                reason: event.reason,
                requestID: event.requestID,
                seq: sequence,
                time: event.time.formatted(.iso8601)
            )
        )
    }

    /// Lower-case hex, as every `hash`, `prev` and `hmac` in the log is written.
    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
