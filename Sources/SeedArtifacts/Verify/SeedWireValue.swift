import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The wire value of a stored SQLite value of a portable type: exactly the client's mapping
/// (``LocalTableForms/wireValue(_:type:)``, `spec/client-store.md` §5.2), without the intermediate stored-field
/// record the client builds per value — the verifier converts every value of every row, twice per seed.
/// `SeedWireValueTests` checks the two agree for every type and storage class.
enum SeedWireValue {
    /// The wire value, nil when the stored storage class does not fit the type.
    @inline(__always)
    static func wireValue(_ value: SQLiteValue, type: PortableType) -> JSONValue? {
        switch value {
        case .null:
            return .null
        case .integer(let integer):
            switch type {
            case .int: return .number(JSONNumber(integer))
            case .int64: return .string(String(integer))
            case .boolean: return integer == 0 || integer == 1 ? .bool(integer == 1) : nil
            case .float: return JSONNumber(Double(integer)).map(JSONValue.number)
            default: return nil
            }
        case .real(let real):
            return type == .float ? JSONNumber(real).map(JSONValue.number) : nil
        case .text(let text):
            switch type {
            case .string, .decimal, .datetime, .date, .time, .json: return .string(text)
            default: return nil
            }
        case .blob(let blob):
            return type == .bytes ? .string(Base64URL.encode(blob)) : nil
        }
    }
}
