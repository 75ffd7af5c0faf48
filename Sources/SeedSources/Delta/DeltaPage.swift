import SynchroProtocol

/// One page of one entity type, read from either shape into what the writer applies: upserted rows and deleted
/// keys in order, the cursor to store after it, and whether another page follows. Every protocol rule of the page
/// itself is checked here (docs/delta-sources.md, "Errors"); the values are checked by the writer.
struct DeltaPage: Sendable {
    enum Change: Sendable {
        case upsert(JSONObject)
        case delete(JSONValue)
    }

    var changes: [Change] = []
    /// The checkpoint after this page.
    var cursor: String
    var hasMore: Bool
    /// Seed 003 §6: the server asks the client to wipe this entity type and pull from zero.
    var reset = false
    var serverTime: String?

    /// Seed 003's `{changes, next_cursor, has_more, reset?, server_time?}` after `since` with at most `limit`
    /// changes; revisions strictly increase from `since`, `next_cursor` is at least the last revision, and a page
    /// that announces more must carry changes and advance the cursor.
    init(changesPage json: JSONValue, since: Int64, limit: Int, key: String) throws(Rule) {
        guard let object = json.objectValue else { throw Rule("page_not_an_object") }
        serverTime = object["server_time"]?.stringValue
        if object["reset"]?.boolValue == true {
            guard object["changes"]?.arrayValue?.isEmpty ?? true else { throw Rule("reset_with_changes") }
            cursor = "0"
            hasMore = true
            reset = true
            return
        }
        guard object["reset"] == nil || object["reset"]?.boolValue == false else { throw Rule("reset_not_a_boolean") }
        guard let list = object["changes"]?.arrayValue else { throw Rule("changes_missing") }
        guard let more = object["has_more"]?.boolValue else { throw Rule("has_more_missing") }
        guard list.count <= limit else { throw Rule("page_over_limit") }
        guard !(more && list.isEmpty) else { throw Rule("has_more_on_empty_page") }
        var last = since
        for item in list {
            guard let change = item.objectValue, let op = change["op"]?.stringValue else {
                throw Rule("change_malformed")
            }
            guard let rev = change["rev"].flatMap(Self.integer) else { throw Rule("rev_missing") }
            guard rev != last else { throw Rule("rev_repeated") }
            guard rev > last else { throw Rule("rev_not_increasing") }
            last = rev
            switch op {
            case "upsert":
                guard let entity = change["entity"]?.objectValue else { throw Rule("upsert_without_entity") }
                changes.append(.upsert(entity))
            case "delete":
                guard let id = change["id"] ?? change["entity"]?.objectValue?[key], !id.isNull else {
                    throw Rule("delete_without_id")
                }
                changes.append(.delete(id))
            default:
                throw Rule("unknown_op")
            }
        }
        guard let next = object["next_cursor"].flatMap(Self.integer) else { throw Rule("next_cursor_missing") }
        guard !more || next > since else { throw Rule("cursor_not_advancing") }
        guard next >= last else { throw Rule("next_cursor_behind_changes") }
        cursor = String(next)
        hasMore = more
    }

    /// Seed 004's page: a JSON array of at most `pageSize` rows; a row whose `deletedField` is not null is a
    /// tombstone; the cursor is the last row's `deletedField ?? cursorField`; a full page means more, and a full
    /// page must move the cursor.
    init(
        listPage json: JSONValue, since: String, pageSize: Int, key: String, cursorField: String, deletedField: String
    ) throws(Rule) {
        guard let rows = json.arrayValue else { throw Rule("page_not_an_array") }
        guard rows.count <= pageSize else { throw Rule("page_over_limit") }
        var cursor = since
        for item in rows {
            guard let row = item.objectValue else { throw Rule("row_not_an_object") }
            guard let id = row[key], !id.isNull else { throw Rule("row_without_key") }
            let deleted = row[deletedField].flatMap { $0.isNull ? nil : $0 }
            guard let mark = Self.cursorText(deleted ?? row[cursorField]) else {
                throw Rule("row_without_cursor_field")
            }
            cursor = mark
            changes.append(deleted == nil ? .upsert(row) : .delete(id))
        }
        hasMore = rows.count == pageSize
        guard !hasMore || cursor != since else { throw Rule("cursor_not_advancing") }
        self.cursor = cursor
    }

    /// A rule a page broke.
    struct Rule: Error {
        let name: String
        init(_ name: String) { self.name = name }
    }

    /// A revision: a JSON integer or a string of decimal digits (seed 003 sends `next_cursor` as a string).
    private static func integer(_ value: JSONValue) -> Int64? {
        if let int = value.numberValue?.exactInt64 { return int }
        guard let text = value.stringValue, let int = Int64(text), String(int) == text else { return nil }
        return int
    }

    private static func cursorText(_ value: JSONValue?) -> String? {
        if let text = value?.stringValue, !text.isEmpty { return text }
        return value?.numberValue?.literal
    }
}
