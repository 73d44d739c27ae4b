import BulwarkPolicy
import Foundation

/// Appends every event to a ``TamperEvidentLog``. A failed write is reported to `onError` (standard error by
/// default), never thrown into the code that caused the event. Call `log.close()` when the client is shut down, so
/// that the log ends with its close checkpoint.
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
