import Foundation
import PostgresKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
import SeedSources

/// The PostgreSQL store keeps each portable scope's digest (`seedkit_server.kept_scope_digests`) so that
/// `synchro_portable_seed_manifest` need not digest every scope: a kept row must always be exactly the digest the
/// manifest would compute, every membership change must forget it in its own transaction, and a missing, other or
/// damaged row must make the manifest compute the digest or the export fail — never a wrong manifest.
@Suite("kept scope digests of the PostgreSQL store", .serialized)
struct KeptScopeDigestTests {
    let cluster: PostgresCluster
    let server: RunningServer
    let directory: TemporaryDirectory
    let database: String
    let exporter: String
    let password: String
    let admin: PostgresConnection
    static let pageLimit: Int64 = 40

    init() throws {
        cluster = try PostgresCluster.shared()
        server = try RunningServer(rows: 230, store: .postgres)
        directory = try TemporaryDirectory(prefix: "seedkit-kept-digests")
        database = try #require(server.postgresDatabase)
        let suffix = UUID().uuidString.lowercased().prefix(8)
        exporter = "kept_digest_exporter_\(suffix)"
        password = "kept-digest-\(suffix)"
        try cluster.createLogin(exporter, password: password, memberOf: "synchro_seed")
        admin = try PostgresConnection(connectionString: cluster.socketConnectionString(database: database))
    }

    /// Each kept row: scope → "cardinality:digest".
    func kept() throws -> [String: String] {
        let rows = try admin.execute("""
            SELECT scope_id, cardinality::text || ':' || encode(digest, 'hex') FROM seedkit_server.kept_scope_digests
            """)
        var kept: [String: String] = [:]
        for index in rows.rows.indices {
            kept[rows.text(row: index, column: 0) ?? ""] = rows.text(row: index, column: 1)
        }
        return kept
    }

    /// What the manifest computes for `scope` from membership now, "cardinality:digest".
    func recomputed(_ scope: String) throws -> String? {
        try admin.execute("""
            SELECT d.cardinality::text || ':' || encode(d.digest, 'hex')
            FROM seedkit_server.seed_scope_digest($1, decode(
                (SELECT hash FROM seedkit_server.manifests ORDER BY version DESC LIMIT 1), 'hex')) d
            """, [scope]).scalar
    }

    /// Runs the keeper as the server does (a READ COMMITTED transaction of its own); returns how many it kept.
    @discardableResult
    func keep() throws -> Int {
        Int(try admin.execute("SELECT seedkit_server.seed_keep_scope_digests()").scalar ?? "") ?? -1
    }

