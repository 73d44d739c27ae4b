import BulwarkTestHelpers
import Foundation
import Testing

/// The manifest blocks of the articles are regions of Manifests/ExampleApp/Package.swift (see
/// `DocumentationSyncTests`); SwiftPM must load that manifest.
@Suite("The articles' package manifest loads", .tags(.externalPeers))
struct ManifestSampleTests {
    @Test func exampleAppManifestLoads() async throws {
        let manifest = DocumentationSyncTests.samplesFolder.appendingPathComponent("Manifests/ExampleApp/Package.swift")
        let result = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["swift", "package", "dump-package"],
            files: ["Package.swift": Array(try Data(contentsOf: manifest))],
            timeout: .seconds(120)
        )
        #expect(result.status == 0, "swift package dump-package: \(result.stderr)")
        let dump = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any]
        #expect(dump?["name"] as? String == "MyApp")
        let products = (dump?["targets"] as? [[String: Any]])?.first?["dependencies"].map { "\($0)" } ?? ""
        #expect(products.contains("Bulwark"))
    }
}
