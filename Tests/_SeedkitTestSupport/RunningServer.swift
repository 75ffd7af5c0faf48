import Foundation
import PostgresKit
import Synchronization
import SynchroHTTP
import SynchroProtocol
import SynchroServer

/// A reference server on a free loopback port, serving a dataset from `seeds/`, with a raw JSON
/// client: black-box tests send exact bodies and read exact statuses and bytes.
public final class RunningServer: @unchecked Sendable {
    public let engine: SyncEngine
    public let clock: ManualServerClock
    public let baseURL: String
    /// The loopback port the server listens on.
    public let port: UInt16
    public let directory: TemporaryDirectory
    private let server: HTTPServer
    private let transport: CurlTransport

    /// Bearer secrets of the test users.
    public static let credentials = ["secret-alice": "alice", "secret-bob": "bob", "secret-carol": "carol"]
    public static let operatorToken = "secret-operator"

    /// What one request got back.
    public struct Reply: Sendable {
        public let status: Int
        public let headers: [(String, String)]
        public let body: [UInt8]

        public init(status: Int, headers: [(String, String)], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        public var json: JSONValue { (try? StrictJSONParser().parse(body)) ?? .null }
        public var object: JSONObject { json.objectValue ?? JSONObject([]) }
        public var errorCode: String? { object["error"]?.objectValue?["code"]?.stringValue }
        public var text: String { String(decoding: body, as: UTF8.self) }

        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    /// The stores a test server can keep its state in.
    public enum Store: Sendable {
        /// The embedded SQLite file `server.db` in ``directory``.
        case sqlite
        /// A new database of the shared ``PostgresCluster``.
        case postgres
    }

    /// The store of servers whose test does not name one: SQLite, or PostgreSQL when the environment sets
    /// `SEEDKIT_TEST_SERVER_STORE=postgres` (`scripts/run-tests.sh` runs the protocol suites a second time so).
    public static let defaultStore = Mutex(
        ProcessInfo.processInfo.environment["SEEDKIT_TEST_SERVER_STORE"] == "postgres" ? Store.postgres : .sqlite)

    /// The libpq connection string of the server's PostgreSQL database; nil on SQLite.
    public let postgresStore: String?

    /// The name of the server's PostgreSQL database; nil on SQLite.
    public var postgresDatabase: String? {
        postgresStore?.split(separator: " ").first { $0.hasPrefix("dbname=") }.map { String($0.dropFirst(7)) }
    }

    /// Starts a server for `dataset` (a folder name under `seeds/`) with `rows` rows in its large table; with
    /// `existing`, on the database another server left in that directory; with `sharing`, a second server process
    /// on the same PostgreSQL database as that one (its own engine, connection and port).
    public init(
        dataset name: String = "demo", rows: Int = 300, materialization: MaterializationMode = .immediate,
        minimumClientVersion: SemanticVersion? = nil, checkpointFrames: Int? = nil,
        reopening existing: TemporaryDirectory? = nil, store: Store? = nil, sharing: RunningServer? = nil,
        failedAuthenticationLimit: FailedAuthenticationLimit? = FailedAuthenticationLimit()
    ) throws {
        directory = try existing ?? TemporaryDirectory(prefix: "seedkit-server")
        clock = ManualServerClock()
        let dataset = try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/\(name)"))
        var configuration = ServerConfiguration(
            dataset: dataset, rowsOverride: rows, databasePath: directory.path("server.db"),
            credentials: Self.credentials, operatorToken: Self.operatorToken, clock: clock,
            minimumClientVersion: minimumClientVersion, materialization: materialization)
        configuration.checkpointFrames = checkpointFrames
        configuration.failedAuthenticationLimit = failedAuthenticationLimit
        let marker = directory.path("postgres-store")
        if let sharing {
            postgresStore = sharing.postgresStore
        } else if let remembered = try? String(contentsOfFile: marker, encoding: .utf8) {
            postgresStore = remembered
        } else if (store ?? Self.defaultStore.withLock { $0 }) == .postgres {
            postgresStore = try Self.newPostgresDatabase()
            try postgresStore?.write(toFile: marker, atomically: true, encoding: .utf8)
        } else {
            postgresStore = nil
        }
        configuration.postgresStore = postgresStore
        engine = try SyncEngine(configuration: configuration)
        server = HTTPServer(handler: engine)
        let port = try server.start(host: "127.0.0.1", port: 0)
        self.port = port
        baseURL = "http://127.0.0.1:\(port)"
        transport = try CurlTransport(configuration: .init(baseURL: baseURL))
    }

    deinit {
        server.stop()
    }

    /// Creates an empty database in the shared cluster and returns its connection string.
    private static func newPostgresDatabase() throws -> String {
        let name = try newPostgresDatabaseName()
        return try PostgresCluster.shared().socketConnectionString(database: name)
    }

    /// Creates an empty database in the shared cluster and returns its name.
    public static func newPostgresDatabaseName() throws -> String {
        let cluster = try PostgresCluster.shared()
        let name = "seedkit_server_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let admin = try PostgresConnection(connectionString: cluster.socketConnectionString())
        try admin.execute("CREATE DATABASE \(name)")
        return name
    }

    /// Sends `body` exactly as given.
    public func send(
        _ method: String = "POST", _ path: String, body: [UInt8], headers: [(String, String)]
    ) throws -> Reply {
        var transportHeaders = HTTPHeaders()
        for (name, value) in headers { transportHeaders.append(name: name, value: value) }
        let request = TransportRequest(
            method: TransportRequest.Method(rawValue: method) ?? .post, path: path, headers: transportHeaders, body: body)
        let response = try transport.send(request)
        return Reply(status: response.status, headers: response.headers.map { ($0.name, $0.value) }, body: response.body)
    }

    /// POSTs JSON text as `user` with the protocol headers.
    public func post(_ path: String, _ json: String, as user: String = "alice") throws -> Reply {
        try post(path, bytes: Array(json.utf8), as: user)
    }

    /// POSTs a JSON value (compact canonical form) as `user`.
    public func post(_ path: String, _ json: JSONValue, as user: String = "alice") throws -> Reply {
        try post(path, bytes: try CanonicalJSON.encode(json), as: user)
    }

    public func post(_ path: String, bytes: [UInt8], as user: String = "alice") throws -> Reply {
        try send("POST", path, body: bytes, headers: [
            ("Authorization", "Bearer secret-\(user)"), ("Content-Type", "application/json"),
        ])
    }
}
