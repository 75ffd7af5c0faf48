/// A map scope ID → `{"cursor": <string or null>}`, as connect `known_scopes` and pull `scopes`
/// carry it (`spec/wire-protocol.md` §3.1, §5.1). Order is the request's; IDs are unique.
public struct ScopeCursorMap: Sendable, Equatable {
    /// One scope and its opaque cursor (nil = no usable state).
    public struct Entry: Sendable, Equatable {
        public let scopeID: String
        public let cursor: String?

        public init(scopeID: String, cursor: String?) {
            self.scopeID = scopeID
            self.cursor = cursor
        }

        public static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.scopeID.exactlyEquals(rhs.scopeID) && lhs.cursor?.utf8.elementsEqual(rhs.cursor?.utf8 ?? "".utf8)
                ?? (rhs.cursor == nil)
        }
    }

    public let entries: [Entry]

    public init(_ entries: [Entry]) {
        self.entries = entries
    }

    /// Validates the map: every value an exact `{"cursor": …}` object, every scope ID nonempty.
    public init(json: JSONObject, path: String) throws(ExactObjectReader.Violation) {
        var entries: [Entry] = []
        entries.reserveCapacity(json.count)
        for member in json.members {
            guard !member.key.utf8.isEmpty else { throw .init("empty_scope_id", path) }
            let reader = try ExactObjectReader(member.value, path: "\(path).*", required: ["cursor"])
            entries.append(Entry(scopeID: member.key, cursor: try reader.nullableString("cursor")))
        }
        self.entries = entries
    }

    public var json: JSONValue {
        .object(JSONObject(entries.map {
            JSONMember($0.scopeID, .object(JSONObject([JSONMember("cursor", $0.cursor.map(JSONValue.string) ?? .null)])))
        }))
    }
}
