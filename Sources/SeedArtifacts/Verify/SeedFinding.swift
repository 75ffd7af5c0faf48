import SynchroProtocol

/// One broken rule found in a seed: the check, where it was found, and a message.
///
/// Privacy: a finding names scopes, tables, field IDs, meta keys and positions — never a row value, a record ID,
/// a receipt, a checksum or a cursor. `row` locates the offending record in `table` without repeating its key: in
/// a synced table it is the row's 1-based ordinal in rowid order (the rowid of an integer key is the key itself);
/// in an internal table (`_synchro_row_versions`, `_synchro_scope_rows`, …) it is the SQLite rowid.
public struct SeedFinding: Sendable, Hashable, CustomStringConvertible {
    /// The rule that does not hold.
    public let check: SeedCheck
    /// The scope concerned, when the rule is about one scope.
    public let scope: String?
    /// The table concerned (synced or internal), when the rule is about one table.
    public let table: String?
    /// Where the offending record is in `table`: its ordinal in a synced table, its rowid in an internal table.
    public let row: Int64?
    /// What is wrong, in words (names and counts only).
    public let message: String
    /// The 1-based page of the file, for a rule about raw bytes (``SeedCheck/credentialResidue``).
    public let page: Int64?

    /// Creates a finding.
    public init(
        _ check: SeedCheck, scope: String? = nil, table: String? = nil, row: Int64? = nil, page: Int64? = nil,
        message: String
    ) {
        self.page = page
        self.check = check
        self.scope = scope
        self.table = table
        self.row = row
        self.message = message
    }

    /// `check [scope S] [table T] [row N]: message`.
    public var description: String {
        var location: [String] = []
        if let scope { location.append("scope \(scope)") }
        if let table { location.append("table \(table)") }
        if let row { location.append("row \(row)") }
        if let page { location.append("page \(page)") }
        let place = location.isEmpty ? "" : " (\(location.joined(separator: ", ")))"
        return "\(check.name)\(place): \(message)"
    }

    /// `{"check":…,"message":…,"row":N|null,"scope":S|null,"table":T|null}`, and `"page":N` when there is a page.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("check", .string(check.name)),
            JSONMember("scope", scope.map(JSONValue.string) ?? .null),
            JSONMember("table", table.map(JSONValue.string) ?? .null),
            JSONMember("row", row.map { .number(JSONNumber($0)) } ?? .null),
            JSONMember("message", .string(message)),
        ] + (page.map { [JSONMember("page", .number(JSONNumber($0)))] } ?? [])))
    }
}
