import CSQLite

/// The physical floor of every server figure: the same rows inserted straight through the sqlite3 C
/// API — one prepared `INSERT` in one transaction, into a table with the server's key and blob
/// columns, with the server's journal settings (WAL, `synchronous=NORMAL`). Nothing the server
/// does per row (validation, digests, stream entries, JSON, HTTP) is in it.
struct RawSQLiteBaseline {
    let path: String

    /// Rows per second of the median of `iterations` timed inserts of `rows`, each into a freshly
    /// created table (creating it is not timed).
    func rowsPerSecond(_ rows: [StoredRowImage], iterations: Int) throws -> Double {
        let database = try BaselineDatabase(path: path)
        defer { database.close() }
        try database.execute("PRAGMA journal_mode=WAL")
        try database.execute("PRAGMA synchronous=NORMAL")
        let clock = ContinuousClock()
        var durations: [Duration] = []
        // One untimed warm-up, as `Stopwatch.samples` does.
        for round in 0...max(1, iterations) {
            try database.execute("DROP TABLE IF EXISTS bench_rows")
            try database.execute("""
                CREATE TABLE bench_rows(
                    identity BLOB PRIMARY KEY, table_id TEXT NOT NULL, pk BLOB NOT NULL, row BLOB NOT NULL,
                    server_version TEXT NOT NULL, row_digest BLOB NOT NULL
                ) WITHOUT ROWID
                """)
            let start = clock.now
            try database.insert(rows)
            if round > 0 { durations.append(start.duration(to: clock.now)) }
        }
        let median = Samples(durations: durations).median
        return median.seconds > 0 ? Double(rows.count) / median.seconds : 0
    }
}

/// A bare sqlite3 handle: just what the baseline needs, so that no SQLiteKit layer is measured.
private final class BaselineDatabase {
    private var handle: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            sqlite3_close_v2(handle)
            throw BenchmarkFailure("cannot open the baseline database")
        }
    }

    func close() {
        sqlite3_close_v2(handle)
        handle = nil
    }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchmarkFailure("baseline SQL failed: \(String(cString: sqlite3_errmsg(handle)))")
        }
    }

    /// `BEGIN`, one prepared `INSERT` per row, `COMMIT`.
    func insert(_ rows: [StoredRowImage]) throws {
        var statement: OpaquePointer?
        let sql = """
            INSERT INTO bench_rows(identity, table_id, pk, row, server_version, row_digest) VALUES (?, ?, ?, ?, ?, ?)
            """
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK
        else { throw BenchmarkFailure("baseline prepare failed") }
        defer { sqlite3_finalize(statement) }
        try execute("BEGIN IMMEDIATE")
        for row in rows {
            // Static bindings (no copy): every buffer stays valid until the step below has read it.
            let result = row.identity.withUnsafeBytes { identity in
                row.pk.withUnsafeBytes { pk in
                    row.row.withUnsafeBytes { json in
                        row.digest.withUnsafeBytes { digest in
                            row.tableID.withCString { table in
                                row.serverVersion.withCString { version in
                                    sqlite3_bind_blob(statement, 1, identity.baseAddress, Int32(identity.count), nil)
                                    sqlite3_bind_text(statement, 2, table, -1, nil)
                                    sqlite3_bind_blob(statement, 3, pk.baseAddress, Int32(pk.count), nil)
                                    sqlite3_bind_blob(statement, 4, json.baseAddress, Int32(json.count), nil)
                                    sqlite3_bind_text(statement, 5, version, -1, nil)
                                    sqlite3_bind_blob(statement, 6, digest.baseAddress, Int32(digest.count), nil)
                                    let stepped = sqlite3_step(statement)
                                    sqlite3_reset(statement)
                                    return stepped
                                }
                            }
                        }
                    }
                }
            }
            guard result == SQLITE_DONE else {
                throw BenchmarkFailure("baseline insert failed: \(String(cString: sqlite3_errmsg(handle)))")
            }
        }
        try execute("COMMIT")
    }
}
