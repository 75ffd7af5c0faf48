import SQLiteKit
import SynchroProtocol

/// One connect exchange (`spec/wire-protocol.md` §3): builds the request from local state, validates the whole
/// 200 body, then installs it.
///
/// Supported schema actions: `none` (the installed manifest is current) and `replace` on a fresh store (the
/// inline manifest is applied). `replace` over an installed schema, `rebuild_local` and `unsupported` throw
/// ``SyncError/schemaActionNotSupported(action:)`` before anything is written.
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
        let request = try request()
        let body = try SyncExchange.mapping { try CanonicalJSON.encode(request.json) }
        let (json, _) = try SyncExchange.post(context.transport, path: "/sync/connect", body: body)
        try install(ConnectResponse(json: json), fresh: request.schema == nil)
    }

    private func install(_ response: ConnectResponse, fresh: Bool) throws(SyncError) {
        var manifest: ClientManifest?
        switch response.action {
        case "none":
            guard !fresh else { throw .contract(rule: "none_for_fresh_client", member: "schema.action") }
        case "replace" where fresh:
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
        let assigned = known.subtracting(response.removed).union(response.added.map(\.scopeID))
        guard response.cursorUpdates.allSatisfy({ assigned.contains($0.scopeID) }) else {
            throw .contract(rule: "cursor_update_for_unknown_scope", member: "scope_cursor_updates")
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
            try MetaStore.set(.clientGeneration, String(response.clientGeneration), on: connection)
            try MetaStore.set(.scopeSetVersion, String(response.scopeSetVersion), on: connection)
            try MetaStore.set(.clientServerID, clientID, on: connection)
        }
        if let manifest {
            // Schema activation and assignment commit in one schema-migration transaction.
            try SyncExchange.mapping { try context.store.applySchema(manifest, inSameTransaction: install) }
        } else {
            try context.store.applySync(install)
        }
    }
}
