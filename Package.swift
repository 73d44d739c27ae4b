// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "Bulwark",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "BulwarkEncoding", targets: ["BulwarkEncoding"]),
        .library(name: "BulwarkPolicy", targets: ["BulwarkPolicy"]),
        .library(name: "BulwarkAudit", targets: ["BulwarkAudit"]),
        .library(name: "Bulwark", targets: ["Bulwark"]),
        .library(name: "BulwarkOpenAPITransport", targets: ["BulwarkOpenAPITransport"]),
        .library(name: "BulwarkServiceLifecycle", targets: ["BulwarkServiceLifecycle"]),
        .library(name: "BulwarkTestSupport", targets: ["BulwarkTestSupport"]),
        .library(name: "BulwarkLimbo", targets: ["BulwarkLimbo"]),
        .executable(name: "bulwark", targets: ["bulwark"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Test-only: the reference transport that the OpenAPI transport tests compare against. No product uses them,
        // so a package that depends on Bulwark neither resolves nor fetches them (ManifestSampleTests checks).
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        // `swift package generate-documentation` (scripts/test builds the Bulwark and BulwarkPolicy catalogs with
        // warnings as errors). A command plugin: nothing of it is linked into Bulwark.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        .target(name: "CBulwarkVector"),
        // Context-aware output encoders (HTML, attributes, JavaScript strings, URL components) and SafeHTML/SafeURL;
        // depends on nothing else of Bulwark.
        .target(name: "BulwarkEncoding", dependencies: ["CBulwarkVector"]),
        .target(
            name: "BulwarkPolicy",
            dependencies: [
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "BulwarkAudit",
            dependencies: ["BulwarkPolicy", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "Bulwark",
            dependencies: [
                "BulwarkPolicy",
                "BulwarkEncoding",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The swift-openapi-runtime ClientTransport over BulwarkClient; its own product so that the core library does
        // not depend on OpenAPI.
        .target(
            name: "BulwarkOpenAPITransport",
            dependencies: [
                "Bulwark",
                "BulwarkPolicy",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // BulwarkClient as a swift-service-lifecycle Service; its own product so that the core library does not pull
        // swift-service-lifecycle and swift-async-algorithms.
        .target(
            name: "BulwarkServiceLifecycle",
            dependencies: [
                "Bulwark",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "BulwarkTestSupport",
            dependencies: [
                "BulwarkPolicy",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        .target(
            name: "BulwarkLimbo",
            dependencies: ["BulwarkPolicy", .product(name: "X509", package: "swift-certificates")]
        ),
        .executableTarget(
            name: "bulwark",
            dependencies: [
                "BulwarkLimbo",
                "Bulwark",
                "BulwarkAudit",
                "BulwarkPolicy",
                "BulwarkTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The one home of helpers shared by the test targets (process runner, seeded generator, clocks, boxes,
        // the tags that place a suite in its scripts/test process). Not a product.
        .target(
            name: "BulwarkTestHelpers",
            dependencies: ["BulwarkPolicy", "BulwarkTestSupport"],
            path: "Tests/BulwarkTestHelpers"
        ),
        .testTarget(
            name: "BulwarkEncodingTests",
            dependencies: ["BulwarkEncoding", "BulwarkTestHelpers"]
        ),
        .testTarget(
            name: "BulwarkPolicyTests",
            dependencies: ["BulwarkPolicy", "BulwarkTestSupport", "BulwarkLimbo", "BulwarkTestHelpers"]
        ),
        .testTarget(
            name: "BulwarkAuditTests",
            dependencies: [
                "BulwarkAudit", "BulwarkPolicy", "BulwarkTestHelpers", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BulwarkTests",
            dependencies: [
                "Bulwark",
                "BulwarkAudit",
                "BulwarkTestSupport",
                "BulwarkTestHelpers",
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "BulwarkOpenAPITransportTests",
            dependencies: [
                "Bulwark",
                "BulwarkPolicy",
                "BulwarkOpenAPITransport",
                "BulwarkTestSupport",
                "BulwarkTestHelpers",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml", "Generated/README.md"]
        ),
        .testTarget(
            name: "BulwarkServiceLifecycleTests",
            dependencies: [
                "Bulwark",
                "BulwarkServiceLifecycle",
                "BulwarkTestSupport",
                "BulwarkTestHelpers",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Every Swift code block of README.md and of the documentation catalogs, compiled (and run where a local
        // server can answer it), and the test that keeps those blocks equal to these samples.
        .testTarget(
            name: "DocumentationSamplesTests",
            dependencies: [
                "Bulwark",
                "BulwarkAudit",
                "BulwarkPolicy",
                "BulwarkTestSupport",
                "BulwarkTestHelpers",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // A manifest the articles show; ManifestSampleTests has SwiftPM load it.
            exclude: ["Manifests"]
        ),
    ]
)
