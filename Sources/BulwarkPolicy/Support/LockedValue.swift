import Foundation

/// A value guarded by a lock: the one lock box of the package.
///
/// `BulwarkPolicy` has no NIO dependency, so the box is built on Foundation's `NSLock` (`Synchronization.Mutex`
/// needs macOS 15, above the package's floor). Every module of the package uses this type through `package` access
/// instead of writing its own lock-and-value pair.
///
/// The value lives in memory of its own rather than in a stored `var`: a class's `var` is checked for exclusive
/// access at run time on every use (`swift_beginAccess` and `swift_endAccess`, about a hundred instructions), which
/// the lock already guarantees, and the trust path takes a dozen of these locks per handshake.
package final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private let value: UnsafeMutablePointer<Value>

    /// Creates a box holding `value`.
    package init(_ value: Value) {
        self.value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        self.value.deinitialize(count: 1)
        self.value.deallocate()
    }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body(&self.value.pointee)
    }

    /// A copy of the value, read under the lock.
    package var current: Value {
        self.withLock { $0 }
    }

    /// Replaces the value under the lock.
    package func set(_ newValue: Value) {
        self.withLock { $0 = newValue }
    }
}
