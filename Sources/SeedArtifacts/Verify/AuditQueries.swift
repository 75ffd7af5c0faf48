import SQLiteKit

/// The row audit's queries that read whole tables but nothing the row scan computes: how many row versions name
/// each table, and the edges that name a table or a scope outside the manifest. ``SeedRowAudit`` reports from these
/// answers after the row scan, in the same order as before; when it can open a second connection, the answers are
/// fetched on it and a thread of their own while the rows are read (``AuditQueries/init(reopen:tables:)``), instead
/// of at the end of the audit, where nothing else runs beside its edge pass and scope digests.
final class AuditQueries {
    struct Answers {
        /// `_synchro_row_versions` rows per `table_name` (any storage class), in `table_name` order.
        var versionCounts: [(table: SQLiteValue, count: Int)] = []
        /// Edges whose `table_name` is none of the manifest's tables: rowid and the name as text, if it is text.
        var edgesOfOtherTables: [(rowid: Int64, table: String?)] = []
        /// Edge counts per `scope_id` that has no `_synchro_scopes` row, the ID as text if it is text.
        var edgesOfOtherScopes: [(scope: String?, count: Int64)] = []
    }

    /// Runs the queries on `connection`; `tables` are the manifest's local table names.
    static func answers(on connection: Connection, tables: [String]) throws -> Answers {
        var answers = Answers()
        answers.versionCounts = try connection.query(
            "SELECT table_name, count(*) FROM _synchro_row_versions GROUP BY table_name ORDER BY table_name"
        ) { (try $0.value(at: 0), $0.int(at: 1)) }
        let placeholders = Array(repeating: "?", count: tables.count).joined(separator: ", ")
        answers.edgesOfOtherTables = try connection.query(
            "SELECT rowid, table_name FROM _synchro_scope_rows WHERE table_name NOT IN (\(placeholders))",
            tables.map { .text($0) }
        ) { ($0.int64(at: 0), (try? $0.value(at: 1))?.textValue) }
        answers.edgesOfOtherScopes = try connection.query("""
            SELECT scope_id, count(*) FROM _synchro_scope_rows
            WHERE scope_id NOT IN (SELECT scope_id FROM _synchro_scopes) GROUP BY scope_id
            """
        ) { ((try? $0.value(at: 0))?.textValue, $0.int64(at: 1)) }
        return answers
    }

    /// Nil when the thread could not open its connection.
    private let outcome: Eventual<Result<Answers, any Error>?>

    /// Starts fetching the answers on a connection from `reopen`, on a thread of its own.
    init(reopen: @escaping @Sendable () throws -> Connection, tables: [String]) {
        outcome = Eventual(onThread: {
            guard let connection = try? reopen() else { return nil }
            defer { connection.close() }
            return Result { try Self.answers(on: connection, tables: tables) }
        })
    }

    /// Waits for the thread: its answers, or what stopped them; nil when it could not open its connection.
    func wait() -> Result<Answers, any Error>? {
        outcome.wait()
    }
}
