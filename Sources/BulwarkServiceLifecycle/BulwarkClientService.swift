import Bulwark
import NIOCore
import ServiceLifecycle

/// A `BulwarkClient` as a swift-service-lifecycle `Service`, with the grace period of its shutdown.
///
/// ```swift
/// let client = BulwarkClient(configuration: configuration)
/// let group = ServiceGroup(
///     services: [BulwarkClientService(client: client, gracePeriod: .seconds(10)), server],
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger
/// )
/// try await group.run()
/// ```
///
/// Its ``run()`` waits until the group shuts down. On graceful shutdown it calls
/// `BulwarkClient.shutdown(gracePeriod:)`: new requests are refused, the requests in flight (response
/// bodies included) finish within the grace period, those still running then fail with
/// `BulwarkError.Code.clientShutdown`, and the connections close. When the service's task is cancelled
/// instead, in-flight requests fail at once. A `ServiceGroup` shuts its services down in reverse order, so list the
/// client before the services that use it: they stop first.
public struct BulwarkClientService: Service {
    /// The client the service shuts down.
    public let client: BulwarkClient
    /// How long requests in flight may go on after graceful shutdown is triggered.
    public var gracePeriod: TimeAmount

    /// A service shutting `client` down with `gracePeriod` for its requests in flight (30 seconds by default).
    public init(client: BulwarkClient, gracePeriod: TimeAmount = .seconds(30)) {
        self.client = client
        self.gracePeriod = gracePeriod
    }

    /// Waits for graceful shutdown or cancellation, then shuts the client down; never throws.
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled: no grace.
            await self.client.shutdown(gracePeriod: .zero)
            return
        }
        await self.client.shutdown(gracePeriod: self.gracePeriod)
    }
}
