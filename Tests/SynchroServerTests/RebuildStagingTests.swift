import Foundation
import SQLiteKit
@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Rebuild sessions stage rows by reference to the projection, and the projection's triggers save a row's body
/// into the staged rows that refer to it before it changes (`spec/wire-protocol.md` §6.3: staged content never
/// changes).
@Suite("Rebuild staging by reference")
struct RebuildStagingTests {
    /// Changes category 1 twice, deletes category 2 and deletes `products`, through the server's write path
    /// (captured and materialized: the materializer replaces projection rows).
    static func changeCatalog(_ server: RunningServer, deleting products: [JSONValue]) throws {
        for name in ["changed once", "changed twice"] {
            try server.engine.operatorWrite(
                table: "tbl_categories", pk: .number(JSONNumber(1)),
                row: .object(JSONObject([
                    JSONMember("fld_category_id", .number(JSONNumber(1))),
                    JSONMember("fld_category_name", .string(name)),
                ])))
        }
        try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(2)))
        for product in products {
            try server.engine.operatorDelete(table: "tbl_products", pk: product)
        }
    }

    /// The keys of two products of the run, from different pages.
    static func twoProducts(_ run: RebuildRun) throws -> [JSONValue] {
        let products = run.records.compactMap { $0["pk"]?.objectValue?["fld_product_id"] }
        try #require(products.count >= 60)
        return [products[5], products[55]]
    }

    static func canonicalRecords(_ run: RebuildRun) throws -> [[UInt8]] {
        try run.pages.map { try CanonicalJSON.encode(try #require($0.object["records"])) }
    }

    /// Requests every page of `run` again (limit 30) and expects the octets first served.
    static func expectReplays(_ run: RebuildRun, by client: WireClient, _ when: String) throws {
        for (index, page) in run.pages.enumerated() {
            let cursor = index == 0 ? nil : run.continuations[index - 1]
            let replay = try client.rebuildPage(scope: "catalog", rebuildID: run.rebuildID, cursor: cursor, limit: 30)
            #expect(replay.status == 200)
            let same = replay.body == page.body
            #expect(same, "page \(index) differs \(when)")
        }
    }

    /// A second connection to a server's database file.
    static func database(_ directory: TemporaryDirectory) throws -> Connection {
        let db = try Connection(path: directory.path("server.db"))
        try db.setBusyTimeout(milliseconds: 5000)
        return db
    }

    @Test("rows changed or deleted after staging are served and replayed with the bodies they had when staged")
    func changedRowsKeepStagedBodies() throws {
        let server = try RunningServer(rows: 100)
        let client = try WireClient.connect(server)
        let served = try client.rebuild(scope: "catalog", limit: 30)
        let pending = WireClient.newRebuildID()
        let first = try client.rebuildPage(scope: "catalog", rebuildID: pending, cursor: nil, limit: 30)
        try #require(first.status == 200)

        try Self.changeCatalog(server, deleting: try Self.twoProducts(served))

        // The session served before the change replays byte for byte.
        try Self.expectReplays(served, by: client, "on replay")
        // The session staged before the change and served after it gives what the first one gave: the same
        // records, and the same final page (continuations name their session, the final page does not).
        let late = try client.rebuild(scope: "catalog", limit: 30, rebuildID: pending)
        let sameFirst = late.pages.first?.body == first.body
        #expect(sameFirst)
        #expect(try Self.canonicalRecords(late) == (try Self.canonicalRecords(served)))
        let sameFinal = late.pages.last?.body == served.pages.last?.body
        #expect(sameFinal)
        // Replaying it again after more changes still gives the same octets.
        try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(1)))
        let again = try client.rebuild(scope: "catalog", limit: 30, rebuildID: pending)
        let sameAgain = again.pages.map(\.body) == late.pages.map(\.body)
        #expect(sameAgain)
        // A new attempt sees the changes: categories 1 and 2 and two products are gone.
        let fresh = try client.rebuild(scope: "catalog", limit: 30)
        #expect(fresh.records.count == served.records.count - 4)
        #expect(fresh.checksum != served.checksum)
    }

    @Test("a staged row whose projection row changed without its body being saved is an integrity error")
    func lostBodyIsIntegrityError() throws {
        let server = try RunningServer(rows: 50)
        let client = try WireClient.connect(server)
        let run = try client.rebuild(scope: "catalog", limit: 30)
        let changed = run.pages.map { page in
            (page.object["records"]?.arrayValue ?? []).contains { record in
                let key = record.objectValue?["pk"]?.objectValue?["fld_category_id"]
                return [1, 2].contains { key == .number(JSONNumber($0)) }
            }
        }
        try #require(changed.contains(true) && changed.contains(false))
        // Writes that bypass the triggers (as a server without them would write).
        let db = try Self.database(server.directory)
        try db.execute("DROP TRIGGER projection_insert_saves_staged")
        try Self.changeCatalog(server, deleting: [])
        for (index, page) in run.pages.enumerated() {
            let cursor = index == 0 ? nil : run.continuations[index - 1]
            let replay = try client.rebuildPage(scope: "catalog", rebuildID: run.rebuildID, cursor: cursor, limit: 30)
            if changed[index] {
                #expect(replay.status >= 500, "page \(index) served a row whose staged body is lost")
            } else {
                let same = replay.body == page.body
                #expect(same, "page \(index) differs on replay")
            }
        }
    }

    @Test("expired sessions' staged rows are purged, saved or not")
    func expiredStagesArePurged() throws {
        let server = try RunningServer(rows: 50)
        let client = try WireClient.connect(server)
        let expired = WireClient.newRebuildID()
        #expect(try client.rebuildPage(scope: "catalog", rebuildID: expired, cursor: nil, limit: 30).status == 200)
        try Self.changeCatalog(server, deleting: [])
        let db = try Self.database(server.directory)
        let rows = """
            SELECT count(*), count(row) FROM rebuild_rows
            WHERE session_id = (SELECT session_id FROM rebuild_sessions WHERE rebuild_id = ?)
            """
        let before = try #require(try db.rows(rows, [.text(expired)]).first)
        #expect(before[0].integerValue == 90)  // 40 categories and 50 products
        #expect(before[1].integerValue == 2)  // the bodies of categories 1 and 2, saved before they changed
        server.clock.advance(hours: 24)
        #expect(try client.rebuild(scope: "catalog", limit: 30).records.count == 89)
        #expect(try db.rows(rows, [.text(expired)]).first?[0].integerValue == 0)
        #expect(try client.rebuildPage(scope: "catalog", rebuildID: expired, cursor: nil, limit: 30).status == 409)
    }

    /// What a layout-1 server stored for the same sessions: every staged row with its body, keyed by session and
    /// ordinal, no identity column, no staged numbering, no triggers.
    static func downgradeToLayout1(_ db: Connection) throws {
        try db.transaction(kind: .immediate) {
            try db.execute("""
                DROP TRIGGER projection_insert_saves_staged;
                DROP TRIGGER projection_update_saves_staged;
                DROP TRIGGER projection_delete_saves_staged;
                DROP TABLE rebuild_references;
                CREATE TABLE rebuild_rows_v1(
                    session_id INTEGER NOT NULL,
                    ordinal INTEGER NOT NULL,
                    table_id TEXT NOT NULL,
                    pk BLOB NOT NULL,
                    row BLOB NOT NULL,
                    server_version TEXT NOT NULL,
                    row_digest BLOB NOT NULL,
                    PRIMARY KEY(session_id, ordinal)
                ) WITHOUT ROWID;
                INSERT INTO rebuild_rows_v1
                    SELECT r.session_id, r.staged - s.first_staged, r.table_id, r.pk, coalesce(r.row, p.row),
                           r.server_version, r.row_digest
                    FROM rebuild_rows r JOIN rebuild_sessions s ON s.session_id = r.session_id
                    LEFT JOIN projection p ON p.identity = r.identity;
                DROP TABLE rebuild_rows;
                ALTER TABLE rebuild_rows_v1 RENAME TO rebuild_rows;
                ALTER TABLE rebuild_sessions DROP COLUMN first_staged;
                ALTER TABLE membership DROP COLUMN row_digest;
                ALTER TABLE seed_export_scopes DROP COLUMN first_staged;
                PRAGMA user_version = 1;
                """)
        }
    }

    @Test("a PostgreSQL layout-2 store is migrated: every live member gets its digest, checksums stay exact")
    func migratesPostgresLayout2() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-server-migration")
        let digests: [[SQLiteValue]]
        do {
            let server = try RunningServer(rows: 100, reopening: directory, store: .postgres)
            _ = try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(3)))
            _ = try WireClient.connect(server).rebuild(scope: "catalog", limit: 30)
            digests = try server.engine.rowsForTesting(
                "SELECT scope_id, identity, row_digest FROM membership ORDER BY scope_id, identity")
            try server.engine.executeForTesting("ALTER TABLE membership DROP COLUMN row_digest")
            try server.engine.executeForTesting("ALTER TABLE seed_export_scopes DROP COLUMN first_staged")
            try server.engine.executeForTesting(
                "UPDATE server_meta SET value = ? WHERE key = 'layout_version'", [.integer(2)])
        }

        let server = try RunningServer(rows: 100, reopening: directory, store: .postgres)

        #expect(try server.engine.rowsForTesting(
            "SELECT scope_id, identity, row_digest FROM membership ORDER BY scope_id, identity") == digests)
        let client = try WireClient.connect(server)
        let fresh = try client.rebuild(scope: "catalog", limit: 30)
        #expect(fresh.checksum == (try DigestCheck.scopeDigest(fresh.records, scope: "catalog", manifest: client.manifest)))
    }

    /// What a layout-2 server stored: membership without its members' row digests.
    static func downgradeToLayout2(_ db: Connection) throws {
        try db.execute("""
            ALTER TABLE membership DROP COLUMN row_digest;
            ALTER TABLE seed_export_scopes DROP COLUMN first_staged;
            PRAGMA user_version = 2;
            """)
    }

    @Test("a layout-2 database is migrated: every live member gets its digest and terminal checksums stay exact")
    func migratesLayout2() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-server-migration")
        do {
            let server = try RunningServer(rows: 100, reopening: directory, store: .sqlite)
            // A tombstone keeps its membership edge without a digest.
            _ = try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(3)))
            _ = try WireClient.connect(server).rebuild(scope: "catalog", limit: 30)
        }
        let db = try Self.database(directory)
        let digests = try db.rows("SELECT scope_id, identity, row_digest FROM membership ORDER BY scope_id, identity")
        try Self.downgradeToLayout2(db)

        let server = try RunningServer(rows: 100, reopening: directory)

        #expect(try db.userVersion() == ServerSchema.version)
        #expect(try db.rows("SELECT scope_id, identity, row_digest FROM membership ORDER BY scope_id, identity")
            == digests)
        let client = try WireClient.connect(server)
        let fresh = try client.rebuild(scope: "catalog", limit: 30)
        #expect(fresh.checksum == (try DigestCheck.scopeDigest(fresh.records, scope: "catalog", manifest: client.manifest)))
    }

    @Test("a layout-3 database is migrated: every scope's live count is kept and terminal checksums stay exact")
    func migratesLayout3() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-server-migration")
        do {
            let server = try RunningServer(rows: 100, reopening: directory, store: .sqlite)
            _ = try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(3)))
            server.engine.materialize()
        }
        let db = try Self.database(directory)
        try db.execute("""
            DROP TABLE scope_cardinality;
            ALTER TABLE seed_export_scopes DROP COLUMN first_staged;
            PRAGMA user_version = 3;
            """)

        let server = try RunningServer(rows: 100, reopening: directory, store: .sqlite)

        #expect(try db.userVersion() == ServerSchema.version)
        let kept = try ScopeCardinalityTests.kept(server)
        #expect(kept == (try ScopeCardinalityTests.counted(server)))
        #expect((kept["catalog"] ?? 0) > 0 && (kept["user:alice"] ?? 0) > 0)
        let client = try WireClient.connect(server)
        let fresh = try client.rebuild(scope: "catalog", limit: 30)
        #expect(fresh.checksum == (try DigestCheck.scopeDigest(fresh.records, scope: "catalog", manifest: client.manifest)))
    }

    @Test("a PostgreSQL layout-3 store is migrated: every scope's live count is kept")
    func migratesPostgresLayout3() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-server-migration")
        do {
            let server = try RunningServer(rows: 100, reopening: directory, store: .postgres)
            _ = try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(3)))
            server.engine.materialize()
            try server.engine.executeForTesting("DROP TABLE scope_cardinality")
            try server.engine.executeForTesting("ALTER TABLE seed_export_scopes DROP COLUMN first_staged")
            try server.engine.executeForTesting(
                "UPDATE server_meta SET value = ? WHERE key = 'layout_version'", [.integer(3)])
        }

        let server = try RunningServer(rows: 100, reopening: directory, store: .postgres)

        let kept = try ScopeCardinalityTests.kept(server)
        #expect(kept == (try ScopeCardinalityTests.counted(server)))
        #expect((kept["catalog"] ?? 0) > 0 && (kept["user:alice"] ?? 0) > 0)
    }

    @Test("a layout-1 database is migrated: its sessions replay byte for byte and new sessions stage by reference")
    func migratesLayout1() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-server-migration")
        let served: RebuildRun
        let connected: WireClient
        do {
            let server = try RunningServer(rows: 100, reopening: directory)
            connected = try WireClient.connect(server)
            served = try connected.rebuild(scope: "catalog", limit: 30)
        }
        let db = try Self.database(directory)
        try Self.downgradeToLayout1(db)
        #expect(try db.userVersion() == 1)

        let server = try RunningServer(rows: 100, reopening: directory)
        #expect(try db.userVersion() == ServerSchema.version)
        let triggers = try db.rows(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name NOT LIKE 'membership_chunk_%'")
        #expect(triggers.count == 3)
        // Layout 6's chunk triggers, and the chunks built by the migration.
        #expect(try db.rows("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'membership_chunk_%'")
            .count == 3)
        #expect(try db.scalar("SELECT count(*) FROM membership_chunks")?.integerValue ?? 0 > 0)
        let client = connected.on(server)
        try Self.changeCatalog(server, deleting: try Self.twoProducts(served))
        try Self.expectReplays(served, by: client, "after the migration")
        let fresh = try client.rebuild(scope: "catalog", limit: 30)
        let digest = try DigestCheck.scopeDigest(fresh.records, scope: "catalog", manifest: client.manifest)
        #expect(fresh.checksum == digest)
        let byReference = try db.scalar("SELECT count(*) FROM rebuild_rows WHERE row IS NULL")?.integerValue
        #expect(byReference == Int64(fresh.records.count))
    }
}
