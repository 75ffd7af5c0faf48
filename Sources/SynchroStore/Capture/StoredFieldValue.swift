import SynchroProtocol

/// One authored field value as stored in `_synchro_mutation_values` (`spec/client-store.md` §4.5). A row's
/// presence means the field was authored; kind `null` means it was authored as SQL NULL.
public struct StoredFieldValue: Sendable, Equatable {
    /// Which value column holds the value.
    public enum Kind: String, Sendable, CaseIterable {
        case null, boolean, integer, real, text, blob
    }

    /// The manifest field ID.
    public let fieldID: String
    /// The portable type at capture, as stored.
    public let logicalType: String
    /// The stored kind.
    public let kind: Kind
    /// `value_integer` as stored (booleans and integers).
    public let integer: Int64?
    /// `value_real` as stored (floats).
    public let real: Double?
    /// `value_text` as stored (strings, decimals, temporal values, JSON text).
    public let text: String?
    /// `value_blob` as stored (bytes).
    public let blob: [UInt8]?

    /// Creates a stored value.
    public init(
        fieldID: String, logicalType: String, kind: Kind, integer: Int64? = nil, real: Double? = nil,
        text: String? = nil, blob: [UInt8]? = nil
    ) {
        self.fieldID = fieldID
        self.logicalType = logicalType
        self.kind = kind
        self.integer = integer
        self.real = real
        self.text = text
        self.blob = blob
    }

    /// The wire value, after checking the stored shape: exactly one value column populated and matching the
    /// kind and logical type, reals finite, booleans 0 or 1 (the checks that precede sealing).
    ///
    /// `int` is a JSON number, `int64` a decimal string, `bytes` unpadded base64url.
    public func wireValue() -> JSONValue? {
        let populated = [integer != nil, real != nil, text != nil, blob != nil].filter { $0 }.count
        guard let type = PortableType(wireName: logicalType) else { return nil }
        switch kind {
        case .null:
            return populated == 0 ? .null : nil
        case .boolean:
            guard populated == 1, type == .boolean, let integer, integer == 0 || integer == 1 else { return nil }
            return .bool(integer == 1)
        case .integer:
            guard populated == 1, let integer else { return nil }
            switch type {
            case .int: return .number(JSONNumber(integer))
            case .int64: return .string(String(integer))
            default: return nil
            }
        case .real:
            guard populated == 1, type == .float, let real, let number = JSONNumber(real) else { return nil }
            return .number(number)
        case .text:
            guard populated == 1, let text, CaptureTriggerSQL.valueShape(type).kind == "text" else { return nil }
            return .string(text)
        case .blob:
            guard populated == 1, type == .bytes, let blob else { return nil }
            return .string(Base64URL.encode(blob))
        }
    }
}
