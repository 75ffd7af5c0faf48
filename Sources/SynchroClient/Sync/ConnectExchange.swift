import SQLiteKit
import SynchroStore
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
///
/// Seed continuation (`spec/seed-format.md` §8, `spec/integrity.md` §7.5): stored receipts are re-checked against
/// local state first, the remaining ones are sent in `seed_receipts`, and the response must give every one of
/// them a disposition (`scopes.add` or `scopes.remove`); installing it deletes every receipt in the same
/// transaction.
///
/// Identity: the client ID is bound (`client_server_id`) before the first connect is sent, in its own
/// transaction, so the identity a server may have registered is the one every later run presents, even when the
/// first answer never arrives (`docs/decisions.md`, "The client ID is stored before the first connect"). Every
/// request presents the bound ID (``ClientIdentity``), never the configured one.
public struct ConnectExchange: Sendable {
    /// Where and as whom to connect.
    public let context: SyncContext

    /// Creates an exchange.
    public init(context: SyncContext) {
        self.context = context
    }

    /// The connect request local state produces: the fresh sentinel (no generation) or the installed schema
    /// with the stored generation, plus `scope_set_version`, every known scope with its cursor, and the stored
    /// seed receipts exactly as stored (absent when none). A scope with a receipt is listed only in
    /// `seed_receipts`, not in `known_scopes` (`spec/wire-protocol.md` §13 point 9).
    ///
    /// This only reads: ``run()`` re-checks the receipts (``checkSeedReceipts()``) before it builds the request.
    public func request() throws(SyncError) -> ConnectRequest {
        let configured = context.store.configuration.clientID
        let (platform, appVersion) = (context.platform, context.appVersion)
        return try context.store.readSyncState { connection in
            let clientID = try ClientIdentity.presented(on: connection, configured: configured)
            let generation = try MetaStore.integer(.clientGeneration, on: connection)
            let version = try MetaStore.integer(.schemaVersion, on: connection)
            let hash = try MetaStore.value(.schemaHash, on: connection) ?? ""
            let schema = version > 0 && !hash.isEmpty ? try SchemaReference(version: version, hash: hash) : nil
            let receipts = try SeedReceiptStore.all(on: connection)
            let scopes = try ScopeStore.all(on: connection).filter { scope in
                !receipts.contains { $0.scopeID.exactlyEquals(scope.scopeID) }
            }
            return ConnectRequest(
                clientID: clientID, clientGeneration: generation > 0 ? generation : nil, platform: platform,
                appVersion: appVersion, schema: schema,
                scopeSetVersion: try MetaStore.integer(.scopeSetVersion, on: connection),
                knownScopes: ScopeCursorMap(scopes.map { .init(scopeID: $0.scopeID, cursor: $0.cursor) }),
                seedReceipts: receipts.isEmpty ? nil : receipts.map { ($0.scopeID, $0.receipt) })
        }
    }

    /// Re-checks every stored seed receipt against local state (`spec/seed-format.md` §8), in one server-apply
    /// transaction: a failing receipt is deleted and its scope generation bumped, so the scope is rebuilt later.
    /// Returns the rejected receipts' scopes with the rule each broke, in scope order.
    @discardableResult
    public func checkSeedReceipts() throws(SyncError) -> [SeedReceiptOutcome] {
        try SeedReceiptStore.recheck(in: context.store).map {
            SeedReceiptOutcome(scopeID: $0.scopeID, disposition: .rejectedLocally($0.failure))
        }
    }

    /// Re-checks the seed receipts, sends the request and installs the response.
    @discardableResult
    public func run() throws(SyncError) -> ConnectOutcome {
        // After `unsupported` the client never continues with the old manifest (§10.3): only an explicit reset
        // by an upgraded client may clear this, so nothing is sent.
        try requireSupportedSchema()
        let rejected = try checkSeedReceipts()
        var outcome = try send()
        outcome.seedReceipts = (rejected + outcome.seedReceipts).sorted { $0.scopeID.utf8Precedes($1.scopeID) }
        return outcome
    }

