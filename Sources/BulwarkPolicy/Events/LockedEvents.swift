import Foundation

/// A lock-protected event list (BulwarkPolicy has no NIO dependency, so Foundation's lock is used).
final class LockedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [SecurityEvent] = []

    func append(_ event: SecurityEvent) {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.events.append(event)
    }

    var snapshot: [SecurityEvent] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.events
    }
}
