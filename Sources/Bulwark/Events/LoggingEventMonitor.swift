import BulwarkPolicy
import Logging

/// Writes every security event to a swift-log `Logger` with structured metadata: `bulwark.event`, `bulwark.host`,
/// `bulwark.reason`, `bulwark.request_id` and each detail as `bulwark.detail.CODE` (its
/// ``/BulwarkPolicy/SecurityEvent/DetailKey/code``) with the detail's stable text form
/// (``/BulwarkPolicy/SecurityEvent/DetailValue/description``).
///
/// Refusals and insecure options log at `warning`, everything else at `info`; raise the logger's level to hide
/// the routine ones.
public struct LoggingEventMonitor: EventMonitor {
    /// The logger events are written to.
    public let logger: Logger

    /// A monitor that writes to `logger` (by default one labelled `bulwark.security`).
    public init(logger: Logger = Logger(label: "bulwark.security")) {
        self.logger = logger
    }

    /// Logs `event` with its metadata: refusals and insecure options at `warning`, everything else at `info`.
    public func record(_ event: SecurityEvent) {
        var metadata: Logger.Metadata = ["bulwark.event": .string(event.kind.name)]
        if let host = event.host { metadata["bulwark.host"] = .string(host) }
        if let reason = event.reason { metadata["bulwark.reason"] = .string(reason) }
        if let requestID = event.requestID { metadata["bulwark.request_id"] = .stringConvertible(requestID) }
        for (key, value) in event.details { metadata["bulwark.detail.\(key.code)"] = .string(value.description) }
        self.logger.log(level: Self.level(of: event.kind), "\(event.description)", metadata: metadata)
    }

    static func level(of kind: SecurityEvent.Kind) -> Logger.Level {
        switch kind {
        case .trustRefused, .pinFailed, .redirectRefused, .requestRefusedByAllowlist, .insecureOptionUsed,
            .reportOnlyViolation:
            return .warning
        default:
            return .info
        }
    }
}