    /// The explicit recovery of an `unsupported` blocking error by an upgraded client (`spec/wire-protocol.md`
    /// §3.7, §10.3 "Explicit reset after upgrade"): connects with `schema_reset: true`, the current generation
    /// and the installed schema, and installs the complete current manifest by a reset migration — synced
    /// tables dropped and recreated, synced materialization (provenance, row versions, rebuild state, retry
    /// record) cleared and every scope invalidated — keeping local-only tables, every authored mutation, sealed
    /// batch and retained outcome, and the local rows unresolved intent protects. Every assigned scope is then
    /// rebuilt. Refused without a stored `unsupported` error: a client never resets on its own.
    @discardableResult
    public func resetSchema() throws(SyncError) -> ConnectOutcome {
        guard try SchemaUnsupportedRecord.stored(in: context.store) != nil else {
            throw .invalidState(reason: "no unsupported schema awaits a reset")
        }
        return try send(schemaReset: true)
    }

    /// Sends the request local state produces now (receipts as stored, not re-checked) and installs the
    /// response. A cycle re-checks once per connect and repeats only this step after a retryable failure.
    func send(schemaReset: Bool = false) throws(SyncError) -> ConnectOutcome {
        if !schemaReset { try requireSupportedSchema() }
        var request = try request()
        if schemaReset {
            guard request.schema != nil, request.clientGeneration != nil else {
                throw .invalidState(reason: "a schema reset needs an installed schema and a client generation")
            }
            request.schemaReset = true
        }
        let body = try SyncExchange.mapping { try CanonicalJSON.encode(request.json) }
        try bindBeforeSending(request.clientID)
        let (json, _) = try SyncExchange.post(context.transport, path: "/sync/connect", body: body)
        SyncCrashPoint.connectReceived.reached()
        let response = try ConnectResponse(json: json)
        try ScopeSetVersionRule.check(
            presented: request.scopeSetVersion, received: response.scopeSetVersion,
            changed: !response.added.isEmpty || !response.removed.isEmpty, member: "scope_set_version")
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
        if schemaReset && response.action == "none" {
            throw .contract(rule: "reset_without_manifest", member: "schema.action")
        }
        let receiptScopes = request.seedReceipts?.map(\.scopeID) ?? []
        let seedReceipts = try Self.seedDispositions(of: receiptScopes, in: response)
        try install(
            response, clientID: request.clientID, fresh: request.schema == nil, receiptScopes: receiptScopes,
            reset: schemaReset)
        SyncCrashPoint.connectInstalled.reached()
        return ConnectOutcome(schemaAction: response.action, seedReceipts: seedReceipts)
    }

    /// Stores the client ID the request presents when the store has none yet: an ID is persisted before the
    /// request that uses it can be transmitted (client contract, "Client and mutation identifiers").
    private func bindBeforeSending(_ clientID: String) throws(SyncError) {
        // Read first: a server-apply transaction, even one that writes nothing, forgets the remembered scope
        // digests, and every steady cycle connects (measured: an idle cycle went from 7 ms to 0.8 s).
        guard try SyncExchange.mapping({ try context.store.meta(.clientServerID) }) == nil else { return }
        try context.store.applySync { connection in
            guard try MetaStore.value(.clientServerID, on: connection) == nil else { return }
            try MetaStore.set(.clientServerID, clientID, on: connection)
        }
    }

    private func requireSupportedSchema() throws(SyncError) {
        if let code = try SchemaUnsupportedRecord.stored(in: context.store) {
            throw .invalidState(reason: "the installed schema is unsupported by the server (\(code))")
        }
    }

