import Crypto
import Foundation
import _CryptoExtras

/// A Certificate Transparency log as a log list describes it: its key, who operates it, its state and the period of
/// certificate expiry it accepts.
public struct CertificateTransparencyLog: Hashable, Sendable {
    /// A log's state in its list (Chrome's and Apple's lists use these).
    public struct State: Hashable, Sendable, CustomStringConvertible {
        enum Backing: Hashable, Sendable {
            case usable
            case qualified
            case readOnly(since: Date?)
            case retired(at: Date)
            case other(String)
        }

        let backing: Backing

        /// Accepting certificates; its SCTs count.
        public static let usable = State(backing: .usable)
        /// Admitted, not yet usable: its SCTs count (as in Chrome).
        public static let qualified = State(backing: .qualified)
        /// Frozen: its SCTs count (Chrome counts them as a usable log's).
        public static func readOnly(since: Date?) -> State { State(backing: .readOnly(since: since)) }
        /// Retired at `at`: its SCTs count only when issued before then.
        public static func retired(at: Date) -> State { State(backing: .retired(at: at)) }
        /// Pending, qualified, rejected or a state this version does not know: its SCTs do not count.
        public static func other(_ name: String) -> State { State(backing: .other(name)) }

        public var description: String {
            switch self.backing {
            case .usable: "usable"
            case .qualified: "qualified"
            case .readOnly: "readonly"
            case .retired(let at): "retired at \(at.formatted(.iso8601))"
            case .other(let name): name
            }
        }

        /// Whether an SCT issued at `date` by a log in this state counts toward the policy.
        func counts(sctIssuedAt date: Date) -> Bool {
            switch self.backing {
            case .usable, .qualified, .readOnly: true
            case .retired(let at): date < at
            case .other: false
            }
        }

        /// Whether the log is current (usable, qualified or read-only): Chrome wants one SCT from such a log.
        var isCurrent: Bool {
            switch self.backing {
            case .usable, .qualified, .readOnly: true
            case .retired, .other: false
            }
        }
    }

    /// The log's key: a DER SubjectPublicKeyInfo (ECDSA P-256 or RSA).
    public let key: [UInt8]
    /// The SHA-256 of ``key``: the log ID its SCTs carry.
    public let logID: [UInt8]
    /// Who operates the log (the policy counts distinct operators).
    public var operatorName: String
    /// The log's name in its list.
    public var name: String
    /// Its state.
    public var state: State
    /// The certificates the log accepts, by expiry: from `start` (inclusive) to `end` (exclusive), when given.
    public var temporalInterval: Range<Date>?

    /// A log with the DER SubjectPublicKeyInfo `key`.
    public init(
        key: [UInt8],
        operatorName: String,
        name: String,
        state: State = .usable,
        temporalInterval: Range<Date>? = nil
    ) {
        self.key = key
        self.logID = Array(SHA256.hash(data: key))
        self.operatorName = operatorName
        self.name = name
        self.state = state
        self.temporalInterval = temporalInterval
    }
}

extension CertificateTransparencyLog {
    /// Whether `key` (a DER SubjectPublicKeyInfo) is one a log may use: ECDSA P-256, or RSA of 2048 bits or more.
    public static func isUsableKey(_ key: [UInt8]) -> Bool {
        if (try? P256.Signing.PublicKey(derRepresentation: key)) != nil { return true }
        if let rsa = try? _RSA.Signing.PublicKey(derRepresentation: key) { return rsa.keySizeInBits >= 2048 }
        return false
    }
}

/// The Certificate Transparency logs a client trusts, and until when the list itself may be used.
///
/// Read it from the public log list's v3 JSON (``init(jsonData:expires:)``), or build it from a signed policy file, which is
/// where a Bulwark client's list should come from: a list must be current, and must come from a source the client
/// trusts.
public struct CertificateTransparencyLogList: Hashable, Sendable {
    /// The logs.
    public var logs: [CertificateTransparencyLog]
    /// After this, the list is stale: a check against it says so.
    public var expires: Date?

    public init(logs: [CertificateTransparencyLog], expires: Date? = nil) {
        self.logs = logs
        self.expires = expires
    }

    /// The log whose ID is `logID`.
    public func log(withID logID: [UInt8]) -> CertificateTransparencyLog? {
        self.logs.first { $0.logID == logID }
    }

