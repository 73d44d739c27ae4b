import Crypto
import Foundation

/// Checks a tamper-evident log written by ``TamperEvidentLog`` and names the first broken record by line.
public enum TamperEvidentLogVerifier {
    /// The result of a successful check.
    public struct Summary: Sendable, Hashable {
        /// Records verified.
        public var records: Int
        /// Whether every record's HMAC was checked with a key.
        public var authenticated: Bool
    }

    /// Verifies the file at `path`.
    ///
    /// - Throws: ``TamperEvidentLogError`` for the first problem, with its 1-based line number.
    public static func verify(path: String, key: TamperEvidentLog.Key? = nil) throws -> Summary {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TamperEvidentLogError(.unreadable, line: nil, detail: "cannot read \(path)")
        }
        return try self.verify([UInt8](data), key: key)
    }

    /// Verifies log bytes.
    public static func verify(_ bytes: [UInt8], key: TamperEvidentLog.Key? = nil) throws -> Summary {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let complete = bytes.last == UInt8(ascii: "\n") || bytes.isEmpty
        let codec = TamperEvidentLogEntry.Codec()
        var previousHash = TamperEvidentLog.zeroHash
        var expectedSequence = 1
        var records = 0
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
            let record: TamperEvidentLogLine
            do {
                record = try TamperEvidentLogLine(Array(line), codec: codec)
            } catch let refusal as TamperEvidentLogLine.Refusal {
                throw TamperEvidentLogError(refusal.code, line: number, detail: refusal.detail)
            }
            if TamperEvidentLog.hex(SHA256.hash(data: record.content)) != record.hash {
                throw TamperEvidentLogError(.editedRecord, line: number, detail: "the record does not match its hash")
            }
            if let key {
                guard let hmac = record.hmac else {
                    throw TamperEvidentLogError(.missingHMAC, line: number, detail: "a key was given but the record has no HMAC")
                }
                if TamperEvidentLog.hex(key.authenticationCode(for: record.content)) != hmac {
                    throw TamperEvidentLogError(.badHMAC, line: number, detail: "HMAC mismatch: wrong key, or rewritten")
                }
            }
            if record.sequence > expectedSequence {
                let later = lines[(index + 1)...].contains { (try? TamperEvidentLogLine(Array($0), codec: codec))?.sequence == expectedSequence }
                if later {
                    throw TamperEvidentLogError(
                        .reorderedRecords,
                        line: number,
                        detail: "record \(record.sequence) stands where \(expectedSequence) belongs: records were reordered"
                    )
                }
                throw TamperEvidentLogError(
                    .missingRecords,
                    line: number,
                    detail: "sequence jumps from \(expectedSequence - 1) to \(record.sequence): records were removed"
                )
            }
            if record.sequence < expectedSequence {
                throw TamperEvidentLogError(
                    .reorderedRecords,
                    line: number,
                    detail: "sequence \(record.sequence) after \(expectedSequence - 1): records were reordered"
                )
            }
            if record.previousHash != previousHash {
                throw TamperEvidentLogError(
                    .brokenChain,
                    line: number,
                    detail: "does not chain to the previous record"
                )
            }
            previousHash = record.hash
            expectedSequence += 1
            records += 1
        }
        return Summary(records: records, authenticated: key != nil)
    }
}

/// Appends every event to a ``TamperEvidentLog``. A failed write is reported to `onError` (standard error by
/// default), never thrown into the code that caused the event.
public struct TamperEvidentLogMonitor: EventMonitor {
    public let log: TamperEvidentLog
    private let onError: @Sendable (any Error) -> Void

    public init(
        log: TamperEvidentLog,
        onError: @escaping @Sendable (any Error) -> Void = { error in
            FileHandle.standardError.write(Data("bulwark: event log: \(error)\n".utf8))
        }
    ) {
        self.log = log
        self.onError = onError
    }

    public func record(_ event: SecurityEvent) {
        do {
            try self.log.append(event)
        } catch {
            self.onError(error)
        }
    }
}
