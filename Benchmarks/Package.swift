// swift-tools-version: 6.1
import PackageDescription

// Micro-benchmarks (ordo-one/benchmark), kept in their own package so the main build and CI
// do not compile the benchmark tooling. Run: `cd Benchmarks && swift package benchmark`.
let package = Package(
    name: "FreshetBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Freshet", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
    ],
    targets: [
        .executableTarget(
            name: "FreshetBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Freshet", package: "Freshet"),
                .product(name: "FreshetCache", package: "Freshet"),
                .product(name: "GitHubAPI", package: "Freshet"),
                .product(name: "HackerNewsAPI", package: "Freshet"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            path: "Benchmarks/FreshetBenchmarks",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ],
    swiftLanguageModes: [.v6]
)
