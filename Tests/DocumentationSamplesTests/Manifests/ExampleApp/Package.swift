// swift-tools-version:6.2
// The package manifest of the "Getting started" and "Migrating from AsyncHTTPClient" articles: an application that
// depends on Bulwark. Not built; `ManifestSampleTests` has SwiftPM load it (`swift package dump-package`).
import PackageDescription

let package = Package(
    name: "MyApp",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [
        // docs:begin manifest-dependency
        .package(path: "../Bulwark")  // Bulwark has no release tag yet: depend on a checkout, or on a branch
        // docs:end
    ],
    targets: [
        .executableTarget(
            name: "MyApp",
            dependencies: [
                // docs:begin manifest-product
                .product(name: "Bulwark", package: "Bulwark")
                // docs:end
            ]
        )
    ]
)
