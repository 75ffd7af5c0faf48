import SynchroClient
import SynchroProtocol

/// `seedkit inspect`: a client store's sync state for an operator, from ``ClientStore/inspect()``.
///
/// Nothing printed authorizes or carries data: scopes show whether a cursor and a checksum are installed,
/// never their text, and rejections show IDs and codes, never rows or server messages.
enum InspectCommand {
    static let spec = CommandSpec(
        "inspect", "a client store's sync state, without secrets",
        options: [
            .value("db", "FILE", .path, "the client store", required: true),
            .json("one JSON object instead of text"),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 0)
        guard let path = arguments.values["db"], !path.isEmpty else {
            throw Arguments.UsageError(message: "inspect needs --db FILE")
        }
        if let status = FailureReport.missing(path, command: "inspect", json: arguments.flags.contains("json")) {
            return status
        }
        // The inspection is the requested data: --quiet has nothing to drop.
        let console = arguments.console("inspect")
        let start = ContinuousClock.now
        let store: ClientStore
        do {
            store = try SqlCommand.openExistingStore(path: path)
        } catch {
            return error.report(command: "inspect", json: arguments.flags.contains("json"))
        }
        defer { store.close() }
        let inspection: ClientInspection
        do {
            inspection = try store.inspect()
        } catch {
            return FailureReport(
                rule: error.rule, message: "cannot read the client store (\(error.rule)): \(error)", status: .checkFailed
            ).print(command: "inspect", json: arguments.flags.contains("json"))
        }
        console.detail("store \(path): \(inspection.scopes.count) scope(s) read in one snapshot", since: start)
        if arguments.flags.contains("json") {
            return JSONLines.write(json(inspection)) ? .success : .checkFailed
        }
        console.result(text(inspection))
        return .success
    }

    /// The JSON form documented in docs/cli.md.
    static func json(_ inspection: ClientInspection) -> [(String, JSONValue)] {
        let scopes = inspection.scopes.map { scope -> JSONValue in
            object([
                "scope_id": .string(scope.scopeID), "state": .string(scope.state.rawValue),
                "generation": .number(JSONNumber(scope.generation)), "has_cursor": .bool(scope.hasCursor),
                "has_checksum": .bool(scope.hasChecksum),
            ])
        }
        let rejections = inspection.rejections.map { rejection -> JSONValue in
            object([
                "mutation_id": .string(rejection.mutationID), "table": .string(rejection.tableName),
                "code": .string(rejection.code),
            ])
        }
        let blocking = inspection.blockingError.map { error -> JSONValue in
            object([
                "operation": .string(error.operation), "code": .string(error.code), "retryable": .bool(error.retryable),
                "recovery_action": .string(error.recoveryAction),
            ])
        }
        return [
            ("schema_version", number(inspection.schemaVersion)),
            ("schema_hash", inspection.schemaHash.map(JSONValue.string) ?? .null),
            ("client_id", inspection.clientID.map(JSONValue.string) ?? .null),
            ("replaced_client_ids", .array(inspection.replacedClientIDs.map(JSONValue.string))),
            ("generation", number(inspection.generation)),
            ("scope_set_version", number(inspection.scopeSetVersion)),
            ("scopes", .array(scopes)),
            ("mutations", .object(JSONObject(
                [JSONMember("pending", number(inspection.pendingMutationCount))]
                    + counts(inspection.mutations.map { ($0.key.rawValue, $0.value) })))),
            ("batches", .object(JSONObject(counts(inspection.batches.map { ($0.key, $0.value) })))),
            ("rejections", .array(rejections)),
            ("blocking_error", blocking ?? .null),
        ]
    }

    /// The terminal form: one fact per line, states and counts in a stable order.
    static func text(_ inspection: ClientInspection) -> String {
        var lines: [String] = []
        let schema = inspection.schemaHash.map { "version \(inspection.schemaVersion), hash \($0)" } ?? "none"
        lines.append("schema: \(schema)")
        lines.append("client id: \(inspection.clientID ?? "none (never connected)")")
        if !inspection.replacedClientIDs.isEmpty {
            lines.append("replaced client ids: \(inspection.replacedClientIDs.joined(separator: ", "))")
        }
        lines.append("generation: \(inspection.generation), scope set version: \(inspection.scopeSetVersion)")
        lines.append("scopes: \(inspection.scopes.isEmpty ? "none" : "")")
        for scope in inspection.scopes {
            lines.append("  \(scope.scopeID): \(scope.state.rawValue.replacingUnderscores), generation "
                + "\(scope.generation), cursor \(scope.hasCursor ? "installed" : "absent"), checksum "
                + "\(scope.hasChecksum ? "installed" : "absent")")
        }
        let states = MutationLifecycleState.allCases.compactMap { state in
            inspection.mutations[state].map { "\(state.rawValue) \($0)" }
        }
        lines.append("mutations: \(inspection.pendingMutationCount) pending"
            + (states.isEmpty ? "" : " (\(states.joined(separator: ", ")))"))
        let batches = inspection.batches.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        lines.append("batches: \(batches.isEmpty ? "none" : batches.joined(separator: ", "))")
        lines.append("rejections: \(inspection.rejections.isEmpty ? "none" : "\(inspection.rejections.count)")")
        for rejection in inspection.rejections {
            lines.append("  \(rejection.mutationID) \(rejection.tableName): \(rejection.code)")
        }
        let blocking = inspection.blockingError.map {
            "\($0.code) during \($0.operation)\($0.retryable ? " (retryable)" : ""), recovery: \($0.recoveryAction)"
        }
        lines.append("blocking error: \(blocking ?? "none")")
        return lines.map { $0.trimmingSuffix(" ") }.joined(separator: "\n") + "\n"
    }

    private static func object(_ members: KeyValuePairs<String, JSONValue>) -> JSONValue {
        .object(JSONObject(members))
    }

    private static func number(_ value: Int64) -> JSONValue {
        .number(JSONNumber(value))
    }

    private static func number(_ value: Int) -> JSONValue {
        .number(JSONNumber(Int64(value)))
    }

    private static func counts(_ pairs: [(String, Int)]) -> [JSONMember] {
        pairs.map { JSONMember($0.0, number($0.1)) }
    }
}

extension String {
    fileprivate var replacingUnderscores: String {
        String(map { $0 == "_" ? " " : $0 })
    }

    fileprivate func trimmingSuffix(_ character: Character) -> String {
        var text = self
        while text.last == character { text.removeLast() }
        return text
    }
}
