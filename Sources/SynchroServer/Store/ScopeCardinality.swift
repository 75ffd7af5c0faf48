/// Each scope's live member count — its `membership` rows that carry a row digest — kept so that a terminal
/// checksum does not count the scope in a pass of its own before hashing it: the cardinality precedes the rows in
/// the scope digest's preimage (`spec/integrity.md` §4.6), so without it the digest takes two passes.
///
/// `scope_cardinality` (layout 4) changes in the same transaction as the membership it counts: the materializer
/// adds each write's delta (``add(_:scope:store:)``); the statements that rewrite membership wholesale (the initial
/// load, a schema activation, the layout migration) recount every scope in one statement (``recountAll(store:)``).
/// A scope without a row has no live member.
///
/// The kept count needs no trust of its own: every digest pass declares it up front and the accumulator refuses a
/// pass whose rows differ from it, so a wrong count is a `sync_integrity_failure`, never a wrong checksum.
enum ScopeCardinality {
    /// The layout's table (also the migration's: created only when absent).
    static let table = """
        CREATE TABLE IF NOT EXISTS scope_cardinality(
            scope_id TEXT NOT NULL PRIMARY KEY,
            live INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    /// Every scope's count from membership itself, replacing whatever was kept.
    static let recount = [
        "DELETE FROM scope_cardinality",
        """
        INSERT INTO scope_cardinality(scope_id, live)
            SELECT scope_id, count(*) FROM membership WHERE row_digest IS NOT NULL GROUP BY scope_id
        """,
    ]

    /// Recounts every scope (after a statement that changed membership of many rows at once).
    static func recountAll(store: ServerStore) throws {
        for sql in recount { try store.db.cachedStatement(sql).run([]) }
    }

    /// Moves `scope`'s count by `delta` (live members gained minus lost by one write).
    static func add(_ delta: Int64, scope: String, store: ServerStore) throws {
        guard delta != 0 else { return }
        try store.db.cachedStatement("""
            INSERT INTO scope_cardinality(scope_id, live) VALUES (?, ?)
            ON CONFLICT(scope_id) DO UPDATE SET live = scope_cardinality.live + excluded.live
            """).run([.text(scope), .integer(delta)])
    }

    /// `scope`'s kept count of live members.
    static func live(scope: String, store: ServerStore) throws -> Int64 {
        try store.db.cachedStatement("SELECT live FROM scope_cardinality WHERE scope_id = ?")
            .scalar([.text(scope)])?.integerValue ?? 0
    }
}
