import Foundation
import SQLiteKit
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A staging server for drills: `seedkit serve` in a subprocess, credentials from the environment (never argv),
/// with the operator routes a staging operator uses (faults, schema publication). Stopped with SIGTERM.
final class DrillServer {
    static let operatorToken = "drill-operator-secret"
    static let tokens = ["alice": "drill-alice-secret", "bob": "drill-bob-secret"]

    let directory: TemporaryDirectory
    let url: String
    private let process = Process()
    private let transport: CurlTransport

    /// `rows`: rows of the dataset's large table. The long form (`make drills`) serves more.
    init(rows: Int = DrillScale.rows) throws {
        directory = try TemporaryDirectory(prefix: "seedkit-drill")
        process.executableURL = SeedkitProcess.executable
        process.arguments = [
            "serve", "--dataset", RepositoryLayout.root.appendingPathComponent("seeds/demo").path, "--rows",
            String(rows), "--db", directory.path("server.db"), "--listen", "127.0.0.1:0",
        ]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "SEEDKIT_TOKENS": Self.tokens.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: ","),
            "SEEDKIT_OPERATOR_TOKEN": Self.operatorToken,
        ]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try process.run()
        url = String(ServeCommandTests.firstLine(of: output).dropFirst("listening on ".count))
        transport = try CurlTransport(configuration: .init(baseURL: url))
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    /// Schedules one fault (`docs/server.md`, "Fault injection").
    func fault(_ members: [JSONMember]) throws {
        let (status, body) = try send("POST", "/operator/faults", CanonicalJSON.encode(.object(JSONObject(members))), [
            ("Authorization", "Bearer \(Self.operatorToken)"), ("Content-Type", "application/json"),
        ])
        try #require(status == 200, "fault refused: \(String(decoding: body, as: UTF8.self))")
    }

    /// Publishes the next manifest version, as a staging operator does.
    @discardableResult
    func publish(
        _ transition: String, affected: [String]? = nil, defaults: JSONValue? = nil,
        _ edit: (inout ManifestEdit) -> Void
    ) throws -> SchemaReference {
        try SchemaPublication(operatorToken: Self.operatorToken, send: send).publish(
            transition: transition, affected: affected, defaults: defaults, edit)
    }

    func send(_ method: String, _ path: String, _ body: [UInt8], _ headers: [(String, String)]) throws -> (
        Int, [UInt8]
    ) {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.append(name: name, value: value) }
        let response = try transport.send(TransportRequest(
            method: method == "GET" ? .get : .post, path: path, headers: fields, body: body))
        return (response.status, response.body)
    }
}

/// One client store a drill warms and syncs through the `seedkit` binary, as a CI job does.
struct DrillStore {
    let server: DrillServer
    let user: String
    let path: String

    init(_ server: DrillServer, user: String = "alice", name: String = "app") {
        self.server = server
        self.user = user
        path = server.directory.path("\(name)-\(user).db")
    }

    private var environment: [String: String] { ["SEEDKIT_DRILL_TOKEN": DrillServer.tokens[user] ?? ""] }

    /// `seedkit sync` of this store.
    @discardableResult
    func sync(_ extra: [String] = []) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(
            ["sync", "--server", server.url, "--db", path, "--token-env", "SEEDKIT_DRILL_TOKEN"] + extra,
            environment: environment)
    }

    /// `seedkit validate --server`: every consistency check, against the server's digests.
    func validate() throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(
            ["validate", "--db", path, "--server", server.url, "--token-env", "SEEDKIT_DRILL_TOKEN"],
            environment: environment)
    }

    /// `seedkit sql` on the store (application SQL, captured as local intent).
    @discardableResult
    func sql(_ statement: String, _ arguments: [String] = []) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(["sql", "--db", path, statement] + arguments)
    }

    /// `seedkit inspect --json`.
    func inspect() throws -> JSONValue {
        let run = try SeedkitProcess.run(["inspect", "--db", path, "--json"])
        return (try? StrictJSONParser().parse(run.stdout)) ?? .null
    }

    /// Every synced table's rows in key order, as text (the tables `local_schema` names).
    func syncedRows() throws -> [String: [String]] {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        let schema = try connection.scalar("SELECT value FROM _synchro_meta WHERE key = 'local_schema'")?.textValue
        let tables = (try StrictJSONParser().parse(Array((schema ?? "[]").utf8))).arrayValue ?? []
        var rows: [String: [String]] = [:]
        for table in tables {
            guard let name = table.objectValue?["tableName"]?.stringValue else { continue }
            let quoted = SQLiteIdentifier.quote(name)
            rows[name] = try connection.query("SELECT * FROM \(quoted) ORDER BY 1") { row in
                try (0..<row.columnCount).map { "\(try row.value(at: $0))" }.joined(separator: "|")
            }
        }
        return rows
    }

    /// The drill's convergence check: `validate --server` passes, and the store holds exactly the rows a fresh
    /// store of the same user syncs now.
    func expectConverged(_ drill: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let validation = try validate()
        #expect(validation.status == 0, "\(drill): validate: \(validation.stderrText)", sourceLocation: sourceLocation)
        let fresh = DrillStore(server, user: user, name: "fresh-\(UUID().uuidString.prefix(8))")
        let freshRun = try fresh.sync(["--until-current"])
        #expect(freshRun.status == 0, "\(drill): fresh sync: \(freshRun.stderrText)", sourceLocation: sourceLocation)
        #expect(try syncedRows() == fresh.syncedRows(), "\(drill): rows differ from a fresh store",
                sourceLocation: sourceLocation)
    }
}

/// The drills' size: short inside `make test`; `make drills` sets `SEEDKIT_DRILLS=long` for more rows and stores.
enum DrillScale {
    static var isLong: Bool { ProcessInfo.processInfo.environment["SEEDKIT_DRILLS"] == "long" }
    static var rows: Int { isLong ? 2_000 : 60 }
    static var stores: Int { isLong ? 3 : 1 }
}

extension SeedkitProcess.Outcome {
    /// The one JSON error object or event with `"event":"error"` on standard output, when there is one.
    var lastJSONLine: JSONValue? {
        stdoutText.split(separator: "\n").last.flatMap { try? StrictJSONParser().parse(Array($0.utf8)) }
    }
}
