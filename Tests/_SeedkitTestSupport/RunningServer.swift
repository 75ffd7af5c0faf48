import Foundation
import SynchroHTTP
import SynchroProtocol
import SynchroServer

/// A reference server on a free loopback port, serving a dataset from `seeds/`, with a raw JSON
/// client: black-box tests send exact bodies and read exact statuses and bytes.
public final class RunningServer: @unchecked Sendable {
    public let engine: SyncEngine
    public let clock: ManualServerClock
    public let baseURL: String
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

        public var json: JSONValue { (try? StrictJSONParser().parse(body)) ?? .null }
        public var object: JSONObject { json.objectValue ?? JSONObject([]) }
        public var errorCode: String? { object["error"]?.objectValue?["code"]?.stringValue }
        public var text: String { String(decoding: body, as: UTF8.self) }

        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    /// Starts a server for `dataset` (a folder name under `seeds/`) with `rows` rows in its large table; with
    /// `existing`, on the database another server left in that directory.
    public init(
        dataset name: String = "demo", rows: Int = 300, materialization: MaterializationMode = .immediate,
        minimumClientVersion: SemanticVersion? = nil, checkpointFrames: Int? = nil,
        reopening existing: TemporaryDirectory? = nil
    ) throws {
        directory = try existing ?? TemporaryDirectory(prefix: "seedkit-server")
        clock = ManualServerClock()
        let dataset = try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/\(name)"))
        var configuration = ServerConfiguration(
            dataset: dataset, rowsOverride: rows, databasePath: directory.path("server.db"),
            credentials: Self.credentials, operatorToken: Self.operatorToken, clock: clock,
            minimumClientVersion: minimumClientVersion, materialization: materialization)
        configuration.checkpointFrames = checkpointFrames
        engine = try SyncEngine(configuration: configuration)
        server = HTTPServer(handler: engine)
        let port = try server.start(host: "127.0.0.1", port: 0)
        baseURL = "http://127.0.0.1:\(port)"
        transport = try CurlTransport(configuration: .init(baseURL: baseURL))
    }

    deinit {
        server.stop()
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
