import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The authored column mask of a statement or transaction (`spec/client-store.md` §4.6, §7): rows in
/// `_synchro_capture_context` and `_synchro_capture_fields` under one statement token. The capture triggers
/// read them; both tables must be empty at every commit.
struct CaptureContext {
    /// The local table name, as the schema spells it.
    let tableName: String
    /// The operation the mask authors.
    let operation: PushOperation
    /// The authored column names, as the schema spells them.
    let columnNames: [String]

    /// The context an INSERT into `table` installs: the writable columns its column list names (all writable
    /// columns without a list, none for `DEFAULT VALUES`).
    static func inferredInsert(into table: LocalSchemaTable, columns: [String]?) -> CaptureContext {
        let named = columns.map { Set($0.map(SQLName.normalized)) }
        let authored = table.writableColumns.filter { named?.contains(SQLName.normalized($0.name)) ?? true }
        return CaptureContext(tableName: table.tableName, operation: .insert, columnNames: authored.map(\.name))
    }

    func install(token: String, on connection: Connection) throws(SQLiteError) {
        try connection.cachedStatement(
            "INSERT INTO _synchro_capture_context (statement_token, table_name, operation) VALUES (?, ?, ?)"
        ).run([.text(token), .text(tableName), .text(operation.rawValue)])
        let field = try connection.cachedStatement(
            "INSERT INTO _synchro_capture_fields (statement_token, table_name, column_name) VALUES (?, ?, ?)")
        for column in columnNames {
            try field.run([.text(token), .text(tableName), .text(column)])
        }
    }

    static func clear(token: String, on connection: Connection) throws(SQLiteError) {
        try connection.cachedStatement("DELETE FROM _synchro_capture_fields WHERE statement_token = ?")
            .run([.text(token)])
        try connection.cachedStatement("DELETE FROM _synchro_capture_context WHERE statement_token = ?")
            .run([.text(token)])
    }

    /// Whether any capture context row remains (a managed write must not commit then).
    static func remains(on connection: Connection) throws(SQLiteError) -> Bool {
        try connection.cachedStatement("""
            SELECT EXISTS (SELECT 1 FROM _synchro_capture_context) OR EXISTS (SELECT 1 FROM _synchro_capture_fields)
            """).scalar()?.integerValue == 1
    }
}
