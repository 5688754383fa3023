// swift-tools-version: 6.1
import PackageDescription

// Freshet: a typed, cache-aware HTTP API client for Swift 6, and terminal apps built on it.
// Module rules (docs/ARCHITECTURE.md §1): `Freshet` depends only on swift-openapi-runtime,
// swift-http-types, swift-log, swift-distributed-tracing, swift-metrics (their APIs only:
// Instrumentation, Tracing, CoreMetrics) and swift-async-algorithms — no NIO, GRDB or Hummingbird.
// The NIO-based default transport lives in `FreshetTransports` so an iOS app can take
// `Freshet` alone with `URLSessionTransport`.

/// Upcoming language features on for every target of ours (not for dependencies).
let upcoming: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]

let package = Package(
    name: "Freshet",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Freshet", targets: ["Freshet"]),
        .library(name: "FreshetTransports", targets: ["FreshetTransports"]),
        .library(name: "FreshetURLSession", targets: ["FreshetURLSession"]),
        .library(name: "FreshetCache", targets: ["FreshetCache"]),
        .library(name: "FreshetCombine", targets: ["FreshetCombine"]),
        .library(name: "GitHubAPI", targets: ["GitHubAPI"]),
        .library(name: "HackerNewsAPI", targets: ["HackerNewsAPI"]),
        .library(name: "DaumSearchAPI", targets: ["DaumSearchAPI"]),
        .library(name: "FreshetFeeds", targets: ["FreshetFeeds"]),
        .library(name: "FreshetTerminal", targets: ["FreshetTerminal"]),
        .library(name: "FreshetProxy", targets: ["FreshetProxy"]),
        .library(name: "FreshetPostgres", targets: ["FreshetPostgres"]),
        .library(name: "FreshetSimulator", targets: ["FreshetSimulator"]),
        .library(name: "FreshetTesting", targets: ["FreshetTesting"]),
        .executable(name: "freshet", targets: ["freshet"]),
        .executable(name: "freshet-sim", targets: ["freshet-sim"]),
        .executable(name: "news-combine", targets: ["news-combine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/onevcat/Rainbow", from: "4.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
        // Already in the graph through async-http-client; named here because HTTP1Transport uses them directly.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Already in the graph through swift-nio-extras; named because TLS pinning verifies chains with them.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        // The proxy builds its own HTTP/1.1 pipeline (Hummingbird's, plus the hit handler).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // Already in the graph through Hummingbird; named because FreshetProxy runs its server directly.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        // The fleet's shared cache (`freshet proxy --store postgres://…`) and its metrics; the
        // core's MetricsMiddleware takes swift-metrics' API (CoreMetrics) only.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Child processes in the tests: Foundation's Process.run() reads past its buffer in
        // Swift 6.3 on Linux (swift-corelibs-foundation issue 5472) and crashed the test process.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
        // The simulator's upload echo parses multipart bodies with it: a parser that is not ours.
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
        // Tracing: one span per exchange (TracingMiddleware), with any tracer (swift-otel, …).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        // gzip: the proxy decodes stored gzip bodies for clients that do not accept it, and the
        // simulator answers gzip when asked, as GitHub, Hacker News and Kakao do (zlib, not ours).
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "Freshet",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // Event streams hand each event to their reader one at a time (AsyncThrowingChannel).
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ]
        ),
        .target(
            name: "FreshetTransports",
            dependencies: [
                "Freshet",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                // TLS pinning: the verified chain (X509, SwiftASN1) and the pins' SHA-256 (Crypto).
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                // Transparent compression: gzip and deflate decoded by zlib (DecompressionMiddleware).
                .product(name: "CompressNIO", package: "compress-nio"),
                // Forward proxies: `socks5://` proxies for HTTP1Transport's connections.
                .product(name: "NIOSOCKS", package: "swift-nio-extras"),
            ]
        ),
        // URLSession as a transport, apart: on Linux, FoundationNetworking loads libcurl and some
        // 30 libraries at every start of a program that links it (~7 ms), used or not.
        .target(
            name: "FreshetURLSession",
            dependencies: [
                "Freshet", "FreshetTransports",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ]
        ),
        .target(
            name: "FreshetCache",
            dependencies: [
                "Freshet",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
        .target(
            name: "FreshetCombine",
            dependencies: [
                "Freshet",
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
            ]
        ),
        .target(name: "GitHubAPI", dependencies: ["Freshet", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .target(name: "HackerNewsAPI", dependencies: ["Freshet"]),
        .target(name: "DaumSearchAPI", dependencies: ["Freshet", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .target(
            name: "FreshetFeeds",
            dependencies: [
                "Freshet", "FreshetCache", "GitHubAPI", "HackerNewsAPI", "DaumSearchAPI",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the write-ahead log's checkpoint hook (AppDatabase).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                "CFreshetSQLite",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),
        // The one variadic SQLite call AppDatabase makes (`sqlite3_db_config`), which Swift cannot.
        .target(name: "CFreshetSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
        // How the apps look and read keys on a terminal: formats, styles (Rainbow), raw mode,
        // the live region and progress line, inline images.
        .target(
            name: "FreshetTerminal",
            dependencies: [
                "Freshet", "FreshetFeeds", "GitHubAPI", "HackerNewsAPI", "DaumSearchAPI",
                .product(name: "Rainbow", package: "Rainbow"),
            ]
        ),
        // Stubs for an app's tests: an in-memory transport with routes and recorded requests.
        .target(
            name: "FreshetTesting",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),
        .target(
            name: "FreshetSimulator",
            dependencies: [
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // `freshet proxy`'s library: the forwarder (the cache in front of an origin) and the server
        // (Hummingbird's HTTP/1.1 pipeline with the hit handler). The CLI only configures and runs it.
        .target(
            name: "FreshetProxy",
            dependencies: [
                "Freshet", "FreshetCache", "FreshetTransports",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"), // stored bodies into buffers in one copy
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // A cache store in PostgreSQL, shared by a fleet of proxies: in its own module so that the
        // core and SQLite users never link postgres-nio.
        .target(
            name: "FreshetPostgres",
            dependencies: [
                "Freshet", "FreshetCache",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "freshet",
            dependencies: [
                "Freshet", "FreshetTransports", "FreshetCache", "FreshetFeeds", "FreshetTerminal", "FreshetProxy", "FreshetPostgres", "GitHubAPI",
                "HackerNewsAPI", "DaumSearchAPI",
                "FreshetSimulator", // the built-in demo (`--demo`, FRESHET_DEMO=1)
                // `--transport urlsession` where URLSession is the system's; not on Linux (see FreshetURLSession).
                .target(name: "FreshetURLSession", condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"), // the demo's transport
                .product(name: "Rainbow", package: "Rainbow"),
                // `freshet proxy` runs the proxy and its operator endpoints in one ServiceGroup.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "freshet-sim",
            dependencies: [
                "FreshetSimulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // bench/run's Swift client for the throughput case (raw AsyncHTTPClient, URLSession and
        // Freshet side by side). In the main graph so one release build makes every benchmark binary.
        .executableTarget(
            name: "freshet-bench-client",
            dependencies: [
                "Freshet", "FreshetTransports",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            path: "bench/client"
        ),
        // bench/proxy-load's pass-through yardstick: the plainest forwarder on SwiftNIO.
        .executableTarget(
            name: "freshet-bench-forwarder",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "bench/forwarder"
        ),
        // The News app's Combine pipeline (merge, scan, sort) on FreshetCombine: `news-combine`.
        .executableTarget(
            name: "news-combine",
            dependencies: [
                "Freshet", "FreshetCombine", "FreshetFeeds", "FreshetTerminal", "FreshetTransports", "HackerNewsAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
            ],
            path: "Examples/news-combine"
        ),
        // Caps how many tests Swift Testing runs at once in the test process, so that the README's
        // plain `swift test` passes on a 2-core machine (Tests/CTestParallelism/parallelism.c).
        .target(name: "CTestParallelism", path: "Tests/CTestParallelism"),
        .target(
            name: "FreshetTestSupport",
            dependencies: [
                "CTestParallelism",
                "Freshet", "FreshetTransports", "FreshetSimulator", "FreshetCache",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                // NIO and NIOSSL for TLSOrigin, an https origin on loopback for HTTP1Transport's TLS test.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                // FilePath, which Subprocess takes: swift-system's off Apple platforms, System on them.
                .product(name: "SystemPackage", package: "swift-system", condition: .when(platforms: [.linux, .windows, .android])),
            ],
            path: "Tests/FreshetTestSupport"
        ),
        .testTarget(
            name: "FreshetTests",
            dependencies: [
                "Freshet", "FreshetTransports", "FreshetURLSession", "FreshetSimulator", "FreshetTestSupport",
                "GitHubAPI", "HackerNewsAPI", "DaumSearchAPI", "FreshetCache",
                // Crypto: the upload tests' digests; InMemoryTracing: the tracing middleware's spans;
                // MetricsTestKit: the metrics middleware's counters (TestMetrics); Prometheus: the
                // README's metrics example (already built for FreshetProxy).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                "FreshetFeeds", // the fuzz tests also feed the apps' HTML-to-text
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]),
        .testTarget(
            name: "FreshetTransportsTests",
            dependencies: [
                // FreshetSimulator for the fuzz tests' seeded generator.
                "Freshet", "FreshetTransports", "FreshetSimulator", "FreshetTestSupport",
                // gzip and deflate streams for the content decoder's tests.
                .product(name: "CompressNIO", package: "compress-nio"),
                // AsyncHTTPClient, NIO and NIOSSL: the TLS tests' trust roots and the error classifier's table.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                // The raw exchange's handler in an in-memory pipeline.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),
        .testTarget(name: "FreshetPostgresTests", dependencies: ["FreshetPostgres"]),
        .testTarget(
            name: "FreshetCacheTests",
            dependencies: [
                "Freshet", "FreshetCache", "FreshetSimulator", "FreshetTestSupport",
                "FreshetPostgres", // PostgresCacheStore runs the stores' shared tests too
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]),
        .testTarget(
            name: "FreshetFeedsTests",
            dependencies: [
                "Freshet", "FreshetCache", "FreshetFeeds", "FreshetSimulator", "FreshetTestSupport",
                "GitHubAPI", "HackerNewsAPI", "DaumSearchAPI",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]),
        .testTarget(
            name: "FreshetTerminalTests",
            dependencies: [
                "FreshetFeeds", "FreshetTerminal", "DaumSearchAPI",
                .product(name: "Rainbow", package: "Rainbow"),
            ]),
        .testTarget(
            name: "FreshetCombineTests",
            dependencies: [
                "Freshet", "FreshetCombine", "FreshetTestSupport",
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
            ]),
        .testTarget(
            name: "FreshetTestingTests",
            dependencies: [
                "Freshet", "FreshetTesting", "GitHubAPI",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]),
        .testTarget(name: "GitHubAPITests", dependencies: ["Freshet", "GitHubAPI", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "HackerNewsAPITests", dependencies: ["Freshet", "HackerNewsAPI", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "DaumSearchAPITests", dependencies: ["Freshet", "DaumSearchAPI", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(
            name: "FreshetSimulatorTests",
            dependencies: [
                "FreshetSimulator",
                // The gzip answers are decoded with a decoder of their own, not the simulator's path.
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // In-process tests of the simulator's routers (`app.test(.router)`).
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        // The proxy as a library: ProxyServer and its operator endpoints in process, in front of
        // an in-process simulator, over loopback.
        .testTarget(
            name: "FreshetProxyTests",
            dependencies: [
                "Freshet", "FreshetCache", "FreshetPostgres", "FreshetProxy", "FreshetSimulator", "FreshetTestSupport",
                "FreshetTransports",
                // gzip bodies as a client receives them, decoded by the tests with a decoder not the proxy's path.
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "NIOCore", package: "swift-nio"),
                // The raw hit path checked against NIO's own HTTP/1 codec, in memory.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "FreshetCLITests",
            // `freshet` is built for the tests to run as a process, not imported.
            dependencies: [
                "freshet", "news-combine", "Freshet", "FreshetSimulator", "FreshetTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + upcoming
}
