import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// v13 (`synchro_v13_scope_text_affinity`) on a seed: an edge table that already has v13's shape is kept in place,
/// anything else is rebuilt as upstream does (`docs/decisions.md`, "v13 keeps a scope-row table that already has its
/// shape").
@Suite("v13 scope text affinity")
struct ScopeTextAffinityTests {
    /// The edge table as migrated: its root page, its `CREATE TABLE` text, its rows with their rowids and storage
    /// classes in rowid order, and its indexes.
    struct EdgeTable: Equatable {
        let rootPage: SQLiteValue?
        let sql: SQLiteValue?
        let rows: [[SQLiteValue]]
        let indexes: [[SQLiteValue]]

        static func read(_ db: Connection) throws -> EdgeTable {
            EdgeTable(
                rootPage: try db.scalar(
                    "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = '_synchro_scope_rows'"),
                sql: try db.scalar(
                    "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = '_synchro_scope_rows'"),
                rows: try db.rows("""
                    SELECT rowid, scope_id, table_name, record_id, checksum, typeof(checksum), generation
                    FROM _synchro_scope_rows ORDER BY rowid
                    """),
                indexes: try db.rows("""
                    SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = '_synchro_scope_rows'
                    ORDER BY name
                    """))
        }
    }

    /// Writes the demo interchange seed with a gap in the edges' rowids (a rebuild renumbers them 1, 2, 3), runs
    /// `prepare` on it, and returns the edge table before and after the client store migrated it.
    private func migrate(_ prepare: String = "") throws -> (before: EdgeTable, after: EdgeTable) {
        let directory = try TemporaryDirectory(prefix: "synchro-v13")
        let path = directory.path("seed.db")
        try InterchangeSeed.demo().write(to: path)
        let before = try inspect(path) { db in
            try db.execute("UPDATE _synchro_scope_rows SET rowid = rowid + 100 WHERE rowid = 3")
            if !prepare.isEmpty { try db.execute(prepare) }
            return try EdgeTable.read(db)
        }
        let store = try ClientStore(configuration: StoreFixture.configuration(
            path: path, clientID: "ios-device-9", uuids: SequentialUUIDs()))
        store.close()
        return (before, try inspect(path, EdgeTable.read))
    }

    private func inspect<Result>(_ path: String, _ body: (Connection) throws -> Result) throws -> Result {
        let connection = try Connection(path: path, mode: .readWrite)
        defer { connection.close() }
        return try body(connection)
    }

    /// Rows as a rebuild stores them: renumbered from 1 in rowid order, checksums cast to TEXT.
    private func rebuilt(_ rows: [[SQLiteValue]]) -> [[SQLiteValue]] {
        rows.enumerated().map { index, row in
            let checksum: SQLiteValue = switch row[4] {
            case .blob(let octets): .text(String(decoding: octets, as: UTF8.self))
            case .integer(let value): .text(String(value))
            default: row[4]
            }
            return [.integer(Int64(index + 1)), row[1], row[2], row[3], checksum, "text", row[6]]
        }
    }

    static let recordIndex: [SQLiteValue] = [
        "idx_synchro_scope_rows_record",
        "CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id)",
    ]

    @Test("a seed's edge table is kept in place: same root page, rowids, values and CREATE text")
    func seedShapedTableIsKept() throws {
        let (before, after) = try migrate()
        #expect(before.rows.map { $0[0] } == [1, 2, 103])
        #expect(after == before)
        #expect(after.indexes.contains(Self.recordIndex))
    }

    @Test("a seed's edge table without the record index is kept and gets the index")
    func missingRecordIndexIsCreated() throws {
        let (before, after) = try migrate("DROP INDEX idx_synchro_scope_rows_record")
        #expect(after.rootPage == before.rootPage)
        #expect(after.rows == before.rows)
        #expect(after.indexes.contains(Self.recordIndex))
    }

    @Test("an edge with a BLOB checksum makes v13 copy the table, and every checksum ends up TEXT")
    func blobChecksumIsRebuilt() throws {
        let (before, after) = try migrate(
            "UPDATE _synchro_scope_rows SET checksum = CAST(checksum AS BLOB) WHERE rowid = 1")
        #expect(before.rows.first?[5] == "blob")
        #expect(after.rows == rebuilt(before.rows))
        #expect(after.rows.allSatisfy { $0[5] == "text" })
        #expect(after.sql != before.sql)
        #expect(after.indexes.contains(Self.recordIndex))
    }

