import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The `_synchro_schema_migration` journal (`spec/client-store.md` §4.13, §10; client contract, "Schema
/// migration" in the process-death table): a schema action over an installed schema is first *prepared* — the
/// target manifest, the action, the affected scopes, the cursor replacements and the derived plan committed in
/// one transaction — and then *applied* in one schema-migration transaction that re-derives the plan, requires
/// it to equal the journal's, runs it together with the connect's assignment and marks the journal `applied`.
///
/// A process that dies in between finds a `prepared` journal at the next start and resumes exactly that
/// migration before any request, or rolls it back (deletes the journal, nothing else was written) when the
/// store no longer is its source. An `applied` journal is kept until every affected scope has verified state
/// again, so a restarted client still knows which rebuilds the migration owes.
struct SchemaMigrationJournal {
    /// `phase`.
    enum Phase: String {
        case prepared
        case applied
    }

    /// `journal_version`.
    static let journalVersion: Int64 = 1

    /// The installed schema the migration starts from.
    let source: SchemaReference
    /// The manifest it installs.
    let target: ClientManifest
    /// `replace` or `rebuild_local`.
    let action: String
    /// Scopes that must be rebuilt under the target, bytewise sorted and unique.
    let affectedScopes: [String]
    /// Replacement cursors of existing assignments (`nil`: rebuild-required), as the connect response gave them.
    let cursorUpdates: [(scopeID: String, cursor: String?)]
    /// `migration_plan_hash` of the plan derived when the journal was prepared.
    let planHash: String
    /// Whether this is an explicit `schema_reset` (a reset plan).
    let isReset: Bool
    /// Where the migration is.
    let phase: Phase

    // MARK: Prepare

    /// Derives the plan from the installed schema and commits a `prepared` journal in one transaction; throws
    /// before writing anything when the plan cannot be derived (a change the client refuses). Scopes an earlier
    /// `applied` journal still owes a rebuild are carried into the new one.
    static func prepare(
        target: ClientManifest, action: String, affected: [String], cursorUpdates: [(scopeID: String, cursor: String?)],
        reset: Bool, in store: ClientStore
    ) throws(SyncError) -> SchemaMigrationJournal {
        let journal = try store.applySync { connection -> Box in
            let source = try activeReference(on: connection)
            let tables = try LocalSchemaJSON.decode(try MetaStore.value(.localSchema, on: connection) ?? "[]")
            let plan = try SchemaMigrationPlan.derive(from: tables, sourceReference: source, to: target, reset: reset)
            var scopes = Set(affected)
            if let earlier = try load(on: connection), earlier.phase == .applied, earlier.target.reference == source {
                scopes.formUnion(try unfinished(earlier.affectedScopes, on: connection))
            }
            let journal = SchemaMigrationJournal(
                source: source, target: target, action: action,
                affectedScopes: scopes.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) },
                cursorUpdates: cursorUpdates, planHash: plan.hash, isReset: reset, phase: .prepared)
            try journal.write(plan: plan, on: connection)
            return Box(journal)
        }.value
        SyncCrashPoint.schemaPrepared.reached()
        return journal
    }

    /// Sendable carrier of a journal out of a store transaction (the manifest JSON is an immutable value).
    private final class Box: @unchecked Sendable {
        let value: SchemaMigrationJournal
        init(_ value: SchemaMigrationJournal) { self.value = value }
    }

    // MARK: Apply (inside the schema-migration transaction)

    /// Re-derives the plan from the store as it is now and requires it to be the journal's, so a resumed
    /// migration is the same migration.
    func verifyPlan(on connection: Connection) throws {
        guard phase == .prepared, try Self.activeReference(on: connection) == source else {
            throw ClientStoreError.invalidLocalSchema(reason: "the migration journal does not start at this schema")
        }
        let tables = try LocalSchemaJSON.decode(try MetaStore.value(.localSchema, on: connection) ?? "[]")
        let derived = try SchemaMigrationPlan.derive(from: tables, sourceReference: source, to: target, reset: isReset)
        guard derived.hash == planHash else {
            throw ClientStoreError.invalidLocalSchema(reason: "the migration plan differs from its journal")
        }
    }

    /// `apply_scope_state`: installs each non-null replacement cursor, marks null ones and every affected scope
    /// rebuild-required (each scope once), for scopes that are still assigned. Every kept checksum was verified
    /// under the source schema, so each scope's local checksum is emptied until a pull or rebuild verifies it
    /// under the target (row and scope digests include the schema hash).
    func applyScopeState(on connection: Connection) throws {
        try connection.run("UPDATE _synchro_scopes SET local_checksum = ''")
        let known = Set(try ScopeStore.all(on: connection).map(\.scopeID))
        var invalidated: Set<String> = []
        for (scopeID, cursor) in cursorUpdates where known.contains(scopeID) {
            if let cursor {
                try connection.run(
                    "UPDATE _synchro_scopes SET cursor = ? WHERE scope_id = ?", [.text(cursor), .text(scopeID)])
            } else {
                try ScopeStore.invalidate(scopeID, on: connection)
                invalidated.insert(scopeID)
            }
        }
        // A reset already invalidated every scope (clear_synced_materialization).
        guard !isReset else { return }
        for scopeID in affectedScopes where known.contains(scopeID) && !invalidated.contains(scopeID) {
            try ScopeStore.invalidate(scopeID, on: connection)
        }
    }

    /// Ends the apply transaction's journal work: `applied` while affected scopes owe a rebuild, else deleted.
    func markApplied(on connection: Connection) throws {
        if affectedScopes.isEmpty {
            try connection.run("DELETE FROM _synchro_schema_migration")
        } else {
            try connection.run("UPDATE _synchro_schema_migration SET phase = 'applied' WHERE singleton = 1")
        }
    }

    // MARK: Recovery

    /// Before any request of a cycle: a `prepared` journal is resumed (its migration applied, without a connect
    /// response, which the cycle's connect then brings) when the store still is its source and the plan
    /// re-derives equal, and rolled back otherwise; an `applied` journal is cleared once nothing is owed.
    /// Returns whether a migration was resumed.
    @discardableResult
    static func recover(in store: ClientStore) throws(SyncError) -> Bool {
        guard let journal = try store.readSyncState({ connection in try load(on: connection).map(Box.init) })?.value
        else { return false }
        guard journal.phase == .prepared else {
            try clearIfFinished(in: store)
            return false
        }
        do {
            try SyncExchange.mapping {
                try store.applySchema(journal.target, migration: journal) { connection in
                    // A resumed reset is the recovery of the `unsupported` error it was prepared for.
                    if journal.isReset { try connection.run("DELETE FROM _synchro_blocking_error") }
                }
            }
            SyncCrashPoint.schemaApplied.reached()
            return true
        } catch {
            // Rolled back: the apply transaction wrote nothing, so deleting the journal restores the state
            // before the migration was prepared; the cycle's connect asks for the schema action again.
            try rollBack(in: store)
            return false
        }
    }

    /// Deletes a `prepared` journal (nothing of its migration was committed).
    static func rollBack(in store: ClientStore) throws(SyncError) {
        try store.applySync { connection in
            try connection.run("DELETE FROM _synchro_schema_migration WHERE phase = 'prepared'")
        }
    }

    /// Deletes an `applied` journal whose affected scopes all have a cursor, a verified checksum and no rebuild
    /// attempt again (or are no longer assigned).
    static func clearIfFinished(in store: ClientStore) throws(SyncError) {
        // Writes only the journal, which no scope digest reads.
        try store.applySyncKeepingScopeDigests { connection in
            guard let journal = try load(on: connection), journal.phase == .applied,
                  try unfinished(journal.affectedScopes, on: connection).isEmpty
            else { return }
            try connection.run("DELETE FROM _synchro_schema_migration")
        }
    }

    /// The scopes of `scopes` that are assigned and not verified yet.
    private static func unfinished(_ scopes: [String], on connection: Connection) throws -> [String] {
        try scopes.filter { scope in
            try connection.scalar("""
                SELECT count(*) FROM _synchro_scopes AS s WHERE s.scope_id = ? AND (s.cursor IS NULL
                    OR s.checksum IS NULL OR s.local_checksum = ''
                    OR EXISTS (SELECT 1 FROM _synchro_rebuild_attempts AS a WHERE a.scope_id = s.scope_id))
                """, [.text(scope)])?.integerValue ?? 0 > 0
        }
    }

    // MARK: Storage

    private static func activeReference(on connection: Connection) throws -> SchemaReference {
        let version = try MetaStore.integer(.schemaVersion, on: connection)
        let hash = try MetaStore.value(.schemaHash, on: connection) ?? ""
        guard version > 0, !hash.isEmpty else {
            throw SyncError.invalidState(reason: "a schema migration needs an installed schema")
        }
        return try SchemaReference(version: version, hash: hash)
    }

    private func write(plan: SchemaMigrationPlan, on connection: Connection) throws {
        let affected = JSONValue.array(affectedScopes.map(JSONValue.string))
        let updates = JSONValue.object(JSONObject(cursorUpdates.map {
            JSONMember($0.scopeID, $0.cursor.map(JSONValue.string) ?? .null)
        }))
        try connection.run("""
            INSERT OR REPLACE INTO _synchro_schema_migration (singleton, journal_version, source_schema_version,
                source_schema_hash, target_schema_version, target_schema_hash, target_manifest_json, action,
                affected_scopes_json, scope_cursor_updates_json, migration_plan_version, migration_plan_json,
                migration_plan_hash, phase, is_schema_reset)
            VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [
                .integer(Self.journalVersion), .integer(source.version), .text(source.hash),
                .integer(target.reference.version), .text(target.reference.hash), .text(target.canonicalJSON),
                .text(action), .text(try CanonicalJSON.string(affected)), .text(try CanonicalJSON.string(updates)),
                .integer(SchemaMigrationPlan.version), .text(plan.canonicalJSON), .text(plan.hash),
                .text(phase.rawValue), .integer(plan.isReset ? 1 : 0),
            ])
    }

    static func load(on connection: Connection) throws -> SchemaMigrationJournal? {
        let rows = try connection.rows("""
            SELECT source_schema_version, source_schema_hash, target_manifest_json, action, affected_scopes_json,
                scope_cursor_updates_json, migration_plan_json, migration_plan_hash, phase, is_schema_reset,
                journal_version, migration_plan_version
            FROM _synchro_schema_migration WHERE singleton = 1
            """)
        guard let row = rows.first else { return nil }
        let unreadable = ClientStoreError.invalidLocalSchema(reason: "the schema migration journal is unreadable")
        guard row[10].integerValue == journalVersion, row[11].integerValue == SchemaMigrationPlan.version,
              let version = row[0].integerValue, let hash = row[1].textValue,
              let manifestText = row[2].textValue, let action = row[3].textValue,
              let affectedText = row[4].textValue, let updatesText = row[5].textValue,
              row[6].textValue != nil, let planHash = row[7].textValue,
              let phase = row[8].textValue.flatMap(Phase.init(rawValue:)), let reset = row[9].integerValue,
              let source = try? SchemaReference(version: version, hash: hash),
              let target = try? ClientManifest(bytes: Array(manifestText.utf8)),
              let affected = try? StrictJSONParser().parse(Array(affectedText.utf8)).arrayValue,
              let updates = try? StrictJSONParser().parse(Array(updatesText.utf8)).objectValue
        else { throw unreadable }
        // The stored plan JSON is for inspection: a resumed migration re-derives the plan and compares hashes.
        return SchemaMigrationJournal(
            source: source, target: target, action: action, affectedScopes: affected.compactMap(\.stringValue),
            cursorUpdates: updates.members.map { ($0.key, $0.value.stringValue) }, planHash: planHash,
            isReset: reset == 1, phase: phase)
    }
}
