import BulwarkPolicy
import NIOConcurrencyHelpers

/// The policy a client applies now (a ``LivePolicy``): the built-in one at first, then as a ``PolicyUpdater``
/// replaces it.
///
/// A request reads it once, when it starts (see `RequestExecutor.under(_:)`); a change is seen by every request that
/// starts after it. Each change raises the generation, which is part of every pool key: the pool retires the keys of
/// older generations, so connections made under a replaced policy are drained and never handed to a request that
/// read the new one.
final class PolicyStore: Sendable {
    private let policy: NIOLockedValueBox<LivePolicy>
    /// Held through a change and what follows it (retiring the pool's keys), so that two changes never apply out of
    /// order; requests never take it.
    private let serial = NIOLock()
    /// The client's configuration: the built-in policy, and what a policy file's omissions fall back to.
    let builtIn: BulwarkClient.Configuration

    init(_ configuration: BulwarkClient.Configuration) {
        self.builtIn = configuration
        self.policy = NIOLockedValueBox(LivePolicy(builtIn: configuration, generation: 0))
    }

    /// The policy now.
    var current: LivePolicy {
        self.policy.withLockedValue { $0 }
    }

    /// Installs `policy` as the next generation, then runs `apply` with it before any other change (to retire the
    /// older generations' connections). Returns the policy installed (with its generation) and what `apply` returned.
    func replace<Applied>(
        with policy: LivePolicy,
        then apply: (LivePolicy) -> Applied
    ) -> (LivePolicy, Applied) {
        self.serial.withLock {
            var next = policy
            next.generation = self.current.generation + 1
            self.policy.withLockedValue { $0 = next }
            return (next, apply(next))
        }
    }
}