    /// The scope checksums of an SQL export and of an HTTP export (the server's own Swift digest) of the same data.
    func checksums() throws -> (sql: [String], http: [String]) {
        let source = try PostgresExportSource(connectionString:
            "host=127.0.0.1 port=\(cluster.port) dbname=\(database) user=\(exporter) password=\(password)")
        let sql = try SeedExporter.export(
            from: source, to: directory.path("sql-\(UUID().uuidString).db"), options: .init(pageLimit: Self.pageLimit))
        let http = try SeedExporter.export(
            from: try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken),
            to: directory.path("http-\(UUID().uuidString).db"), options: .init(pageLimit: Self.pageLimit))
        #expect(sql.scopes.map(\.id) == http.scopes.map(\.id))
        return (sql.scopes.map { "\($0.checksum)" }, http.scopes.map { "\($0.checksum)" })
    }

    func row(_ json: String) throws -> JSONValue {
        try StrictJSONParser().parse(Array(json.utf8))
    }

    /// One of alice's notes, moved to bob: its membership leaves one per-user scope and joins another.
    func moveNoteToBob() throws {
        let stored = try #require(try admin.execute("""
            SELECT convert_from(pk, 'UTF8'), convert_from(row, 'UTF8') FROM seedkit_server.projection
            WHERE table_id = 'tbl_notes' AND state = 0 AND convert_from(row, 'UTF8') LIKE '%"alice"%'
            ORDER BY identity LIMIT 1
            """).rows.first)
        let pk = try StrictJSONParser().parse(try #require(stored[0]))
        guard case .object(let note) = try StrictJSONParser().parse(try #require(stored[1])) else {
            Issue.record("a note row is not an object")
            return
        }
        _ = try server.engine.operatorWrite(
            table: "tbl_notes", pk: pk, row: .object(note.replacing("fld_note_owner", .string("bob"))))
    }

    @Test("the kept digest is the recomputed one after inserts, updates, deletes, membership changes and retention")
    func keptDigestFollowsEveryChange() throws {
        // The server kept every portable scope's digest when it opened the store.
        #expect(try kept().keys.sorted() == ["catalog"])
        #expect(try kept()["catalog"] == recomputed("catalog"))
        let writes: [(name: String, touchesCatalog: Bool, write: () throws -> Void)] = [
            ("insert", true, {
                _ = try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1000)),
                    row: try row(#"{"fld_category_id":1000,"fld_category_name":"inserted"}"#))
            }),
            ("update", true, {
                _ = try server.engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(1)),
                    row: try row(#"{"fld_category_id":1,"fld_category_name":"updated"}"#))
            }),
            ("delete", true, {
                _ = try server.engine.operatorDelete(table: "tbl_categories", pk: .number(JSONNumber(1000)))
            }),
            ("membership change of other scopes", false, { try moveNoteToBob() }),
        ]
        for (name, touchesCatalog, write) in writes {
            let before = try kept()["catalog"]
            try write()
            if touchesCatalog {
                #expect(try kept()["catalog"] == nil, "\(name): the change forgot the kept digest")
                // Without a kept digest the manifest computes it.
                let fallback = try checksums()
                #expect(fallback.sql == fallback.http, "\(name)")
                #expect(try keep() == 1)
            } else {
                #expect(try kept()["catalog"] == before, "\(name): catalog's membership did not change")
                #expect(try keep() == 0)
            }
            #expect(try kept()["catalog"] == recomputed("catalog"), "\(name)")
            let used = try checksums()
            #expect(used.sql == used.http, "\(name)")
        }
        // Retention drops stream entries and moves its generation; membership, hence the digest, is unchanged.
        let before = try kept()["catalog"]
        try admin.execute("DELETE FROM seedkit_server.stream")
        try admin.execute("""
            UPDATE seedkit_server.server_meta SET value = convert_to(
                (convert_from(value, 'UTF8')::bigint + 1)::text, 'UTF8') WHERE key = 'retention_generation'
            """)
        #expect(try kept()["catalog"] == before && before != nil)
        #expect(try kept()["catalog"] == recomputed("catalog"))
        let afterRetention = try checksums()
        #expect(afterRetention.sql == afterRetention.http)
        // A newly registered portable scope gets its digest at the next keep.
        try admin.execute("SELECT synchro.synchro_register_shared_scope('kept-extra', true)")
        #expect(try keep() == 1)
        #expect(try kept()["kept-extra"] == recomputed("kept-extra"))
    }

    @Test("a missing or other-schema kept digest is computed again; a damaged one fails the export, nothing published")
    func keptDigestFallsBackOrFailsClosed() throws {
        let honest = try checksums()
        #expect(honest.sql == honest.http)
        try admin.execute("DELETE FROM seedkit_server.kept_scope_digests")
        let missing = try checksums()
        #expect(missing.sql == honest.http)
        #expect(try keep() == 1)
        // A row kept under another schema hash is not this schema's digest: never used.
        try admin.execute("""
            UPDATE seedkit_server.kept_scope_digests SET schema_hash = repeat('0', 64), digest = sha256('forged')
            """)
        let other = try checksums()
        #expect(other.sql == honest.http)
        // A kept row damaged behind the server's back is used, and the exporter's own digest refuses it.
        try admin.execute("DELETE FROM seedkit_server.kept_scope_digests")
        #expect(try keep() == 1)
        try admin.execute("UPDATE seedkit_server.kept_scope_digests SET digest = sha256('forged')")
        let output = directory.path("damaged.db")
        #expect(throws: SeedExportError.self) {
            _ = try SeedExporter.exportWithEvidence(
                from: try PostgresExportSource(connectionString:
                    "host=127.0.0.1 port=\(cluster.port) dbname=\(database) user=\(exporter) password=\(password)"),
                to: output, options: .init(pageLimit: Self.pageLimit))
        }
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test("a hand-written membership change forgets the kept digest in its own transaction; the keeper needs READ COMMITTED")
    func forgettingIsTransactional() throws {
        #expect(try keep() >= 0)
        let before = try #require(try kept()["catalog"])
        try admin.execute("BEGIN")
        try admin.execute("""
            UPDATE seedkit_server.membership SET row_digest = row_digest
            WHERE scope_id = 'catalog' AND identity = (SELECT identity FROM seedkit_server.membership
                                                        WHERE scope_id = 'catalog' ORDER BY identity LIMIT 1)
            """)
        #expect(try kept()["catalog"] == nil)
        try admin.execute("ROLLBACK")
        #expect(try kept()["catalog"] == before)
        try admin.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        #expect(throws: PostgresError.self) { try admin.execute("SELECT seedkit_server.seed_keep_scope_digests()") }
        try admin.execute("ROLLBACK")
    }
}
