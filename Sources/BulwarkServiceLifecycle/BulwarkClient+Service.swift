import Bulwark
import ServiceLifecycle

/// A `BulwarkClient` is itself a `Service`, shut down on graceful shutdown with a grace period of 30
/// seconds for its requests in flight; ``BulwarkClientService`` chooses another.
extension BulwarkClient: Service {
    /// Runs as ``BulwarkClientService`` with a grace period of 30 seconds.
    public func run() async throws {
        try await BulwarkClientService(client: self).run()
    }
}
