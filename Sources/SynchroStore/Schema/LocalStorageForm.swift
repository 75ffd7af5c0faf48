import SQLiteKit
import SynchroProtocol

/// The SQLite storage form of a verified wire value (`spec/client-store.md` §5.2): one mapping for
/// every path that writes server rows locally (push outcomes, pull changes, rebuild records).
package enum LocalStorageForm {
    /// The SQLite value of `value` of portable `type`, or nil when the value has no storage form.
    package static func sqliteValue(_ value: JSONValue, type: PortableType) -> SQLiteValue? {
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

    /// The stored key value of a `record_id` (int and int64 keys are stored as integers).
    package static func keyValue(recordID: String, type: PortableType) -> SQLiteValue {
        switch type {
        case .int, .int64: Int64(recordID).map(SQLiteValue.integer) ?? .text(recordID)
        default: .text(recordID)
        }
    }

    /// The wire key value of a `record_id`: a JSON number for int, a decimal string for int64, else the text.
    package static func keyJSON(recordID: String, type: PortableType) -> JSONValue {
        switch type {
        case .int: Int64(recordID).map { .number(JSONNumber($0)) } ?? .string(recordID)
        default: .string(recordID)
        }
    }

    /// The wire value of a stored SQLite value of `type`, nil when the stored shape does not fit the type.
    package static func wireValue(_ value: SQLiteValue, type: PortableType) -> JSONValue? {
        let name = type.rawValue
        let stored: StoredFieldValue
        switch value {
        case .null: stored = StoredFieldValue(fieldID: "", logicalType: name, kind: .null)
        case .integer(let integer) where type == .float:
            stored = StoredFieldValue(fieldID: "", logicalType: name, kind: .real, real: Double(integer))
        case .integer(let integer):
            stored = StoredFieldValue(
                fieldID: "", logicalType: name, kind: type == .boolean ? .boolean : .integer, integer: integer)
        case .real(let real): stored = StoredFieldValue(fieldID: "", logicalType: name, kind: .real, real: real)
        case .text(let text): stored = StoredFieldValue(fieldID: "", logicalType: name, kind: .text, text: text)
        case .blob(let blob): stored = StoredFieldValue(fieldID: "", logicalType: name, kind: .blob, blob: blob)
        }
        return stored.wireValue()
    }

    /// `record_id`: the wire primary key as text (string key as is, integers in canonical decimal); nil for a
    /// key of another shape.
    package static func recordID(primaryKey: JSONValue) -> String? {
        switch primaryKey {
        case .number(let number): number.exactInt64.map(String.init)
        case .string(let string): string
        default: nil
        }
    }
}
