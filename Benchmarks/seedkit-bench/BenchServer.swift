import Foundation
import SynchroHTTP
import SynchroProtocol
import SynchroServer

/// The reference server started in-process on loopback for the server benchmarks, with a temporary
/// database and the demo dataset, spoken to over real HTTP through ``CurlTransport`` exactly as a
/// client would (`spec/wire-protocol.md` §1).
final class BenchServer {
    /// The bearer credential of the one benchmark user.
    static let user = "alice"
    /// The bearer secret of ``user`` (clients of the engine benchmarks authenticate with it).
    static let credential = "bench-secret-alice"
    /// The operator credential (seed export routes).
    static let operatorToken = "bench-operator"

    let engine: SyncEngine
    /// How long creating the database and loading the dataset took (not part of any figure).
    let loadDuration: Duration
    /// `http://127.0.0.1:PORT`.
    let baseURL: String
    private let server: HTTPServer
    private let transport: CurlTransport
    private let directory: URL

    /// Starts a server for `seeds/demo` with `catalogRows` rows in its overridable table, on SQLite or, with
    /// `postgresStore` (a libpq connection string), on PostgreSQL.
    init(catalogRows: Int, postgresStore: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("seedkit-bench-\(UUID().uuidString.lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let dataset = try Dataset(directory: try Self.demoDirectory())
        var configuration = ServerConfiguration(
            dataset: dataset, rowsOverride: catalogRows,
            databasePath: directory.appendingPathComponent("server.db").path,
            credentials: [Self.credential: Self.user], operatorToken: Self.operatorToken, materialization: .immediate)
        configuration.postgresStore = postgresStore
        let clock = ContinuousClock()
        let start = clock.now
        engine = try SyncEngine(configuration: configuration)
        loadDuration = start.duration(to: clock.now)
        server = HTTPServer(handler: engine)
        let port = try server.start(host: "127.0.0.1", port: 0)
        baseURL = "http://127.0.0.1:\(port)"
        var transportConfiguration = CurlTransport.Configuration(baseURL: baseURL)
        transportConfiguration.totalTimeout = .seconds(600)
        transport = try CurlTransport(configuration: transportConfiguration)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A temporary file path beside the server's database (baselines write there).
    func scratchPath(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    /// POSTs `body` as the benchmark user with the protocol headers; returns status and body.
    func post(_ path: String, _ body: [UInt8]) throws -> (status: Int, body: [UInt8]) {
        let request = TransportRequest.protocolPost(
            path: path, body: body, credential: Self.credential, appVersion: "1.0.0")
        let response = try transport.send(request)
        return (response.status, response.body)
    }

    /// POSTs and requires HTTP 200; the failure names the route and status, never the body.
    func postOK(_ path: String, _ body: [UInt8]) throws -> [UInt8] {
        let reply = try post(path, body)
        guard reply.status == 200 else {
            let code = (try? StrictJSONParser().parse(reply.body))?.objectValue?["error"]?.objectValue?["code"]
            throw BenchmarkFailure("\(path) answered \(reply.status) \(code?.stringValue ?? "")")
        }
        return reply.body
    }

    /// `seeds/demo` of this repository: beside the current directory (`make bench`) or found from
    /// this source file's location.
    static func demoDirectory() throws -> URL {
        let candidates = [
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("seeds/demo"),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("seeds/demo"),
        ]
        guard let found = candidates.first(where: {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("dataset.json").path)
        }) else { throw BenchmarkFailure("seeds/demo not found; run from the repository root") }
        return found
    }
}

/// A connected protocol client of a ``BenchServer``: its identity, generation and schema, and
/// builders for exact request bodies.
struct BenchClient {
    let clientID: String
    let generation: Int64
    /// `{"version":…,"hash":…}` as canonical JSON text.
    let schemaText: String
    let manifest: SchemaManifest
    let scopeSetVersion: Int64

    /// Connects a fresh client (`spec/wire-protocol.md` §3.8).
    static func connect(_ server: BenchServer, clientID: String) throws -> BenchClient {
        let body = """
            {"client_id":"\(clientID)","platform":"bench","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """
        let reply = try StrictJSONParser().parse(try server.postOK("/sync/connect", Array(body.utf8)))
        guard let object = reply.objectValue, let schema = object["schema"]?.objectValue,
              let version = schema["version"], let hash = schema["hash"],
              let generation = object["client_generation"]?.numberValue?.exactInt64,
              let scopeSetVersion = object["scope_set_version"]?.numberValue?.exactInt64,
              let definition = object["schema_definition"]
        else { throw BenchmarkFailure("connect response lacks members") }
        let reference = JSONValue.object(JSONObject([JSONMember("version", version), JSONMember("hash", hash)]))
        return BenchClient(
            clientID: clientID, generation: generation, schemaText: try CanonicalJSON.string(reference),
            manifest: try SchemaManifest(json: definition), scopeSetVersion: scopeSetVersion)
    }

    func rebuildBody(scope: String, rebuildID: String, cursor: String?, limit: Int) -> [UInt8] {
        let cursorText = cursor.map { "\"\($0)\"" } ?? "null"
        return Array("""
            {"client_id":"\(clientID)","client_generation":\(generation),"schema":\(schemaText),\
            "scope":"\(scope)","rebuild_id":"\(rebuildID)","cursor":\(cursorText),"limit":\(limit)}
            """.utf8)
    }

    func pullBody(scopes: [(String, String?)], limit: Int) -> [UInt8] {
        let map = scopes.map { scope, cursor in
            "\"\(scope)\":{\"cursor\":\(cursor.map { "\"\($0)\"" } ?? "null")}"
        }.joined(separator: ",")
        return Array("""
            {"client_id":"\(clientID)","client_generation":\(generation),"schema":\(schemaText),\
            "scope_set_version":\(scopeSetVersion),"scopes":{\(map)},"limit":\(limit)}
            """.utf8)
    }

    /// A push of `notes` inserts into `tbl_notes` owned by the benchmark user; `first` numbers the
    /// batch, mutation and note identities so that every call is new to the server.
    func notePushBody(batch: Int, first: Int, count: Int) -> [UInt8] {
        var text = """
            {"client_id":"\(clientID)","client_generation":\(generation),"batch_id":"\(Self.uuid(batch))",\
            "schema":\(schemaText),"mutations":[
            """
        for n in first..<(first + count) {
            if n > first { text += "," }
            text += """
                {"mutation_id":"\(Self.uuid(0x4000_0000 + n))","table":"tbl_notes",\
                "pk":{"fld_note_id":"bench-note-\(n)"},"authored_schema":\(schemaText),"op":"insert",\
                "client_version":"2026-10-12T09:29:40.118000Z","columns":{"fld_note_owner":"\(BenchServer.user)",\
                "fld_note_title":"Benchmark note \(n)","fld_note_body":"Seven words of body text for note \(n)",\
                "fld_note_pinned":\(n % 7 == 0),"fld_note_score":"\(n % 200 - 100).5"}}
                """
        }
        text += "]}"
        return Array(text.utf8)
    }

    /// A canonical lowercase non-nil UUID numbered `n`, distinct for every `n`.
    static func uuid(_ n: Int) -> String {
        let hex = String(UInt64(n) + 1, radix: 16)
        return "0193f0a4-5c1e-7b21-8e4d-" + String(repeating: "0", count: max(0, 12 - hex.count)) + hex
    }
}

/// One row as the server keeps it, re-encoded canonically from a parsed response: what the raw
/// SQLite baseline inserts.
struct StoredRowImage {
    let identity: [UInt8]
    let tableID: String
    let pk: [UInt8]
    let row: [UInt8]
    let serverVersion: String
    let digest: [UInt8]

    /// From a rebuild record, a pull change with a row, or a push outcome (`server_row`).
    init(_ object: JSONObject, rowMember: String, manifest: SchemaManifest) throws {
        guard let table = object["table"]?.stringValue, let key = object["pk"]?.objectValue?.members.first?.value,
              let row = object[rowMember], let version = object["server_version"]?.stringValue,
              let digest = object["row_checksum"]?.objectValue?["digest"]?.stringValue.flatMap(Hex.decode)
        else { throw BenchmarkFailure("a response row lacks members") }
        identity = try RowIdentity(manifest: manifest, tableID: table, primaryKey: key).bytes
        tableID = table
        pk = try CanonicalJSON.encode(key)
        self.row = try CanonicalJSON.encode(row)
        serverVersion = version
        self.digest = digest
    }
}
