// swift-tools-version:6.0
import PackageDescription

// Benchmarks for Bulwark against AsyncHTTPClient. A separate package so the main package and CI stay light.
// Run with `scripts/bench` from the repository root.
let package = Package(
    name: "BulwarkBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Bulwark", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .executableTarget(
            name: "BulwarkBench",
            dependencies: [
                .product(name: "Bulwark", package: "Bulwark"),
                .product(name: "BulwarkTestSupport", package: "Bulwark"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
        )
    ]
)