    @Test("the pre-v6 layout (INTEGER checksums) is copied with its checksums cast to TEXT")
    func oldLayoutIsRebuilt() throws {
        let (before, after) = try migrate("""
            CREATE TABLE e AS SELECT rowid AS r, * FROM _synchro_scope_rows;
            DROP TABLE _synchro_scope_rows;
            CREATE TABLE _synchro_scope_rows (
                scope_id TEXT NOT NULL,
                table_name TEXT NOT NULL,
                record_id TEXT NOT NULL,
                checksum INTEGER NOT NULL DEFAULT 0,
                generation INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (scope_id, table_name, record_id)
            );
            INSERT INTO _synchro_scope_rows (rowid, scope_id, table_name, record_id, checksum, generation)
                SELECT r, scope_id, table_name, record_id, 12345, generation FROM e ORDER BY r;
            DROP TABLE e;
            CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id);
            """)
        #expect(before.rows.allSatisfy { $0[5] == "integer" })
        #expect(after.rows == rebuilt(before.rows))
        #expect(after.rows.allSatisfy { $0[4] == "12345" && $0[5] == "text" })
    }

    /// Definitions that read like v13's in `PRAGMA table_info` or hold the same rows, but behave differently (or
    /// carry something DROP TABLE removes): each is rebuilt.
    static let differentDefinitions: [(String, String)] = [
        ("a collation", "checksum TEXT NOT NULL COLLATE NOCASE"),
        ("a CHECK constraint", "checksum TEXT NOT NULL CHECK (length(checksum) = 64)"),
        ("a conflict clause", "checksum TEXT NOT NULL ON CONFLICT REPLACE"),
        ("a nullable checksum", "checksum TEXT"),
        ("another declared type", "checksum VARCHAR NOT NULL"),
        ("another default", "checksum TEXT NOT NULL DEFAULT ''"),
    ]

    @Test("an edge table whose definition differs from v13's in any way is copied", arguments: differentDefinitions)
    func differentDefinitionIsRebuilt(_ name: String, _ checksumColumn: String) throws {
        let (before, after) = try migrate("""
            CREATE TABLE e AS SELECT rowid AS r, * FROM _synchro_scope_rows;
            DROP TABLE _synchro_scope_rows;
            CREATE TABLE _synchro_scope_rows (
                scope_id TEXT NOT NULL, table_name TEXT NOT NULL, record_id TEXT NOT NULL, \(checksumColumn),
                generation INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (scope_id, table_name, record_id)
            );
            INSERT INTO _synchro_scope_rows (rowid, scope_id, table_name, record_id, checksum, generation)
                SELECT r, scope_id, table_name, record_id, checksum, generation FROM e ORDER BY r;
            DROP TABLE e;
            CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id);
            """)
        #expect(after.rows == rebuilt(before.rows), "\(name)")
        #expect(after.sql != before.sql, "\(name)")
    }

    static let differentSurroundings: [(String, String)] = [
        ("an extra index", "CREATE INDEX e_checksum ON _synchro_scope_rows (checksum)"),
        ("a record index over other columns", """
            DROP INDEX idx_synchro_scope_rows_record;
            CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (record_id, table_name)
            """),
        ("a descending record index", """
            DROP INDEX idx_synchro_scope_rows_record;
            CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id DESC)
            """),
        ("a trigger on the table", """
            CREATE TRIGGER e_insert AFTER INSERT ON _synchro_scope_rows BEGIN SELECT 1; END
            """),
    ]

    @Test("an edge table with other indexes or a trigger is copied as upstream does", arguments: differentSurroundings)
    func differentSurroundingsAreRebuilt(_ name: String, _ prepare: String) throws {
        let (before, after) = try migrate(prepare)
        #expect(after.rows == rebuilt(before.rows), "\(name)")
        #expect(after.indexes == [Self.recordIndex, ["sqlite_autoindex__synchro_scope_rows_1", .null]], "\(name)")
    }
}