    /// Reads a log list in the public log list's v3 JSON form (`operators[].logs[]`, each log with `key`,
    /// `description`, `state` and `temporal_interval`), or a flat `logs[]` whose entries name their `operator`.
    /// `tiled_logs` are read as logs too. A log whose `log_id` is not the SHA-256 of its key is refused.
    ///
    /// - Parameters:
    ///   - data: The JSON file's bytes.
    ///   - expires: Until when the list may be used (the v3 form carries no expiry of its own).
    /// - Throws: ``CertificateTransparencyError`` (`malformed_log_list`) naming the log or field that is wrong.
    public init(jsonData data: Data, expires: Date? = nil) throws(CertificateTransparencyError) {
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw .malformedLogList("the file is not a JSON object")
        }
        var entries: [(operatorName: String, log: [String: Any])] = []
        switch (root["operators"], root["logs"]) {
        case (let operators?, nil):
            guard let operators = operators as? [[String: Any]] else {
                throw .malformedLogList("\"operators\" is not a list of objects")
            }
            for item in operators {
                guard let name = item["name"] as? String else { throw .malformedLogList("an operator has no name") }
                for key in ["logs", "tiled_logs"] {
                    guard let value = item[key] else { continue }
                    guard let logs = value as? [[String: Any]] else {
                        throw .malformedLogList("the \"\(key)\" of operator \"\(name)\" is not a list of objects")
                    }
                    for log in logs { entries.append((name, log)) }
                }
            }
        case (nil, let logs?):
            guard let logs = logs as? [[String: Any]] else {
                throw .malformedLogList("\"logs\" is not a list of objects")
            }
            for log in logs {
                guard let name = log["operator"] as? String else {
                    throw .malformedLogList("a log has no \"operator\"")
                }
                entries.append((name, log))
            }
        case (.some, .some):
            throw .malformedLogList("both \"operators\" and \"logs\" are there; a list has one or the other")
        case (nil, nil):
            throw .malformedLogList("neither \"operators\" nor \"logs\" is there")
        }
        var logs: [CertificateTransparencyLog] = []
        for (operatorName, entry) in entries {
            let name = entry["description"] as? String ?? "(unnamed log)"
            guard let text = entry["key"] as? String, let key = Data(base64Encoded: text), !key.isEmpty else {
                throw .malformedLogList("log \"\(name)\" has no base64 \"key\"")
            }
            guard CertificateTransparencyLog.isUsableKey(Array(key)) else {
                throw .malformedLogList("log \"\(name)\": its key is not an ECDSA P-256 or RSA (2048 bits or more) key")
            }
            var log = CertificateTransparencyLog(key: Array(key), operatorName: operatorName, name: name)
            guard !logs.contains(where: { $0.logID == log.logID }) else {
                throw .malformedLogList("log \"\(name)\": the same key is listed twice")
            }
            if let id = entry["log_id"] {
                guard let id = id as? String, Data(base64Encoded: id).map(Array.init) == log.logID else {
                    throw .malformedLogList("log \"\(name)\": its log_id is not the SHA-256 of its key")
                }
            }
            if let state = entry["state"] {
                guard let state = state as? [String: Any] else {
                    throw .malformedLogList("log \"\(name)\": its state is not an object naming one state")
                }
                log.state = try Self.state(state, log: name)
            }
            if let interval = entry["temporal_interval"] {
                guard let interval = interval as? [String: Any],
                    let start = (interval["start_inclusive"] as? String).flatMap(Self.date),
                    let end = (interval["end_exclusive"] as? String).flatMap(Self.date), start < end
                else { throw .malformedLogList("log \"\(name)\": its temporal_interval cannot be read") }
                log.temporalInterval = start..<end
            }
            logs.append(log)
        }
        self.init(logs: logs, expires: expires)
    }

    static func state(
        _ object: [String: Any],
        log: String
    ) throws(CertificateTransparencyError)
        -> CertificateTransparencyLog.State
    {
        guard let (name, value) = object.first, object.count == 1 else {
            throw .malformedLogList("log \"\(log)\": its state must name exactly one state")
        }
        let timestamp = ((value as? [String: Any])?["timestamp"] as? String).flatMap(Self.date)
        switch name {
        case "usable": return .usable
        case "qualified": return .qualified
        case "readonly": return .readOnly(since: timestamp)
        case "retired":
            guard let timestamp else { throw .malformedLogList("log \"\(log)\": a retired state needs its timestamp") }
            return .retired(at: timestamp)
        case "pending", "rejected": return .other(name)
        default: throw .malformedLogList("log \"\(log)\": the state \"\(name)\" is not one of the log list's")
        }
    }

    static func date(_ text: String) -> Date? {
        (try? Date(text, strategy: .iso8601))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }
}
