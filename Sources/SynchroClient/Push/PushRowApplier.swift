import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The writes of one reconciled outcome, inside the reconciliation's server-apply transaction.
struct PushRowApplier {
    let connection: Connection
    let manifest: ClientManifest
    let now: String

    /// Ledger states of later local intent that the authoritative row must not overwrite.
    private static let laterIntentStates = "('unsealed', 'sealed', 'blocked_by_predecessor', 'legacy_blocked')"

    func apply(_ outcome: PushReconciler.Outcome, fit: PushReconciler.RowFit, batchID: String) throws {
        let mutation = outcome.mutation
        let entry = try MutationLedger.entries(where: "mutation_id = ?", [.text(mutation.mutationID)], on: connection)
        guard let entry = entry.first, entry.state == .sealed, entry.sealedBatchID == batchID else {
            throw PushError.sealedBatchInvalid(batchID: batchID, rule: "member_not_sealed_in_batch")
        }
        // A table the active manifest no longer has (a reset onto a manifest that removed it: wire §12.2 Class 4)
        // has no local row to write: the outcome is recorded like any other and changes no row, so the intent ends
        // as the server says (typically `schema_incompatible`) instead of failing reconciliation.
        let table = manifest.localSchema.first { $0.tableID == mutation.table }
        // A row decided under an earlier schema that the active table does not match is not written in place:
        // the outcome is recorded exactly, and every scope that holds the row is rebuilt under the current schema.
        let writable = fit == .incompatible ? nil : table
        if fit == .incompatible, let table {
            try invalidateScopes(holding: table, recordID: entry.recordID)
        }
        let outcomeJSON = try CanonicalJSON.string(.object(outcome.object))
        let laterIntent = try hasLaterIntent(entry, batchID: batchID)
        switch outcome.status {
        case "applied":
            if let table = writable {
                try applyState(outcome, table: table, recordID: entry.recordID, laterIntent: laterIntent)
            }
            try connection.run("""
                UPDATE _synchro_pending_changes SET lifecycle_state = 'accepted', accepted_json = ?, updated_at = ?
                WHERE mutation_id = ?
                """, [.text(outcomeJSON), .text(now), .text(mutation.mutationID)])
            // Unsealed successors become sendable against the new version; sealed ones stay unchanged.
            try connection.run("""
                UPDATE _synchro_pending_changes
                SET base_version = CASE WHEN operation = 'insert' THEN base_version ELSE ? END,
                    dependency_mutation_id = NULL, updated_at = ?
                WHERE dependency_mutation_id = ? AND lifecycle_state = 'unsealed'
                """, [.text(outcome.serverVersion ?? ""), .text(now), .text(mutation.mutationID)])
        default:
            try recordRejection(outcome, entry: entry, outcomeJSON: outcomeJSON)
            try connection.run("""
                UPDATE _synchro_pending_changes SET lifecycle_state = 'rejected', rejected_json = ?, updated_at = ?
                WHERE mutation_id = ?
                """, [.text(outcomeJSON), .text(now), .text(mutation.mutationID)])
            try LedgerTransitions.blockDependents(of: mutation.mutationID, on: connection)
            // A conflict carries the current server state; a terminal rejection leaves row and version alone.
            if outcome.status == "conflict", let table = writable {
                try applyState(outcome, table: table, recordID: entry.recordID, laterIntent: laterIntent)
            }
        }
    }

