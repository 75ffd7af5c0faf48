import Foundation
import PostgresKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The checks of the reference server's own `synchro` export functions (SynchroServer's `SeedExportFunctions`),
/// called in SQL as an exporter login would call them: upstream's transaction rules and JSON refusals, a session
/// that cannot be forged with `set_config`, no table access for `synchro_seed`, and pages that are the same
/// whether read in order (keyset) or again out of order (`OFFSET`).
@Suite("the server's synchro functions: transaction, session, privileges and paging", .serialized)
struct ServerSeedFunctionChecksTests {
    let cluster: PostgresCluster
    let server: RunningServer
    let database: String
    let exporter: String
    let password: String

    init() throws {
        cluster = try PostgresCluster.shared()
        server = try RunningServer(rows: 120, store: .postgres)
        database = try #require(server.postgresDatabase)
        let suffix = UUID().uuidString.lowercased().prefix(8)
        exporter = "server_seed_checks_\(suffix)"
        password = "server-seed-checks-\(suffix)"
        try cluster.createLogin(exporter, password: password, memberOf: "synchro_seed")
    }

    func connect() throws -> PostgresConnection {
        try PostgresConnection(connectionString:
            "host=127.0.0.1 port=\(cluster.port) dbname=\(database) user=\(exporter) password=\(password)")
    }

    func json(_ text: String?) throws -> JSONObject {
        let octets = Array(try #require(text).utf8)
        return try #require(try StrictJSONParser().parse(octets).objectValue)
    }

    func errorMessage(_ text: String?) throws -> String? {
        try json(text)["error"]?.objectValue?["message"]?.stringValue
    }

    @Test("outside SERIALIZABLE READ ONLY DEFERRABLE the manifest call raises XX000 and the page call answers JSON")
    func transactionRules() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.execute("SELECT synchro.synchro_portable_seed_manifest(50)")
        }
        #expect(error.sqlState == "XX000")
        #expect("\(error)".contains("portable seed transaction is invalid"))
        let page = try connection.execute("SELECT synchro.synchro_portable_seed_scope('catalog', 't', 'r', 0, 50)")
        #expect(try errorMessage(page.scalar) == "portable seed export transaction is unavailable")
        let limit = try connection.transaction(.snapshotExport) {
            try $0.execute("SELECT synchro.synchro_portable_seed_manifest(1001)").scalar
        }
        #expect(try errorMessage(limit) == "portable seed limit must be between 1 and 1000")
    }

    @Test("synchro_seed reads no table nor registers scopes; a session set by hand is ignored; a token of another page is refused")
    func sessionAndPrivileges() throws {
        let connection = try connect()
        let denied = try #require(throws: PostgresError.self) {
            try connection.execute("SELECT count(*) FROM seedkit_server.server_meta")
        }
        #expect(denied.sqlState == "42501")
        // EXECUTE on exactly the three export functions: scope registration is the operator's.
        let register = try #require(throws: PostgresError.self) {
            try connection.execute("SELECT synchro.synchro_register_shared_scope('elsewhere', true)")
        }
        #expect(register.sqlState == "42501")
        try connection.transaction(.snapshotExport) { c in
            let manifest = try json(c.execute("SELECT synchro.synchro_portable_seed_manifest(50)").scalar)
            let catalog = try #require(manifest["portable_scopes"]?.arrayValue?.first?.objectValue)
            let token = try #require(catalog["page_token"]?.stringValue)
            let receipt = try #require(catalog["continuation"]?.stringValue)
            // The same manifest again, then a different limit refused.
            #expect(try json(c.execute("SELECT synchro.synchro_portable_seed_manifest(50)").scalar) == manifest)
            #expect(try errorMessage(c.execute("SELECT synchro.synchro_portable_seed_manifest(40)").scalar)
                == "portable seed page limit is fixed for the export")
            // The first page's token presented for the second page, and a receipt of another scope's shape.
            let wrongOrdinal = try c.execute(
                "SELECT synchro.synchro_portable_seed_scope('catalog', $1, $2, 50, 50)", [token, receipt]).scalar
            #expect(try errorMessage(wrongOrdinal) == "portable seed page token binding is invalid")
            let wrongReceipt = try c.execute(
                "SELECT synchro.synchro_portable_seed_scope('catalog', $1, $2, 0, 50)", [token, token]).scalar
            #expect(try errorMessage(wrongReceipt) == "portable seed continuation receipt binding is invalid")
            // A session written by hand (a copy of the real one with another digest) is not a session.
            let saved = try #require(c.execute("SELECT current_setting('synchro.seed_export_state')").scalar)
            let forged = saved.replacingOccurrences(of: "\"cardinality\":", with: "\"cardinality\":1")
            #expect(forged != saved)
            _ = try c.execute("SELECT set_config('synchro.seed_export_state', $1, true)", [forged])
            let refused = try c.execute(
                "SELECT synchro.synchro_portable_seed_scope('catalog', $1, $2, 0, 50)", [token, receipt]).scalar
            #expect(try errorMessage(refused) == "portable seed export transaction is unavailable")
        }
    }

    @Test("pages read in order (keyset) and read again out of order (OFFSET) are the same records")
    func pagingOrders() throws {
        let connection = try connect()
        try connection.transaction(.snapshotExport) { c in
            let manifest = try json(c.execute("SELECT synchro.synchro_portable_seed_manifest(30)").scalar)
            let catalog = try #require(manifest["portable_scopes"]?.arrayValue?.first?.objectValue)
            let receipt = try #require(catalog["continuation"]?.stringValue)
            let cardinality = try #require(catalog["cardinality"]?.numberValue?.exactInt64)
            var token = try #require(catalog["page_token"]?.stringValue)
            var pages: [(token: String, ordinal: Int64, records: JSONValue)] = []
            var ordinal: Int64 = 0
            while true {
                let page = try json(c.execute(
                    "SELECT synchro.synchro_portable_seed_scope('catalog', $1, $2, $3::bigint, 30)",
                    [token, receipt, String(ordinal)]).scalar)
                let records = try #require(page["records"])
                pages.append((token, ordinal, records))
                guard page["has_more"] == .bool(true), let next = page["page_token"]?.stringValue else { break }
                token = next
                ordinal += 30
            }
            #expect(pages.count == Int((cardinality + 29) / 30) && pages.count > 3)
            let total = pages.reduce(0) { $0 + ($1.records.arrayValue?.count ?? 0) }
            #expect(Int64(total) == cardinality)
            for page in [pages[2], pages[0], pages[1]] {
                let again = try json(c.execute(
                    "SELECT synchro.synchro_portable_seed_scope('catalog', $1, $2, $3::bigint, 30)",
                    [page.token, receipt, String(page.ordinal)]).scalar)
                #expect(again["records"] == page.records)
            }
        }
    }
}
