import Foundation

/// A value guarded by a lock, shared between event-loop threads and the tests that read it.
///
/// `NIOLockedValueBox` lives in `NIOConcurrencyHelpers`, which this target does not declare, and
/// `Synchronization.Mutex` needs macOS 15; this box works everywhere the package builds.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body(&self.value)
    }
}
