import Foundation
import SQLiteKit
@testable import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SynchroStore

/// One portable scope as a seed carries it: its continuation receipt, scope checksum and cardinality, and every
/// record (`{table, pk, row_checksum, server_version, row}`) in row-identity order.
struct SeedScopeExport {
    let scopeID: String
    var receipt: String
    let checksum: JSONValue
    let cardinality: Int64
    let records: [JSONValue]
}

/// A portable seed export taken from the reference server through its operator routes (`POST
/// /operator/seed/manifest`, `/operator/seed/scope`, `spec/integrity.md` §7.2), with the manifest it was taken
/// under — the input a seed writer has, so tests can build an installed seed's state without one.
struct ServerSeedExport {
    let manifest: ClientManifest
    var scopes: [SeedScopeExport]

    /// Takes one export: the manifest call, then every page of every portable scope.
    static func take(from server: RunningServer, pageLimit: Int64 = 50) throws -> ServerSeedExport {
        let schema = try server.send("GET", "/sync/schema", body: [], headers: [])
        try #require(schema.status == 200)
        let manifest = try ClientManifest(json: schema.json)
        let exported = try operatorPost(server, "/operator/seed/manifest", .object(JSONObject([
            JSONMember("page_limit", .number(JSONNumber(pageLimit))),
        ])))
        try #require(exported["schema_hash"]?.stringValue == manifest.reference.hash)
        var scopes: [SeedScopeExport] = []
        for entry in exported["portable_scopes"]?.arrayValue ?? [] {
            let entry = entry.objectValue ?? JSONObject([])
            let scopeID = try #require(entry["id"]?.stringValue)
            let receipt = try #require(entry["continuation"]?.stringValue)
            var token = entry["page_token"]?.stringValue
            var records: [JSONValue] = []
            while let pageToken = token {
                let page = try operatorPost(server, "/operator/seed/scope", .object(JSONObject([
                    JSONMember("scope_id", .string(scopeID)), JSONMember("page_token", .string(pageToken)),
                    JSONMember("continuation_receipt", .string(receipt)),
                    JSONMember("expected_row_ordinal", .number(JSONNumber(Int64(records.count)))),
                    JSONMember("limit", .number(JSONNumber(pageLimit))),
                ])))
                records += page["records"]?.arrayValue ?? []
                token = page["has_more"] == .bool(true) ? page["page_token"]?.stringValue : nil
            }
            let cardinality = try #require(entry["cardinality"]?.numberValue?.exactInt64)
            try #require(Int64(records.count) == cardinality)
            scopes.append(SeedScopeExport(
                scopeID: scopeID, receipt: receipt, checksum: try #require(entry["checksum"]),
                cardinality: cardinality, records: records))
        }
        return ServerSeedExport(manifest: manifest, scopes: scopes)
    }

