import Foundation
import SynchroHTTP
import SynchroProtocol
import SynchroServer
import _SeedkitTestSupport

/// The crash harness's reference server: the demo dataset on loopback like ``RunningServer``, with the test users'
/// credentials, but answering 429 and 503 with `Retry-After: 1` instead of upstream's 5 s, so that the hundreds of
/// injected refusals of `make crash` cost a second each in the child's real backoff, not five.
final class HarnessServer {
    let engine: SyncEngine
    let baseURL: String
    let directory: TemporaryDirectory
    private let server: HTTPServer
    private let transport: CurlTransport

    init(rows: Int) throws {
        directory = try TemporaryDirectory(prefix: "seedkit-harness-server")
        let dataset = try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/demo"))
        engine = try SyncEngine(configuration: ServerConfiguration(
            dataset: dataset, rowsOverride: rows, databasePath: directory.path("server.db"),
            credentials: RunningServer.credentials, operatorToken: RunningServer.operatorToken,
            clock: ManualServerClock(), retryAfterSeconds: 1))
        server = HTTPServer(handler: engine)
        let port = try server.start(host: "127.0.0.1", port: 0)
        baseURL = "http://127.0.0.1:\(port)"
        transport = try CurlTransport(configuration: .init(baseURL: baseURL))
    }

    deinit {
        server.stop()
    }

    /// Sends one request with the operator credential and returns the status and the parsed body.
    func operatorRequest(_ method: TransportRequest.Method, _ path: String, body: [UInt8] = []) throws -> (
        status: Int, json: JSONValue
    ) {
        var headers = HTTPHeaders()
        headers.append(name: "Authorization", value: "Bearer \(RunningServer.operatorToken)")
        headers.append(name: "Content-Type", value: "application/json")
        let response = try transport.send(TransportRequest(method: method, path: path, headers: headers, body: body))
        return (response.status, (try? StrictJSONParser().parse(response.body)) ?? .null)
    }

    /// Publishes the next manifest version with one more nullable string field in `tbl_notes`: a Class 2 change
    /// (connect answers `replace`), or declared Class 3 for every user scope (`rebuild_local` of `user:<user>`).
    func publishNoteField(_ fieldID: String, name: String, classThree: Bool = false) throws {
        let current = try operatorRequest(.get, "/sync/schema")
        guard current.status == 200, let object = current.json.objectValue else {
            throw HarnessError("GET /sync/schema answered \(current.status)")
        }
        let tables = (object["tables"]?.arrayValue ?? []).map { table -> JSONValue in
            guard let table = table.objectValue, table["table_id"] == .string("tbl_notes") else { return table }
            return .object(JSONObject(table.members.map { member in
                guard member.key == "fields", let fields = member.value.arrayValue else { return member }
                return JSONMember("fields", .array(fields + [.object(JSONObject([
                    JSONMember("field_id", .string(fieldID)), JSONMember("name", .string(name)),
                    JSONMember("type", .string("string")), JSONMember("nullable", .bool(true)),
                    JSONMember("writable", .bool(true)),
                ]))]))
            }))
        }
        let body = try SuccessorManifest.publication(
            of: object, tables: tables, transition: classThree ? "class_3" : "class_2",
            keepsCompatibilityFloor: !classThree, affectedScopes: classThree ? ["user:{user}"] : nil)
        let published = try operatorRequest(.post, "/operator/schema", body: body)
        guard published.status == 200 else { throw HarnessError("schema publication answered \(published.status)") }
    }
}

/// The operator publication of the next version of a served manifest, for tests that change the schema.
enum SuccessorManifest {
    /// The canonical `POST /operator/schema` body: `current` with `tables`, the next version, `current` as parent,
    /// `transition`, the compatibility floor kept (or 1) when `keepsCompatibilityFloor` and the new version
    /// otherwise, a recomputed hash, and `affected_scopes` when given.
    static func publication(
        of current: JSONObject, tables: [JSONValue], transition: String, keepsCompatibilityFloor: Bool,
        affectedScopes: [String]?
    ) throws -> [UInt8] {
        let parent = try SchemaManifest(json: .object(current))
        let version = parent.schemaVersion + 1
        var members = current.members.filter {
            !["schema_version", "schema_hash", "parent_schema", "transition_class", "compatibility_floor", "tables"]
                .contains($0.key)
        }
        members += [
            JSONMember("tables", .array(tables)),
            JSONMember("schema_version", .number(JSONNumber(version))),
            JSONMember("parent_schema", .object(JSONObject([
                JSONMember("version", .number(JSONNumber(parent.schemaVersion))),
                JSONMember("hash", .string(parent.schemaHash)),
            ]))),
            JSONMember("transition_class", .string(transition)),
            JSONMember("compatibility_floor", keepsCompatibilityFloor
                ? current["compatibility_floor"] ?? .number(JSONNumber(1)) : .number(JSONNumber(version))),
        ]
        let hash = try SchemaManifest.computeHash(json: .object(JSONObject(members)))
        let manifest = JSONValue.object(JSONObject(members + [JSONMember("schema_hash", .string(hash))]))
        var request = [JSONMember("manifest", manifest)]
        if let affectedScopes {
            request.append(JSONMember("affected_scopes", .array(affectedScopes.map(JSONValue.string))))
        }
        return try CanonicalJSON.encode(.object(JSONObject(request)))
    }
}
