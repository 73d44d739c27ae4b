import BulwarkTestHelpers
import Foundation
import Testing

/// What a package that depends on Bulwark resolves and fetches (issue 42).
@Suite("A package depending on Bulwark resolves no test-only package", .tags(.externalPeers, .alone))
struct DependentPackageTests {
    /// What a user's package fetches for `.product(name: "Bulwark")` (issue 42): SwiftPM resolves only what the
    /// products it uses need, so AsyncHTTPClient, swift-openapi-async-http-client (the OpenAPI comparison tests) and
    /// swift-docc-plugin (the documentation build), which only Bulwark's own tests and scripts use, are neither in its
    /// Package.resolved nor fetched. The example manifest resolves against this checkout (a link named Bulwark).
    @Test func aDependentPackageResolvesNoTestOnlyPackage() async throws {
        let manager = FileManager.default
        let folder = manager.temporaryDirectory.appending(path: "bulwark-dependent-\(UUID().uuidString.prefix(12))")
        let app = folder.appending(path: "MyApp")
        try manager.createDirectory(at: app.appending(path: "Sources/MyApp"), withIntermediateDirectories: true)
        defer { try? manager.removeItem(at: folder) }
        try manager.createSymbolicLink(
            at: folder.appending(path: "Bulwark"),
            withDestinationURL: DocumentationSyncTests.root
        )
        let manifest = DocumentationSyncTests.samplesFolder.appendingPathComponent("Manifests/ExampleApp/Package.swift")
        try Data(contentsOf: manifest).write(to: app.appending(path: "Package.swift"))
        try Data("import Bulwark\n".utf8).write(to: app.appending(path: "Sources/MyApp/main.swift"))

        let result = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["swift", "package", "--package-path", app.path, "resolve"],
            timeout: .seconds(300)
        )
        #expect(result.status == 0, "swift package resolve: \(result.stderr)")
        let resolved = try JSONSerialization.jsonObject(with: Data(contentsOf: app.appending(path: "Package.resolved")))
        let pins = (resolved as? [String: Any])?["pins"] as? [[String: Any]] ?? []
        let identities = pins.compactMap { $0["identity"] as? String }.sorted()
        #expect(
            identities == [
                "swift-algorithms", "swift-argument-parser", "swift-asn1", "swift-async-algorithms", "swift-atomics",
                "swift-certificates", "swift-collections", "swift-crypto", "swift-distributed-tracing",
                "swift-http-structured-headers", "swift-http-types", "swift-log", "swift-metrics", "swift-nio",
                "swift-nio-extras", "swift-nio-http2", "swift-nio-ssl", "swift-numerics", "swift-openapi-runtime",
                "swift-service-lifecycle", "swift-system",
            ],
            "\(identities)"
        )
        let fetched = try manager.contentsOfDirectory(atPath: app.appending(path: ".build/checkouts").path)
        for testOnly in ["async-http-client", "swift-openapi-async-http-client", "swift-docc-plugin"] {
            #expect(!identities.contains(testOnly))
            #expect(!fetched.contains(testOnly), "\(testOnly) was fetched: \(fetched.sorted())")
        }
    }
}
