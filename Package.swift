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

        // A small safe layer over POSIX file operations: the one durable publication, crash points, typed errors.
        .target(name: "SystemKit"),
        .target(name: "SynchroProtocol", dependencies: ["CCrypto"]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite"]),
        .target(name: "SynchroHTTP", dependencies: ["CCurl", "SynchroProtocol"]),
        .target(name: "SynchroClient", dependencies: ["SynchroProtocol", "SQLiteKit", "SystemKit"]),
        .target(name: "SynchroServer", dependencies: ["SynchroProtocol", "SQLiteKit", "CMicroHTTPD", "CCrypto"]),
        .target(
            name: "SeedArtifacts",
            dependencies: [
                "SynchroProtocol", "SQLiteKit", "SynchroClient", "SynchroHTTP", "SystemKit", "CZstd", "CCrypto",
            ]),
        .target(
            name: "SeedPipeline",
            dependencies: [
                "SeedArtifacts", "SynchroClient", "SynchroHTTP", "SynchroProtocol", "SQLiteKit", "SynchroServer",
                "SystemKit",
            ]),
        .executableTarget(
            name: "seedkit",
            dependencies: [
                "SynchroProtocol", "SynchroServer", "SynchroClient", "SynchroHTTP", "SeedArtifacts", "SeedPipeline",
                "SQLiteKit",
            ]),
        .executableTarget(
            name: "seedkit-bench",
            dependencies: [
                "SynchroProtocol", "CCrypto", "CSQLite", "SynchroServer", "SynchroHTTP", "SQLiteKit", "SynchroClient",
                "SeedArtifacts",
            ],
            path: "Benchmarks/seedkit-bench"),

        .target(
            name: "_SeedkitTestSupport", dependencies: ["SynchroServer", "SynchroHTTP", "SynchroProtocol"],
            path: "Tests/_SeedkitTestSupport"),
        .testTarget(name: "SystemKitTests", dependencies: ["SystemKit", "_SeedkitTestSupport"]),
        .testTarget(name: "SynchroProtocolTests", dependencies: ["SynchroProtocol", "_SeedkitTestSupport"]),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SynchroClientTests",
            dependencies: [
                "SynchroClient", "SQLiteKit", "SynchroProtocol", "SynchroHTTP", "SynchroServer", "_SeedkitTestSupport",
            ]),
        .testTarget(
            name: "SynchroHTTPTests",
            dependencies: ["SynchroHTTP", "SynchroServer", "SynchroProtocol", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SynchroServerTests",
            dependencies: ["SynchroServer", "SynchroProtocol", "SynchroHTTP", "SQLiteKit", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SeedArtifactsTests",
            dependencies: [
                "SeedArtifacts", "SynchroClient", "SQLiteKit", "SynchroProtocol", "CZstd", "_SeedkitTestSupport",
            ]),
        .testTarget(
            name: "SeedPipelineTests",
            dependencies: ["SeedPipeline", "SeedArtifacts", "SynchroClient", "SQLiteKit", "SynchroProtocol", "_SeedkitTestSupport"]),
        .testTarget(
            name: "SeedkitCLITests",
            dependencies: ["SynchroProtocol", "SynchroHTTP", "SynchroServer", "SQLiteKit", "_SeedkitTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
