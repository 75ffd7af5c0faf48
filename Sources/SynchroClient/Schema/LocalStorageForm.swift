import SQLiteKit
import SynchroProtocol

/// The SQLite storage form of a verified wire value (`spec/client-store.md` §5.2): one mapping for
/// every path that writes server rows locally (push outcomes, pull changes, rebuild records).
enum LocalStorageForm {
    /// The SQLite value of `value` of portable `type`, or nil when the value has no storage form.
    static func sqliteValue(_ value: JSONValue, type: PortableType) -> SQLiteValue? {
        if value.isNull { return .null }
        switch type {
        case .int:
            return value.numberValue?.exactInt64.map(SQLiteValue.integer)
        case .int64:
            return value.stringValue.flatMap { Int64($0) }.map(SQLiteValue.integer)
        case .boolean:
            return value.boolValue.map { .integer($0 ? 1 : 0) }
        case .float:
            return value.numberValue?.doubleValue.map(SQLiteValue.real)
        case .bytes:
            return value.stringValue.flatMap(Base64URL.decode).map(SQLiteValue.blob)
        case .string, .decimal, .datetime, .date, .time, .json:
            return value.stringValue.map(SQLiteValue.text)
        }
    }
}
