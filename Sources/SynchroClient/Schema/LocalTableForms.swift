import SQLiteKit
import SynchroProtocol

/// The client's mapping between manifest tables, SQLite DDL and stored values, for tools that write or check
/// client-shaped databases without running the engine (the seed writer, verifier and installer). The same
/// functions the engine uses, so a seed and a synced database agree byte for byte.
public enum LocalTableForms {
    /// `CREATE TABLE IF NOT EXISTS "<name>" (…)` exactly as the engine creates a synced table.
    public static func createTableSQL(_ table: LocalSchemaTable) -> String {
        SyncedTableDDL.createTable(table)
    }

    /// The declared SQLite type of a portable type (`spec/client-store.md` §5.2).
    public static func declaredType(_ type: PortableType) -> String {
        SyncedTableDDL.declaredType(type)
    }

    /// The SQLite value of a verified wire value, nil when the value has no storage form.
    public static func storageValue(_ value: JSONValue, type: PortableType) -> SQLiteValue? {
        LocalStorageForm.sqliteValue(value, type: type)
    }

    /// The wire value of a stored value, nil when the stored shape does not fit the type.
    public static func wireValue(_ value: SQLiteValue, type: PortableType) -> JSONValue? {
        LocalRows.wireValue(value, type: type)
    }

    /// `record_id`: the wire primary key as text (string key as is, integers in canonical decimal).
    public static func recordID(primaryKey: JSONValue) -> String? {
        switch primaryKey {
        case .number(let number): number.exactInt64.map(String.init)
        case .string(let string): string
        default: nil
        }
    }

    /// The stored key of a `record_id` (int and int64 keys are stored as integers).
    public static func keyValue(recordID: String, type: PortableType) -> SQLiteValue {
        LocalRows.keyValue(recordID: recordID, type: type)
    }

    /// The wire key of a `record_id`.
    public static func keyJSON(recordID: String, type: PortableType) -> JSONValue {
        LocalRows.keyJSON(recordID: recordID, type: type)
    }
}
