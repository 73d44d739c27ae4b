import Bulwark
import BulwarkServiceLifecycle
import Logging
import ServiceLifecycle

/// README's service-lifecycle block. Compile-only (it runs until a signal); `BulwarkClientServiceTests` runs the
/// service in a group.
enum ReadmeLifecycleSample {
    static func run(client: BulwarkClient, server: some Service, logger: Logger) async throws {
        // docs:begin readme-service-lifecycle
        let group = ServiceGroup(
            services: [BulwarkClientService(client: client, gracePeriod: .seconds(10)), server],
            gracefulShutdownSignals: [.sigterm],
            logger: logger
        )
        try await group.run()
        // docs:end
    }
}
