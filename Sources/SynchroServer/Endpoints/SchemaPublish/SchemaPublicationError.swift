import SynchroProtocol

/// Why `POST /operator/schema` refuses a publication: 400 `invalid_request` naming the broken rule,
/// and the table or field at fault when there is one. Schema identifiers are not row data, so
/// naming them is safe; values (defaults, rows) are never quoted.
struct SchemaPublicationError: Error, Equatable, CustomStringConvertible {
    /// Stable snake_case rule name (the list is in `docs/server.md`).
    let rule: String
    var tableID: String?
    var fieldID: String?

    init(_ rule: String, table tableID: String? = nil, field fieldID: String? = nil) {
        self.rule = rule
        self.tableID = tableID
        self.fieldID = fieldID
    }

    var description: String { "schema publication rejected: \(rule)" }

    /// The error envelope: `rule` (and `table_id` / `field_id`) as extra members, which clients of
    /// the protocol routes never see and operators can branch on.
    var wire: WireError {
        var extras = [JSONMember("rule", .string(rule))]
        if let tableID { extras.append(JSONMember("table_id", .string(tableID))) }
        if let fieldID { extras.append(JSONMember("field_id", .string(fieldID))) }
        return WireError(.invalidRequest, description, extras: extras)
    }
}
