// swift-tools-version: 6.0
import PackageDescription

/// seedkit: portable seeds, a headless Synchro protocol 3 client and a reference server.
/// Module layout and dependency direction: see ARCHITECTURE.md in the shared folder.
let package = Package(
    name: "seedkit",
    products: [
        .executable(name: "seedkit", targets: ["seedkit"]),
        .library(name: "SynchroProtocol", targets: ["SynchroProtocol"]),
    ],
    targets: [
        // System libraries from Debian packages (see `make deps`).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        // A small safe layer over POSIX file operations: the one durable publication, crash points, typed errors.
        .target(name: "SystemKit"),
        .target(name: "SynchroProtocol", dependencies: ["CCrypto"]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite"]),
        .target(name: "PostgresKit", dependencies: ["CPQ"]),
        .target(name: "SynchroHTTP", dependencies: ["CCurl", "SynchroProtocol"]),
        .target(name: "SynchroStore", dependencies: ["SynchroProtocol", "SQLiteKit", "SystemKit"]),
        .target(name: "SynchroClient", dependencies: ["SynchroProtocol", "SQLiteKit", "SynchroStore", "SystemKit"]),
        .target(
            name: "SynchroServer", dependencies: ["SynchroProtocol", "SQLiteKit", "PostgresKit", "SystemKit", "CMicroHTTPD", "CCrypto"]),
        .target(
            name: "SeedArtifacts",
            dependencies: ["SynchroProtocol", "SQLiteKit", "SynchroStore", "SystemKit", "CZstd", "CCrypto"]),
        .target(
            name: "SeedSources",
            dependencies: ["SeedArtifacts", "SynchroHTTP", "SynchroProtocol", "PostgresKit", "SQLiteKit", "SystemKit"]),
        .target(
            name: "SeedPipeline",
            dependencies: [
                "SeedArtifacts", "SeedSources", "SynchroClient", "SynchroHTTP", "SynchroProtocol", "SQLiteKit",
                "SynchroServer", "SystemKit",
            ]),
        .executableTarget(
            name: "seedkit",
            dependencies: [
                "SynchroProtocol", "SynchroServer", "SynchroClient", "SynchroHTTP", "SeedArtifacts", "SeedSources",
                "SeedPipeline", "SQLiteKit", "SynchroStore", "SystemKit",
            ]),
        .executableTarget(
            name: "seedkit-bench",
            dependencies: [
                "SynchroProtocol", "CCrypto", "CSQLite", "SynchroServer", "SynchroHTTP", "SQLiteKit", "SynchroClient",
                "SeedArtifacts", "SeedSources", "PostgresKit", "_SeedkitTestSupport",
            ],
            path: "Benchmarks/seedkit-bench"),

        .target(
            name: "_SeedkitTestSupport",
            dependencies: ["SynchroServer", "SynchroHTTP", "SynchroProtocol", "PostgresKit", "SeedArtifacts"],
            path: "Tests/_SeedkitTestSupport"),
        .testTarget(name: "ArchitectureTests"),
        .testTarget(name: "SystemKitTests", dependencies: ["SystemKit", "_SeedkitTestSupport"]),
        .testTarget(name: "SynchroProtocolTests", dependencies: ["SynchroProtocol", "_SeedkitTestSupport"]),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit", "_SeedkitTestSupport"]),
        .testTarget(name: "PostgresKitTests", dependencies: ["PostgresKit", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SynchroStoreTests",
            dependencies: ["SynchroStore", "SynchroProtocol", "SQLiteKit", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SynchroClientTests",
            dependencies: [
                "SynchroClient", "SynchroStore", "SynchroProtocol", "SQLiteKit", "SynchroHTTP", "SynchroServer",
                "_SeedkitTestSupport",
            ]),
        .testTarget(
            name: "SynchroHTTPTests",
            dependencies: ["SynchroHTTP", "SynchroServer", "SynchroProtocol", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SynchroServerTests",
            dependencies: ["SynchroServer", "SynchroHTTP", "SynchroProtocol", "SQLiteKit", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SeedArtifactsTests",
            dependencies: [
                "SeedArtifacts", "SeedSources", "SynchroClient", "SynchroStore", "SynchroProtocol", "SQLiteKit", "CZstd",
                "_SeedkitTestSupport",
            ]),
        .testTarget(
            name: "SeedSourcesTests",
            dependencies: [
                "SeedSources", "SeedArtifacts", "PostgresKit", "SynchroProtocol", "SynchroHTTP", "SynchroServer",
                "SQLiteKit", "_SeedkitTestSupport",
            ]),
        .testTarget(
            name: "SeedPipelineTests",
            dependencies: [
                "SeedPipeline", "SeedSources", "SeedArtifacts", "SynchroProtocol", "SynchroServer", "SQLiteKit",
                "PostgresKit", "_SeedkitTestSupport",
            ]),
        .testTarget(
            name: "SeedkitCLITests",
            dependencies: ["SynchroHTTP", "SynchroServer", "SynchroProtocol", "SQLiteKit", "_SeedkitTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
