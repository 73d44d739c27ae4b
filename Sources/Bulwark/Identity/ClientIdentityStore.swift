import BulwarkPolicy
import NIOConcurrencyHelpers

/// The client identities a client offers now: ``BulwarkClient/Configuration/clientIdentities`` at first, then as
/// ``BulwarkClient/updateClientIdentity(_:for:sessionBound:)-(_,HostPattern,_)`` and ``BulwarkClient/signOut()`` change them.
///
/// A request reads its identity here once per attempt, when it chooses its pool key; a change is seen by every
/// request that chooses its key after it.
final class ClientIdentityStore: Sendable {
    private let identities: NIOLockedValueBox<BulwarkClient.ClientIdentities>
    /// Held through an update and what follows it (retiring the pool's keys), so that two updates never apply out
    /// of order; requests never take it.
    private let serial = NIOLock()

    init(_ identities: BulwarkClient.ClientIdentities) {
        self.identities = NIOLockedValueBox(identities)
    }

    /// The identities now.
    var current: BulwarkClient.ClientIdentities {
        self.identities.withLockedValue { $0 }
    }

    /// The identity offered now to connections with `scheme` to `host`: none over plain HTTP.
    func identity(scheme: String, host: String) -> ClientIdentity? {
        guard scheme == "https" else { return nil }
        return self.identities.withLockedValue { $0.identity(forHost: host)?.identity }
    }

    /// Changes the identities with `change`, then runs `apply` with the identities after it, before any other
    /// update: `apply` retires what the change made stale. Returns both results.
    func update<Changed, Applied>(
        _ change: (inout BulwarkClient.ClientIdentities) -> Changed,
        then apply: (BulwarkClient.ClientIdentities) -> Applied
    ) -> (changed: Changed, applied: Applied) {
        self.serial.withLock {
            let (changed, after) = self.identities.withLockedValue { identities in
                (change(&identities), identities)
            }
            return (changed, apply(after))
        }
    }
}
