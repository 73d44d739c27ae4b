/// The time one revocation evaluation may spend fetching, across every source and certificate: with it, soft mode
/// answers within the handshake's timeout even when every responder is black-holed, instead of failing closed when
/// the handshake's clock runs out first.
struct RevocationBudget: Sendable {
    /// When the budget is spent.
    let deadline: ContinuousClock.Instant
    /// The whole budget, for the words of an unknown status.
    let total: Duration

    /// A budget of `total` from now.
    init(_ total: Duration) {
        self.total = total
        self.deadline = ContinuousClock.now + total
    }

    /// Whether the budget is spent.
    var isSpent: Bool { ContinuousClock.now >= self.deadline }

    /// `total` in words: `4 s`, `1.5 s`.
    var text: String {
        let milliseconds = Int(self.total / .milliseconds(1))
        return milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000) s" : "\(Double(milliseconds) / 1_000) s"
    }

    /// The result of `operation`, or nil when the budget is spent first. The operation is not waited for then: it
    /// ends on its own (a fetch is bounded by its own timeout), and its result is dropped.
    func run<Value: Sendable>(_ operation: @escaping @Sendable () async -> Value) async -> Value? {
        guard !self.isSpent else { return nil }
        let resumed = LockedValue(false)
        let deadline = self.deadline
        var tasks: [Task<Void, Never>] = []
        let value: Value? = await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let once = { @Sendable (value: Value?) in
                let first = resumed.withLock { resumed -> Bool in
                    defer { resumed = true }
                    return !resumed
                }
                if first { continuation.resume(returning: value) }
            }
            tasks.append(Task { once(await operation()) })
            tasks.append(
                Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    once(nil)
                }
            )
        }
        tasks[1].cancel()
        return value
    }
}
