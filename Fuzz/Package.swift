// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for Bulwark's parsers (issue 23). A separate package so the main package, its tests and CI's
// normal build stay uninstrumented. Build and run with `scripts/fuzz` from the repository root; every target has
// an oracle beyond "does not crash" (see README, "How Bulwark is tested").
let package = Package(
    name: "BulwarkFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Bulwark", path: ".."),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .target(name: "CFuzzDriver"),
        .executableTarget(
            name: "BulwarkFuzzPolicy",
            dependencies: [
                "CFuzzDriver",
                .product(name: "BulwarkAudit", package: "Bulwark"),
                .product(name: "BulwarkPolicy", package: "Bulwark"),
                .product(name: "BulwarkEncoding", package: "Bulwark"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The client's HTTP/1.1 and HTTP/2 pipeline: its handlers are internal, so this target imports Bulwark with
        // `@testable`, and scripts/fuzz builds the package with `-enable-testing`.
        .executableTarget(
            name: "BulwarkFuzzClient",
            dependencies: [
                "CFuzzDriver",
                .product(name: "Bulwark", package: "Bulwark"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
    ]
)
