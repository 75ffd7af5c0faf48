/// Compact JSON in the member order given, with RFC 8785 strings and numbers: the body form a
/// client stores and sends. It differs from RFC 8785 only in not sorting members, so its length
/// equals the canonical length for the same value.
enum PushWireWriter {
    static func encode(_ value: JSONValue, into out: inout [UInt8]) throws(CanonicalJSON.Failure) {
        switch value {
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                try encode(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                try CanonicalJSON.appendString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                try encode(member.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .null, .bool, .number, .string:
            try CanonicalJSON.encode(value, into: &out)
        }
    }

    /// Encodes a value built from validated push data, whose strings and numbers are I-JSON clean
    /// by construction (validation already produced their canonical form).
    static func encodeValidated(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        do {
            try encode(value, into: &out)
        } catch {
            preconditionFailure("validated push data has an RFC 8785 form")
        }
        return out
    }
}
