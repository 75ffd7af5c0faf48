import SQLiteKit
import SynchroProtocol

/// One connect exchange (`spec/wire-protocol.md` §3): builds the request from local state, validates the whole
/// 200 body, then installs it.
///
/// Schema actions (`spec/wire-protocol.md` §3.3, §12.4): `none` keeps the installed manifest; `replace` applies the
/// inline manifest (fresh store, or an additive migration of the installed one); `rebuild_local` migrates like
/// `replace` and also makes every affected scope rebuild-required. DDL, activation, cursor replacements and the
/// assignment commit in one schema-migration transaction; local-only tables and queued intent are kept.
/// `unsupported` records a non-retryable blocking error (recovery `schema_reset`) and changes nothing else;
/// while that error is stored, connect sends nothing and fails with ``SyncError/invalidState(reason:)``.
public struct ConnectExchange: Sendable {
    /// Where and as whom to connect.
    public let context: SyncContext

    /// Creates an exchange.
    public init(context: SyncContext) {
        self.context = context
    }

    /// The connect request local state produces: the fresh sentinel (no generation) or the installed schema
    /// with the stored generation, plus `scope_set_version` and every known scope with its cursor.
    public func request() throws(SyncError) -> ConnectRequest {
        let clientID = context.clientID
        let (platform, appVersion) = (context.platform, context.appVersion)
        return try context.store.readSyncState { connection in
            let generation = try MetaStore.integer(.clientGeneration, on: connection)
            let version = try MetaStore.integer(.schemaVersion, on: connection)
            let hash = try MetaStore.value(.schemaHash, on: connection) ?? ""
            let schema = version > 0 && !hash.isEmpty ? try SchemaReference(version: version, hash: hash) : nil
            let scopes = try ScopeStore.all(on: connection)
            return ConnectRequest(
                clientID: clientID, clientGeneration: generation > 0 ? generation : nil, platform: platform,
                appVersion: appVersion, schema: schema,
                scopeSetVersion: try MetaStore.integer(.scopeSetVersion, on: connection),
                knownScopes: ScopeCursorMap(scopes.map { .init(scopeID: $0.scopeID, cursor: $0.cursor) }))
        }
    }

    /// Sends the request and installs the response.
    public func run() throws(SyncError) {
        // After `unsupported` the client never continues with the old manifest (§10.3): only an explicit reset
        // by an upgraded client may clear this, so nothing is sent.
        if let code = try SchemaUnsupportedRecord.stored(in: context.store) {
            throw .invalidState(reason: "the installed schema is unsupported by the server (\(code))")
        }
        let request = try request()
        let body = try SyncExchange.mapping { try CanonicalJSON.encode(request.json) }
        let (json, _) = try SyncExchange.post(context.transport, path: "/sync/connect", body: body)
        let response = try ConnectResponse(json: json)
        if response.action == "unsupported" {
            guard request.schema != nil else {
                throw .contract(rule: "unsupported_for_fresh_client", member: "schema.action")
            }
            // ResponseValidation already required a string `reason` for this action.
            let reason = json.objectValue?["schema"]?.objectValue?["reason"]?.stringValue ?? ""
            guard SchemaUnsupportedRecord.reasons.contains(reason) else {
                throw .contract(rule: "unknown_reason", member: "schema.reason")
            }
            try SchemaUnsupportedRecord.record(reason: reason, in: context.store)
            throw .invalidState(reason: "the installed schema is unsupported by the server (\(reason))")
        }
        try install(response, fresh: request.schema == nil)
    }

    private func install(_ response: ConnectResponse, fresh: Bool) throws(SyncError) {
        var manifest: ClientManifest?
        switch response.action {
        case "none":
            guard !fresh else { throw .contract(rule: "none_for_fresh_client", member: "schema.action") }
        case "replace", "rebuild_local":
            guard !(fresh && response.action == "rebuild_local") else {
                throw .contract(rule: "rebuild_local_for_fresh_client", member: "schema.action")
            }
            do {
                manifest = try ClientManifest(json: response.schemaDefinition ?? .null)
            } catch {
                throw .contract(rule: "invalid_manifest", member: "schema_definition")
            }
            guard manifest?.reference == response.schema else {
                throw .contract(rule: "manifest_reference_mismatch", member: "schema_definition")
            }
        default:
            throw .schemaActionNotSupported(action: response.action)
        }
        // Checked before any write: the assignment must describe the schema that will be active and only known
        // scopes may get cursor replacements.
        let (version, hash, known) = try context.store.readSyncState { connection in
            (
                try MetaStore.integer(.schemaVersion, on: connection),
                try MetaStore.value(.schemaHash, on: connection) ?? "",
                Set(try ScopeStore.all(on: connection).map(\.scopeID))
            )
        }
        if manifest == nil, version != response.schema.version || hash != response.schema.hash {
            throw .contract(rule: "schema_reference_mismatch", member: "schema")
        }
        if !fresh, manifest != nil, version == response.schema.version, hash == response.schema.hash {
            // A schema action names a different manifest; re-sending the installed one is not a migration.
            throw .contract(rule: "schema_action_for_current_schema", member: "schema.action")
        }
        let assigned = known.subtracting(response.removed).union(response.added.map(\.scopeID))
        guard response.cursorUpdates.allSatisfy({ assigned.contains($0.scopeID) }) else {
            throw .contract(rule: "cursor_update_for_unknown_scope", member: "scope_cursor_updates")
        }
        // Affected scopes are existing assignments that stay assigned (an intersection with them, §3.3).
        let affected = response.affectedScopes ?? []
        guard affected.allSatisfy({ known.contains($0) && !response.removed.contains($0) }) else {
            throw .contract(rule: "affected_scope_not_assigned", member: "affected_scopes")
        }
        let clientID = context.clientID
        let install = { (connection: Connection) throws in
            let rows = LocalRows(connection: connection, manifest: try LocalRows.activeManifest(on: connection))
            for scopeID in response.removed {
                try ScopeStore.remove(scopeID, rows: rows, on: connection)
            }
            for (scopeID, cursor) in response.added {
                try ScopeStore.add(scopeID, cursor: cursor, on: connection)
            }
            for (scopeID, cursor) in response.cursorUpdates {
                if let cursor {
                    try connection.run(
                        "UPDATE _synchro_scopes SET cursor = ? WHERE scope_id = ?", [.text(cursor), .text(scopeID)])
                } else {
                    try ScopeStore.invalidate(scopeID, on: connection)
                }
            }
            // `rebuild_local`: cursor, checksum and local checksum dropped, rows and queued intent kept; the cycle
            // pushes first and then rebuilds these scopes. A `null` update already did this (one generation bump).
            let invalidated = Set(response.cursorUpdates.filter { $0.cursor == nil }.map(\.scopeID))
            for scopeID in affected where !invalidated.contains(scopeID) {
                try ScopeStore.invalidate(scopeID, on: connection)
            }
            try MetaStore.set(.clientGeneration, String(response.clientGeneration), on: connection)
            try MetaStore.set(.scopeSetVersion, String(response.scopeSetVersion), on: connection)
            try MetaStore.set(.clientServerID, clientID, on: connection)
        }
        if let manifest {
            // Schema DDL, activation and assignment commit in one schema-migration transaction.
            try SyncExchange.mapping {
                try context.store.applySchema(manifest, migratingActiveSchema: !fresh, inSameTransaction: install)
            }
        } else {
            try context.store.applySync(install)
        }
    }
}