    /// Every sent receipt's scope must be removed or added (§3.6), and only such an added scope may carry an
    /// initial cursor (§3.5). Checked before anything is written.
    private static func seedDispositions(
        of receiptScopes: [String], in response: ConnectResponse
    ) throws(SyncError) -> [SeedReceiptOutcome] {
        var outcomes: [SeedReceiptOutcome] = []
        for scope in receiptScopes {
            if let added = response.added.first(where: { $0.scopeID.exactlyEquals(scope) }) {
                let disposition: SeedReceiptOutcome.Disposition = added.cursor == nil ? .discarded : .continued
                outcomes.append(SeedReceiptOutcome(scopeID: scope, disposition: disposition))
            } else if response.removed.contains(where: { $0.exactlyEquals(scope) }) {
                outcomes.append(SeedReceiptOutcome(scopeID: scope, disposition: .unassigned))
            } else {
                throw .contract(rule: "seed_receipt_scope_undisposed", member: "scopes")
            }
        }
        for added in response.added where added.cursor != nil {
            guard receiptScopes.contains(where: { $0.exactlyEquals(added.scopeID) }) else {
                throw .contract(rule: "initial_cursor_without_seed_receipt", member: "scopes.add[].cursor")
            }
        }
        return outcomes
    }

    private func install(
        _ response: ConnectResponse, clientID: String, fresh: Bool, receiptScopes: [String], reset: Bool
    ) throws(SyncError) {
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
        if !fresh, !reset, manifest != nil, version == response.schema.version, hash == response.schema.hash {
            // A schema action names a different manifest; re-sending the installed one is not a migration (a
            // reset may reinstall it).
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
        // Over an installed schema the migration journal owns the cursor replacements and affected scopes.
        let migrates = manifest != nil && !fresh
        let install = { (connection: Connection) throws in
            let rows = LocalRows(connection: connection, manifest: try LocalRows.activeManifest(on: connection))
            for scopeID in response.removed {
                try ScopeStore.remove(scopeID, rows: rows, on: connection)
            }
            for (scopeID, cursor) in response.added {
                try ScopeStore.add(scopeID, cursor: cursor, on: connection)
                // A seeded scope with a cursor continues from the seed boundary with its seeded rows and
                // checksums; `null` discards the continuation state and the scope is rebuilt after push.
                if cursor == nil, receiptScopes.contains(where: { $0.exactlyEquals(scopeID) }) {
                    try ScopeStore.invalidate(scopeID, on: connection)
                }
            }
            try connection.run("DELETE FROM _synchro_seed_receipts")
            if reset { try connection.run("DELETE FROM _synchro_blocking_error") }
            for (scopeID, cursor) in response.cursorUpdates where !migrates {
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
            for scopeID in affected where !migrates && !invalidated.contains(scopeID) {
                try ScopeStore.invalidate(scopeID, on: connection)
            }
            try MetaStore.set(.clientGeneration, String(response.clientGeneration), on: connection)
            try MetaStore.set(.scopeSetVersion, String(response.scopeSetVersion), on: connection)
            try MetaStore.set(.clientServerID, clientID, on: connection)
            try BackoffStore.retireAfterConnect(on: connection, context: context)
        }
        if let manifest, migrates {
            // Prepared in its own transaction, then DDL, activation, scope state, assignment and the journal's
            // `applied` mark commit in one schema-migration transaction.
            let journal = try SchemaMigrationJournal.prepare(
                target: manifest, action: response.action, affected: affected,
                cursorUpdates: response.cursorUpdates.map { ($0.scopeID, $0.cursor) }, reset: reset,
                in: context.store)
            do {
                try SyncExchange.mapping {
                    try context.store.applySchema(manifest, migration: journal, inSameTransaction: install)
                }
            } catch {
                try SchemaMigrationJournal.rollBack(in: context.store)
                throw error
            }
            SyncCrashPoint.schemaApplied.reached()
        } else if let manifest {
            // A fresh store: schema DDL, activation and assignment commit in one schema-migration transaction.
            try SyncExchange.mapping { try context.store.applySchema(manifest, inSameTransaction: install) }
        } else {
            // No schema action: the install writes scope state, metadata and provenance (through LocalRows).
            try context.store.applySyncKeepingScopeDigests(install)
        }
    }
}
