import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
import SynchroStore

/// A warmed store with local state that every schema change must keep (a local-only table, a queued insert and a
/// queued update of a server row), synced by whole cycles (what `seedkit sync` runs) against a loopback server.
final class EvolvingStore {
    let fixture: SyncFixture
    let transport: CycleTransport
    /// `mutation_id` of each queued mutation, in local order.
    private(set) var queued: [String] = []

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40)
        transport = CycleTransport(server: fixture.server)
        _ = try cycle()
        try fixture.storeFixture.inspect { connection in
            try connection.execute("CREATE TABLE local_drafts (id TEXT PRIMARY KEY, body TEXT)")
            try connection.execute("INSERT INTO local_drafts VALUES ('d1', 'kept')")
        }
        try fixture.store.execute(
            "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 'Queued', 0, ?)",
            [.text("note-evolution-1"), .text("2026-01-02T03:04:05.000Z")])
        let edited = try fixture.count("SELECT count(*) FROM notes WHERE id <> 'note-evolution-1'")
        try #require(edited > 0)
        try fixture.store.execute(
            "UPDATE notes SET title = 'Edited offline' WHERE id = (SELECT min(id) FROM notes WHERE id <> ?)",
            [.text("note-evolution-1")])
        queued = try mutationIDs()
        try #require(queued.count == 2)
    }

    var context: SyncContext { fixture.context(over: transport) }

    /// One sync cycle, as `seedkit sync` runs it.
    @discardableResult
    func cycle() throws -> SyncSummary {
        try CycleRecorder().cycle(context).run()
    }

    func publish(
        _ transition: String, affected: [String]? = nil, defaults: JSONValue? = nil,
        _ edit: (inout ManifestEdit) -> Void
    ) throws -> SchemaReference {
        try SchemaPublisher(fixture.server).publish(
            transition: transition, affected: affected, defaults: defaults, edit)
    }

    func mutationIDs() throws -> [String] {
        try fixture.storeFixture.inspect { connection in
            try connection.query("SELECT mutation_id FROM _synchro_pending_changes ORDER BY local_order") {
                try $0.text(at: 0)
            }
        }
    }

    func activeReference() throws -> SchemaReference {
        try fixture.storeFixture.inspect { connection in
            let version = try connection.scalar("SELECT value FROM _synchro_meta WHERE key = 'schema_version'")
            let hash = try connection.scalar("SELECT value FROM _synchro_meta WHERE key = 'schema_hash'")
            return try SchemaReference(version: Int64(version?.textValue ?? "") ?? -1, hash: hash?.textValue ?? "")
        }
    }

    /// The store converged after the schema change: the target schema is active, nothing is owed (no journal,
    /// every scope verified), offline validation finds nothing, the synced rows equal those of a fresh store that
    /// synced the same server from scratch, the local-only table is untouched, and the queued intent was kept with
    /// its mutation IDs and accepted by the server, its values visible in the rows. `retainedRejections` are
    /// records whose intent the server refused: their entries are `rejected`, and their rows, still protected, are
    /// left out of the comparison with the fresh store.
    func expectConverged(
        on target: SchemaReference, retainedRejections: Set<String> = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(try activeReference() == target, sourceLocation: sourceLocation)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_schema_migration") == 0, sourceLocation: sourceLocation)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scopes WHERE cursor IS NULL OR checksum IS NULL") == 0,
                sourceLocation: sourceLocation)
        #expect(try StoreValidator(path: fixture.storeFixture.path).validate().findings == [],
                sourceLocation: sourceLocation)
        #expect(try fixture.count("SELECT count(*) FROM local_drafts WHERE body = 'kept'") == 1,
                sourceLocation: sourceLocation)
        #expect(try Array(mutationIDs().prefix(queued.count)) == queued, sourceLocation: sourceLocation)
        let unaccepted = try fixture.storeFixture.inspect { connection in
            try connection.query("SELECT record_id FROM _synchro_pending_changes WHERE lifecycle_state <> 'accepted'") {
                try $0.text(at: 0)
            }
        }
        #expect(Set(unaccepted) == retainedRejections, sourceLocation: sourceLocation)
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE id = 'note-evolution-1' AND title = 'Queued'")
            == 1, sourceLocation: sourceLocation)
        #expect(try fixture.count("SELECT count(*) FROM notes WHERE title = 'Edited offline'") == 1,
                sourceLocation: sourceLocation)

        let fresh = try StoreFixture(clientID: "fresh-\(UUID().uuidString.lowercased())", applyDemo: false)
        _ = try CycleRecorder().cycle(
            SyncContext(store: fresh.store, transport: ServerTransport(server: fixture.server), pageLimit: 40)).run()
        let manifest = try ClientManifest(json: try fixture.server.send("GET", "/sync/schema", body: [], headers: []).json)
        for table in manifest.localSchema {
            let key = table.primaryKeyColumn.flatMap { column in table.columns.firstIndex(of: column) } ?? 0
            let local = try Self.rows(of: table, in: fixture.storeFixture).filter { row in
                !retainedRejections.contains(row[key].textValue ?? "")
            }
            #expect(try local == Self.rows(of: table, in: fresh), "rows of \(table.tableName)",
                    sourceLocation: sourceLocation)
        }
    }

    /// Every row of a synced table, the target's columns by name, in key order.
    static func rows(of table: LocalSchemaTable, in store: StoreFixture) throws -> [[SQLiteValue]] {
        let columns = table.columns.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        let key = SQLiteIdentifier.quote(table.primaryKeyColumn?.name ?? "rowid")
        return try store.inspect { connection in
            try connection.rows("SELECT \(columns) FROM \(SQLiteIdentifier.quote(table.tableName)) ORDER BY \(key)")
        }
    }
}
