import Bulwark
import BulwarkOpenAPITransport
import BulwarkPolicy

/// README's OpenAPI block, on the generated client of this target's `openapi.yaml`. Compile-only (its pins are
/// placeholders); `BulwarkClientTransportTests` runs the same calls against a local server.
enum ReadmeTransportSample {
    static func generatedClient() async throws {
        // docs:begin readme-openapi-transport
        let bulwark = BulwarkClient(
            configuration: .init(
                trust: try ServerTrustManager(evaluators: [
                    "api.example.com": .publicKeys(try PinSet(["sha256/…", "sha256/…"]))
                ])
            )
        )
        let client = Client(serverURL: try Servers.Server1.url(), transport: BulwarkClientTransport(client: bulwark))
        let hello = try await client.getHello()
        // docs:end
        _ = hello
    }
}
