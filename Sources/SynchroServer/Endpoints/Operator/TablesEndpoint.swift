import SynchroProtocol

/// `GET /sync/tables`: registered table metadata for operators (shape not fixed by the protocol,
/// wire §13 point 16): one entry per table of the current manifest with its scope declarations.
enum TablesEndpoint {
    static func handle(state: inout EngineState) -> Result<EndpointReply, WireError> {
        let tables = state.manifest.tables.map { table -> JSONValue in
            let scopes = state.dataset.scopeDeclarations.filter { $0.tableIDs.contains(table.tableID) }
            let scopeNames: [JSONValue] = scopes.map { declaration in
                switch declaration {
                case .shared(let shared): .string(shared.id)
                case .perUser(let perUser): .string(perUser.idPattern)
                }
            }
            return .object(JSONObject([
                JSONMember("table_id", .string(table.tableID)),
                JSONMember("name", .string(table.name)),
                JSONMember("primary_key_field_id", .string(table.primaryKeyFieldID)),
                JSONMember("field_count", .number(JSONNumber(Int64(table.fields.count)))),
                JSONMember("scopes", .array(scopeNames)),
            ]))
        }
        return .success(EndpointReply(json: .object(JSONObject([
            JSONMember("schema_version", .number(JSONNumber(state.manifest.schemaVersion))),
            JSONMember("schema_hash", .string(state.manifest.schemaHash)),
            JSONMember("tables", .array(tables)),
        ]))))
    }
}
