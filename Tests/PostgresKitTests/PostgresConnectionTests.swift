import Foundation
import PostgresKit
import Testing
import _SeedkitTestSupport

/// PostgresKit against a real server: the throwaway cluster of the test support.
@Suite("PostgresKit: a real PostgreSQL")
struct PostgresConnectionTests {
    let cluster: PostgresCluster

    init() throws {
        cluster = try PostgresCluster.shared()
    }

    func connect(user: String = PostgresCluster.superuser) throws -> PostgresConnection {
        try PostgresConnection(connectionString: cluster.socketConnectionString(user: user))
    }

    @Test("text parameters and results round-trip exactly, NULL included")
    func parametersRoundTrip() throws {
        let connection = try connect()
        let rows = try connection.execute("SELECT $1::text, $2::text, $3::int + 1", ["héllo ✓", nil, "41"])
        #expect(rows.columns.count == 3)
        #expect(rows.text(row: 0, column: 0) == "héllo ✓")
        #expect(rows.rows[0][1] == nil)
        #expect(rows.text(row: 0, column: 2) == "42")
        #expect(try connection.execute("SELECT '{\"a\": 1.0}'::jsonb").scalar == "{\"a\": 1.0}")
    }

    @Test("a wrong password over TCP is authentication_failed, and the password is never in the error")
    func wrongPassword() throws {
        let secret = "not-the-password-\(UUID().uuidString)"
        let error = try #require(throws: PostgresError.self) {
            try PostgresConnection(connectionString: cluster.tcpURI() + "?password=\(secret)")
        }
        #expect(error.rule == "authentication_failed")
        #expect(!"\(error)".contains(secret))
        #expect("\(error)".contains("127.0.0.1:\(cluster.port)"))
    }

    @Test("the right password over TCP connects (libpq reads it from the URI as from PGPASSWORD)")
    func rightPassword() throws {
        let connection = try PostgresConnection(
            connectionString: cluster.tcpURI() + "?password=\(PostgresCluster.superuserPassword)")
        #expect(try connection.execute("SELECT current_user").scalar == PostgresCluster.superuser)
    }

    @Test("nothing listening is cannot_connect naming the target; a malformed string is invalid_connection_string")
    func connectFailures() throws {
        let closed = try #require(throws: PostgresError.self) {
            try PostgresConnection(connectionString: "host=127.0.0.1 port=1 dbname=x user=y connect_timeout=2")
        }
        #expect(closed.rule == "cannot_connect")
        #expect("\(closed)".contains("127.0.0.1:1"))
        let malformed = try #require(throws: PostgresError.self) {
            try PostgresConnection(connectionString: "hostx=1 = =")
        }
        #expect(malformed.rule == "invalid_connection_string")
    }

    @Test("server errors are typed by SQLSTATE: a missing function, a missing privilege, quoted data withheld")
    func serverErrors() throws {
        let connection = try connect()
        let missing = try #require(throws: PostgresError.self) {
            try connection.execute("SELECT no_such_function_here(1)")
        }
        #expect(missing.sqlState == "42883")
        #expect(missing.rule == "undefined_function")

        let role = "limited_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute("CREATE ROLE \(role) LOGIN")
        try connection.execute("CREATE FUNCTION \(role)_f() RETURNS int LANGUAGE sql AS 'SELECT 1'")
        try connection.execute("REVOKE EXECUTE ON FUNCTION \(role)_f() FROM PUBLIC")
        let limited = try connect(user: role)
        let denied = try #require(throws: PostgresError.self) { try limited.execute("SELECT \(role)_f()") }
        #expect(denied.rule == "insufficient_privilege")

        let data = try #require(throws: PostgresError.self) { try connection.execute("SELECT 'zebra-42'::int") }
        #expect(data.sqlState == "22P02")
        #expect(!"\(data)".contains("zebra"))
        // The connection is still usable after each error.
        #expect(try connection.execute("SELECT 1").scalar == "1")
    }

    @Test("a write skew between two serializable transactions fails one of them with serialization_failure")
    func serializationFailure() throws {
        let setup = try connect()
        let table = "skew_\(UInt32.random(in: 0...UInt32.max))"
        try setup.execute("CREATE TABLE \(table) (k int)")
        let first = try connect()
        let second = try connect()
        let mode = PostgresTransactionMode(isolation: .serializable)
        try first.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        try second.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        _ = try first.execute("SELECT count(*) FROM \(table) WHERE k = 1")
        _ = try second.execute("SELECT count(*) FROM \(table) WHERE k = 2")
        try first.execute("INSERT INTO \(table) VALUES (2)")
        try second.execute("INSERT INTO \(table) VALUES (1)")
        try first.execute("COMMIT")
        let error = try #require(throws: PostgresError.self) { try second.execute("COMMIT") }
        #expect(error.isSerializationFailure)
        #expect(error.rule == "serialization_failure")
        #expect(mode.isolation == .serializable)
    }

    @Test("the export snapshot mode begins SERIALIZABLE READ ONLY DEFERRABLE and rolls back on a thrown error")
    func snapshotTransaction() throws {
        let connection = try connect()
        let settings = try connection.transaction(.snapshotExport) { connection in
            try ["transaction_isolation", "transaction_read_only", "transaction_deferrable"].map {
                try connection.execute("SHOW \($0)").scalar
            }
        }
        #expect(settings == ["serializable", "on", "on"])
        struct Stop: Error {}
        let table = "rolled_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute("CREATE TABLE \(table) (k int)")
        #expect(throws: Stop.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO \(table) VALUES (1)")
                throw Stop()
            }
        }
        #expect(try connection.execute("SELECT count(*) FROM \(table)").scalar == "0")
    }

    @Test("a backend terminated by pg_terminate_backend is connection_lost, not a statement error")
    func terminatedBackend() throws {
        let victim = try connect()
        let killer = try connect()
        try killer.execute("SELECT pg_terminate_backend($1::int)", [String(victim.backendPID)])
        let error = try #require(throws: PostgresError.self) { try victim.execute("SELECT 1") }
        #expect(error.rule == "connection_lost")
        let again = try #require(throws: PostgresError.self) { try victim.execute("SELECT 1") }
        #expect(again.rule == "connection_lost")
    }

    @Test("rows stream one at a time; an error from the consumer stops the query and the connection stays usable")
    func streamingRows() throws {
        let connection = try connect()
        var count = 0
        var sum = 0
        try connection.forEachRow("SELECT g FROM generate_series(1, $1::int) AS g", ["100000"]) { row in
            count += 1
            sum += Int(row.text(0) ?? "") ?? 0
        }
        #expect(count == 100_000)
        #expect(sum == 100_000 * 100_001 / 2)

        struct Enough: Error {}
        var seen = 0
        #expect(throws: Enough.self) {
            try connection.forEachRow("SELECT g FROM generate_series(1, 10000000) AS g") { _ in
                seen += 1
                if seen == 10 { throw Enough() }
            }
        }
        #expect(seen == 10)
        #expect(try connection.execute("SELECT 7").scalar == "7")
    }

    @Test("prepared statements take bytea in binary and text parameters typed by their place; results decode by type")
    func preparedBinary() throws {
        let connection = try connect()
        try connection.executeScript("""
            CREATE TEMP TABLE kit_values(k bigint PRIMARY KEY, b bytea, t text);
            CREATE TEMP TABLE kit_other(x int);
            """)
        try connection.prepare("put", "INSERT INTO kit_values(k, b, t) VALUES ($1, $2, $3)")
        let octets: [UInt8] = [0, 1, 0x5C, 0x78, 255]
        let inserted = try connection.executePrepared("put", [.text("-42"), .bytea(octets), .text("héllo")])
        #expect(inserted.affectedRows == 1)
        _ = try connection.executePrepared("put", [.text("7"), .null, .null])
        try connection.prepare("get", "SELECT k, b, t, b IS NULL, 1 FROM kit_values ORDER BY k")
        let result = try connection.executePrepared("get", [])
        #expect(result.rowCount == 2)
        #expect(result.integer(row: 0, column: 0) == -42)
        #expect(result.withBytes(row: 0, column: 1) { Array($0) } == octets)
        #expect(result.isTextual(column: 2))
        #expect(result.withBytes(row: 0, column: 2) { String(decoding: $0, as: UTF8.self) } == "héllo")
        #expect(result.integer(row: 0, column: 3) == 0)
        #expect(result.integer(row: 1, column: 3) == 1)
        #expect(result.integer(row: 0, column: 4) == 1)
        #expect(result.isNull(row: 1, column: 1))
        #expect(result.integer(row: 0, column: 1) == nil, "bytea is not an integer")
        let failure = try #require(throws: PostgresError.self) { try connection.executePrepared("missing", []) }
        #expect(failure.sqlState == "26000")
    }
}