    /// A scope the server would never export (user data), taken by rebuilding it as another client of the same
    /// user, with a receipt the server never issued: the server answers such a receipt with `cursor: null`.
    static func rebuiltScope(
        _ scopeID: String, from server: RunningServer, receipt: String, user: String = "alice"
    ) throws -> SeedScopeExport {
        let connect = ConnectRequest(
            clientID: "seed-source", clientGeneration: nil, platform: "ios", appVersion: "1.0.0", schema: nil,
            scopeSetVersion: 0, knownScopes: ScopeCursorMap([]))
        let connected = try server.post("/sync/connect", connect.json, as: user)
        try #require(connected.status == 200)
        let generation = try #require(connected.object["client_generation"]?.numberValue?.exactInt64)
        let reference = try #require(connected.object["schema"]?.objectValue)
        let schema = try SchemaReference(
            version: try #require(reference["version"]?.numberValue?.exactInt64),
            hash: try #require(reference["hash"]?.stringValue))
        var cursor: String?
        var records: [JSONValue] = []
        while true {
            let request = RebuildRequest(
                clientID: "seed-source", clientGeneration: generation, schema: schema, scope: scopeID,
                rebuildID: "00000000-0000-4000-8000-00000000abcd", cursor: cursor, limit: 100)
            let page = try server.post("/sync/rebuild", request.json, as: user)
            try #require(page.status == 200)
            records += page.object["records"]?.arrayValue ?? []
            guard page.object["has_more"] == .bool(true) else {
                return SeedScopeExport(
                    scopeID: scopeID, receipt: receipt, checksum: try #require(page.object["checksum"]),
                    cardinality: Int64(records.count), records: records)
            }
            cursor = page.object["cursor"]?.stringValue
        }
    }

    /// Writes the state an installed seed has (`spec/seed-format.md` §2.5) into a store without a schema: the
    /// manifest applied, then — with capture suppressed, through the rebuild applier's row writer — every row
    /// with its row version and a generation-0 edge, each scope with `cursor` NULL and its checksum as checksum
    /// and local checksum, and each receipt with the schema reference, cardinality and checksum.
    func install(into store: ClientStore) throws {
        try store.applySchema(manifest)
        let manifest = manifest
        let scopes = scopes
        try store.serverApply { transaction in
            let connection = transaction.connection
            let rows = LocalRows(connection: connection, manifest: manifest)
            var digester = RowDigester(manifest: manifest.manifest)
            for scope in scopes {
                for record in scope.records {
                    let reader = try ResponseReader(
                        record, path: "records[]", required: ["table", "pk", "row", "row_checksum", "server_version"])
                    let row = try VerifiedRow.verify(reader, digester: &digester)
                    let (tableName, recordID) = try rows.write(row)
                    try rows.upsertEdge(
                        scope: scope.scopeID, tableName: tableName, recordID: recordID, digest: row.digest,
                        generation: 0)
                }
                let checksum = try CanonicalJSON.string(scope.checksum)
                try connection.run("""
                    INSERT INTO _synchro_scopes (scope_id, cursor, checksum, generation, local_checksum)
                    VALUES (?, NULL, ?, 0, ?)
                    """, [.text(scope.scopeID), .text(checksum), .text(checksum)])
                try connection.run("""
                    INSERT INTO _synchro_seed_receipts
                        (scope_id, receipt, schema_version, schema_hash, cardinality, checksum)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """, [
                        .text(scope.scopeID), .text(scope.receipt), .integer(manifest.reference.version),
                        .text(manifest.reference.hash), .integer(scope.cardinality), .text(checksum),
                    ])
            }
        }
    }

    private static func operatorPost(_ server: RunningServer, _ path: String, _ body: JSONValue) throws -> JSONObject {
        let reply = try server.send("POST", path, body: try CanonicalJSON.encode(body), headers: [
            ("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "application/json"),
        ])
        try #require(reply.status == 200, "\(path) failed: HTTP \(reply.status)")
        return reply.object
    }
}

/// A reference server, a portable seed export taken from it, and a store holding that seed's installed state,
/// synchronized over a recording transport as alice.
final class SeededFixture {
    let server: RunningServer
    let export: ServerSeedExport
    let storeFixture: StoreFixture
    let transport: CycleTransport
    let recorder = CycleRecorder()

    /// Starts a server, runs `prepare` on it, takes the export (`extraScopes` adds scopes, e.g. rebuilt user
    /// data) and installs it into a fresh store.
    init(
        rows: Int = 120, prepare: (RunningServer) throws -> Void = { _ in },
        extraScopes: (RunningServer) throws -> [SeedScopeExport] = { _ in [] }
    ) throws {
        server = try RunningServer(rows: rows)
        try prepare(server)
        var export = try ServerSeedExport.take(from: server)
        export.scopes += try extraScopes(server)
        self.export = export
        storeFixture = try StoreFixture(applyDemo: false)
        try export.install(into: storeFixture.store)
        transport = CycleTransport(server: server)
    }

    var store: ClientStore { storeFixture.store }

    var context: SyncContext { SyncContext(store: store, transport: transport, pageLimit: 40) }

    /// Runs one sync cycle, recording delays and events.
    func runCycle() throws -> SyncSummary {
        try recorder.cycle(context).run()
    }

    /// The receipt the export issued for `scope`.
    func receipt(_ scope: String) -> String? {
        export.scopes.first { $0.scopeID == scope }?.receipt
    }

    /// `(scope_id, cursor, checksum, generation)` of every local scope, byte order.
    func scopes() throws -> [(id: String, cursor: String?, checksum: String?, generation: Int64)] {
        try storeFixture.inspect { connection in
            try connection.query(
                "SELECT scope_id, cursor, checksum, generation FROM _synchro_scopes ORDER BY scope_id"
            ) {
                (try $0.text(at: 0), $0.isNull(at: 1) ? nil : try $0.text(at: 1),
                 $0.isNull(at: 2) ? nil : try $0.text(at: 2), $0.int64(at: 3))
            }
        }
    }

    func scope(_ id: String) throws -> (id: String, cursor: String?, checksum: String?, generation: Int64)? {
        try scopes().first { $0.id == id }
    }

    /// The integer result of one SQL query on the file.
    func count(_ sql: String) throws -> Int64 {
        try storeFixture.inspect { try $0.scalar(sql)?.integerValue ?? -1 }
    }

    /// The text result of one SQL query on the file.
    func text(_ sql: String) throws -> String? {
        try storeFixture.inspect { try $0.scalar(sql)?.textValue }
    }

    /// The parsed connect request bodies sent so far.
    func connectRequests() throws -> [JSONObject] {
        try transport.bodies("/sync/connect").map { try StrictJSONParser().parse($0).objectValue ?? JSONObject([]) }
    }
}
