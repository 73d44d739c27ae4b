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
/// (`close` or `interval`), `count` (the number of entries before it, its `seq` minus one), `head` (the `hash` of
/// the last of them, equal to its `prev`), `prev`, `seq` and `time`, in that order. ``close()`` writes one, and so
/// does ``CheckpointPolicy`` every so many records or seconds. They make the end of the log explicit: a log that
/// ends without a close checkpoint was not closed. They cannot make a cut end detectable on their own: removing
/// the last entries with their checkpoints leaves a log that ends like a crashed one. Only a `count` and `head`
/// kept outside the log (``TamperEvidentLogVerifier/Expectation``) detect that.
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

    /// Opens (or creates) the log at `path` for appending, with checkpoints as `checkpoints` says.
    ///
    /// Call ``close()`` when done: it writes the close checkpoint. A log released without ``close()`` ends without
    /// one, as if its writer had crashed.
    ///
    /// - Throws: ``TamperEvidentLogError`` when the file cannot be opened or its last complete record is unreadable.
    public init(path: String, key: Key? = nil, checkpoints: CheckpointPolicy = .default) throws {
        self.path = path
        self.key = key
        self.checkpoints = checkpoints
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw TamperEvidentLogError(.unreadable, line: nil, detail: "cannot open \(path): \(reason)")
        }
        self.descriptor = descriptor
        let existing = Data(Self.contents(ofFileAt: path))
        let (last, endsWithNewline) = Self.lastEntry(in: existing)
        self.sequence = last?.sequence ?? 0
        self.previousHash = last?.hash ?? Self.zeroHash
        if case .checkpoint(let checkpoint) = last?.entry, checkpoint.checkpoint == Self.closeCheckpoint {
            self.endsWithCloseCheckpoint = true
        } else {
            self.endsWithCloseCheckpoint = false
        }
        if !existing.isEmpty && !endsWithNewline {
            // A torn line from a crash: leave it for the verifier to report, start the next record on a new line.
            _ = Self.writeAll(descriptor, Array("\n".utf8))
        }
        if let interval = checkpoints.interval {
            let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            let nanoseconds =
                Int(interval.components.seconds) * 1_000_000_000
                + Int(interval.components.attoseconds / 1_000_000_000)
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
        if !self.isClosed { Self.closeDescriptor(self.descriptor) }
    }

    private static func closeDescriptor(_ descriptor: Int32) {
        #if canImport(Darwin)
        _ = Darwin.close(descriptor)
        #elseif canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Musl)
        _ = Musl.close(descriptor)
        #endif
    }

    static let closeCheckpoint = "close"
    static let intervalCheckpoint = "interval"

    /// Appends one event, and a checkpoint after it when ``CheckpointPolicy/everyRecords`` records were written
    /// since the last one.
    ///
    /// - Throws: ``TamperEvidentLogError`` when the write fails or the log was closed.
    public func append(_ event: SecurityEvent) throws {
        self.lock.lock()
        defer { self.lock.unlock() }
        try self.ensureOpen()
        try self.writeEntry(Self.record(of: event, sequence: self.sequence + 1, previousHash: self.previousHash))
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
            Self.closeDescriptor(self.descriptor)
        }
        if !self.endsWithCloseCheckpoint { try self.writeCheckpoint(Self.closeCheckpoint) }
    }

    private func ensureOpen() throws {
        if self.isClosed {
            throw TamperEvidentLogError(.closed, line: nil, detail: "\(self.path) was closed")
        }
    }

    /// Writes a checkpoint of the entries so far. Called with `lock` held.
    private func writeCheckpoint(_ kind: String) throws {
        let checkpoint = TamperEvidentLogEntry.Checkpoint(
            checkpoint: kind,
            count: self.sequence,
            head: self.previousHash,
            prev: self.previousHash,
            seq: self.sequence + 1,
            time: Date().formatted(.iso8601)
        )
        try self.writeEntry(.checkpoint(checkpoint))
        self.recordsSinceCheckpoint = 0
        self.endsWithCloseCheckpoint = kind == Self.closeCheckpoint
    }

    /// Signs and writes one entry with a single `write(2)`. Called with `lock` held.
    private func writeEntry(_ entry: TamperEvidentLogEntry) throws {
        let content = try self.codec.encode(entry)
        let hash = Self.hex(SHA256.hash(data: content))
        var line = Array(content.dropLast()) + Array(",\"hash\":\"\(hash)\"".utf8)
        if let key = self.key {
            line += Array(",\"hmac\":\"\(Self.hex(key.authenticationCode(for: content)))\"".utf8)
        }
        line += Array("}\n".utf8)
        guard Self.writeAll(self.descriptor, line) else {
            let reason = String(cString: strerror(errno))
            throw TamperEvidentLogError(.unreadable, line: nil, detail: "write to \(self.path) failed: \(reason)")
        }
        self.sequence = entry.sequence
        self.previousHash = hash
        self.endsWithCloseCheckpoint = false
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

    /// The last complete entry, and whether the data ends with a newline.
    /// The file's bytes, read with `read(2)` (empty when it cannot be read: the writer then starts a new chain, and
    /// the verifier reports whatever the file holds). Foundation's `FileManager.contents(atPath:)` leaked a 4 KiB
    /// buffer per call on Linux here (LeakSanitizer, in the event-log fuzz target), once per log opened.
    static func contents(ofFileAt path: String) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { Self.closeDescriptor(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes.append(contentsOf: chunk[..<count])
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return bytes
            }
        }
    }

    static func lastEntry(in data: Data) -> (TamperEvidentLogLine?, Bool) {
        let bytes = [UInt8](data)
        let endsWithNewline = bytes.last == UInt8(ascii: "\n")
        let codec = TamperEvidentLogEntry.Codec()
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).reversed() {
            if let entry = try? TamperEvidentLogLine(Array(line), codec: codec) {
                return (entry, endsWithNewline)
            }
        }
        return (nil, endsWithNewline)
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
