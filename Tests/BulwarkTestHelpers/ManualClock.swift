import BulwarkPolicy
import Foundation

/// A wall clock the test moves by hand, for types that take a `now: () -> Date` function (caches, cookie jars,
/// credential stores).
public final class ManualClock: Sendable {
    private let current: LockedValue<Date>

    /// Creates a clock showing `start` (by default a fixed instant in November 2023).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        self.current = LockedValue(start)
    }

    /// The time the clock shows.
    public var now: Date { self.current.current }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) {
        self.current.withLock { $0 += seconds }
    }

    /// The clock as the `now` function the types under test take.
    public var function: @Sendable () -> Date { { self.now } }
}