    /// Writes the authoritative row, fence or absence and the row version. With later local intent on the row
    /// the local row keeps that intent (it is what the application sees) and only the version moves.
    private func applyState(
        _ outcome: PushReconciler.Outcome, table: LocalSchemaTable, recordID: String, laterIntent: Bool
    ) throws {
        let tableName = SQLiteIdentifier.quote(table.tableName)
        guard let key = table.primaryKeyColumn else {
            throw PushError.rowVerification(mutationID: outcome.mutation.mutationID, rule: "no_primary_key")
        }
        let keyValue = try Self.sqliteValue(outcome.mutation.pkValue, type: key.logicalType)
        if let row = outcome.row?.objectValue, let checksum = outcome.checksum, let version = outcome.serverVersion {
            if !laterIntent {
                var names: [String] = []
                var values: [SQLiteValue] = []
                for column in table.columns {
                    names.append(SQLiteIdentifier.quote(column.name))
                    values.append(try Self.sqliteValue(row[column.fieldID] ?? .null, type: column.logicalType))
                }
                let quotedKey = SQLiteIdentifier.quote(key.name)
                let updates = names.filter { $0 != quotedKey }.map { "\($0) = excluded.\($0)" }
                let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates.joined(separator: ", "))"
                try connection.run("""
                    INSERT INTO \(tableName) (\(names.joined(separator: ", ")))
                    VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))
                    ON CONFLICT (\(quotedKey)) \(conflict)
                    """, values)
            }
            try setVersion(table.tableName, recordID, version, try CanonicalJSON.string(checksum.json))
        } else {
            if !laterIntent {
                try connection.run(
                    "DELETE FROM \(tableName) WHERE \(SQLiteIdentifier.quote(key.name)) = ?", [keyValue])
            }
            if let version = outcome.serverVersion {
                // A fence-only delete: the version stays as the base for any later intent, without a checksum.
                try setVersion(table.tableName, recordID, version, nil)
            } else {
                try connection.run(
                    "DELETE FROM _synchro_row_versions WHERE table_name = ? AND record_id = ?",
                    [.text(table.tableName), .text(recordID)])
            }
        }
    }

    /// Marks for rebuild the assigned scopes that hold the row; when none does yet (a new row), those that hold rows
    /// of its table, and when none does either, every assigned scope (client contract §7.1: every affected scope).
    private func invalidateScopes(holding table: LocalSchemaTable, recordID: String) throws {
        let candidates = [
            ("SELECT DISTINCT scope_id FROM _synchro_scope_rows WHERE table_name = ? AND record_id = ?",
             [SQLiteValue.text(table.tableName), .text(recordID)]),
            ("SELECT DISTINCT scope_id FROM _synchro_scope_rows WHERE table_name = ?", [.text(table.tableName)]),
            ("SELECT scope_id FROM _synchro_scopes", []),
        ]
        for (sql, arguments) in candidates {
            let scopes = try connection.query(sql, arguments) { try $0.text(at: 0) }
            guard !scopes.isEmpty else { continue }
            for scope in scopes { try ScopeStore.invalidate(scope, on: connection) }
            return
        }
    }

    private func setVersion(_ tableName: String, _ recordID: String, _ version: String, _ checksum: String?) throws {
        try connection.run("""
            INSERT INTO _synchro_row_versions (table_name, record_id, server_version, row_checksum)
            VALUES (?, ?, ?, ?)
            ON CONFLICT (table_name, record_id)
            DO UPDATE SET server_version = excluded.server_version, row_checksum = excluded.row_checksum
            """, [.text(tableName), .text(recordID), .text(version), checksum.map(SQLiteValue.text) ?? .null])
    }

    private func hasLaterIntent(_ entry: PendingMutation, batchID: String) throws -> Bool {
        try connection.scalar("""
            SELECT 1 FROM _synchro_pending_changes
            WHERE table_name = ? AND record_id = ? AND local_order > ?
                AND lifecycle_state IN \(Self.laterIntentStates) AND coalesce(sealed_batch_id, '') <> ?
            LIMIT 1
            """, [.text(entry.tableName), .text(entry.recordID), .integer(entry.localOrder), .text(batchID)]) != nil
    }

    /// The inspectable rejection (`spec/client-store.md` §4.8). Re-recording must be identical.
    private func recordRejection(
        _ outcome: PushReconciler.Outcome, entry: PendingMutation, outcomeJSON: String
    ) throws {
        let mutationJSON = try CanonicalJSON.string(outcome.mutation.wireJSON)
        let code = outcome.object["code"]?.stringValue ?? ""
        let existing = try connection.rows(
            "SELECT status, code, mutation_json, rejected_json FROM _synchro_rejected_mutations WHERE mutation_id = ?",
            [.text(entry.mutationID)])
        if let row = existing.first {
            guard row == [.text(outcome.status), .text(code), .text(mutationJSON), .text(outcomeJSON)] else {
                throw PushError.sealedBatchInvalid(batchID: entry.sealedBatchID ?? "", rule: "rejection_differs")
            }
            return
        }
        let serverRow = try outcome.row.map { try CanonicalJSON.string($0) }
        try connection.run("""
            INSERT INTO _synchro_rejected_mutations
                (mutation_id, table_name, record_id, status, code, message, server_row_json, server_version,
                 created_at, updated_at, mutation_json, rejected_json)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [
            .text(entry.mutationID), .text(entry.tableName), .text(entry.recordID), .text(outcome.status),
            .text(code), outcome.object["message"]?.stringValue.map(SQLiteValue.text) ?? .null,
            serverRow.map(SQLiteValue.text) ?? .null, outcome.serverVersion.map(SQLiteValue.text) ?? .null,
            .text(now), .text(now), .text(mutationJSON), .text(outcomeJSON),
        ])
    }

    /// The SQLite value of a verified wire value of `type` (the storage classes of `spec/client-store.md` §5.2).
    static func sqliteValue(_ value: JSONValue, type: PortableType) throws -> SQLiteValue {
        guard let stored = LocalStorageForm.sqliteValue(value, type: type) else {
            throw PushError.responseContract(rule: "value_without_local_storage_form")
        }
        return stored
    }
}
