import BulwarkPolicy

/// A value shared between a test and the callbacks it installs (monitors, providers, handlers), read and written
/// under the package's one lock box.
public final class SharedBox<Value: Sendable>: Sendable {
    private let storage: LockedValue<Value>

    /// Creates a box holding `value`.
    public init(_ value: Value) {
        self.storage = LockedValue(value)
    }

    /// The value now.
    public var value: Value {
        get { self.storage.current }
        set { self.storage.set(newValue) }
    }

    /// Changes the value under the lock and returns what `body` returns.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try self.storage.withLock(body)
    }
}

extension SharedBox {
    /// Appends `element` (for a box of an array).
    public func append<Element>(_ element: Element) where Value == [Element] {
        self.storage.withLock { $0.append(element) }
    }
}

/// Carries a value the compiler cannot prove `Sendable` into a closure that only reads it (a `Process`).
public final class UncheckedBox<Value>: @unchecked Sendable {
    /// The carried value.
    public let value: Value

    /// Wraps `value`.
    public init(_ value: Value) { self.value = value }
}
