// swift-tools-version: 6.1
import PackageDescription

// The Swift side of bench/run's client-throughput case, in its own package so the main
// Package.swift (and CI) never builds it. bench/run builds it in release with its own scratch
// path (`.build-bench-clients`) and runs:
//
//   freshet-bench-client --mode freshet|ahc|urlsession --url URL --requests N --concurrency C
let package = Package(
    name: "FreshetBenchClients",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Freshet", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .executableTarget(
            name: "freshet-bench-client",
            dependencies: [
                .product(name: "Freshet", package: "Freshet"),
                .product(name: "FreshetTransports", package: "Freshet"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
