import SynchroProtocol

/// Compact JSON in the member order given, with RFC 8785 spellings of strings and numbers: the form of the
/// JSON documents the engine stores (`local_schema`, archive `schema_json`), which the upstream client writes
/// with an unsorted encoder.
enum OrderedJSONWriter {
    static func encode(_ value: JSONValue) throws(CanonicalJSON.Failure) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        try append(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func append(_ value: JSONValue, to out: inout [UInt8]) throws(CanonicalJSON.Failure) {
        switch value {
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                try append(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                try CanonicalJSON.encode(.string(member.key), into: &out)
                out.append(UInt8(ascii: ":"))
                try append(member.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .null, .bool, .number, .string:
            try CanonicalJSON.encode(value, into: &out)
        }
    }
}
