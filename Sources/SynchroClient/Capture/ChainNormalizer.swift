import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Pre-wire same-row normalization (`spec/client-store.md` §8, client contract "Pre-wire same-row
/// dependencies"). Source entries are never edited in content: they become `superseded_before_send` or
/// `cancelled_before_send` and link to their successor, which is a new ledger entry with a fresh UUID.
///
/// - insert + updates → one insert with the final authored fields;
/// - insert … delete → no server mutation (sources cancelled, dependents of the delete blocked);
/// - update + updates → one update from the first base;
/// - update … delete → one delete from the first base;
/// - a delete followed by later entries is never merged (protocol 3 has no resurrection).
struct ChainNormalizer {
    let connection: Connection
    let uuids: UUIDSource
    let clock: ClientClock

    /// Normalizes every unsealed chain, then blocks what can never be sent: entries after a delete, dependents
    /// of blocked or legacy-blocked entries, and every unsent member of a group with a blocked member.
    func normalizeAll() throws(ClientStoreError) {
        try mappingStoreErrors {
            let unsealed = try MutationLedger.entriesInCaptureOrder(
                where: "candidate.lifecycle_state = 'unsealed' AND candidate.sealed_batch_id IS NULL", on: connection)
            try normalizeRuns(unsealed, anyPredecessor: false)
            try blockSuccessorsOfDeletes()
            try blockDependentsOfBlocked()
            try blockUnsentGroupMembers()
        }
    }

    /// The atomic-group rules that precede measurement (`spec/integrity.md` §5.3 rules 1 and 2): no delete of a
    /// row followed by a later entry of that row, then chain normalization over the group's rows only. Returns
    /// the normalized group.
    func normalizeGroup(_ groupID: String) throws -> [PendingMutation] {
        let group = try unsealedGroup(groupID)
        var deleted: Set<PendingMutation.RowKey> = []
        for entry in group {
            guard let identity = entry.rowIdentity else { continue }
            guard !deleted.contains(identity) else { throw AtomicGroupInvalid(reason: .deleteFollowedByWrite) }
            if entry.operation == .delete {
                deleted.insert(identity)
            }
        }
        try normalizeRuns(group, anyPredecessor: true)
        return try unsealedGroup(groupID)
    }

    private func unsealedGroup(_ groupID: String) throws(ClientStoreError) -> [PendingMutation] {
        try MutationLedger.entriesInCaptureOrder(
            where: "candidate.lifecycle_state = 'unsealed' AND candidate.atomic_group_id = ?", [.text(groupID)],
            on: connection)
    }

    // MARK: - Runs

    /// A run is a maximal stretch of one row's chain with equal `atomic_group_id` (NULL equals NULL). Only the
    /// trailing run merges (a merged entry takes a new local order); an earlier run may only cancel
    /// insert…delete. A run merges only when each entry depends on the previous one and the first on the entry
    /// before the run (`anyPredecessor` waives that for a new atomic group), and never across two authored
    /// schema references.
    private func normalizeRuns(_ entries: [PendingMutation], anyPredecessor: Bool) throws {
        let chains = Dictionary(grouping: entries.filter { $0.rowIdentity != nil }) { $0.rowIdentity! }
        for chain in chains.values.map({ $0.sorted { $0.localOrder < $1.localOrder } })
            .sorted(by: { $0[0].localOrder < $1[0].localOrder }) {
            var runStart = 0
            for index in chain.indices
            where index == chain.count - 1 || chain[index + 1].atomicGroupID != chain[index].atomicGroupID {
                let start = runStart
                runStart = index + 1
                let run = Array(chain[start...index])
                let expectedFirstDependency = start > 0 ? chain[start - 1].mutationID : nil
                guard run.count > 1,
                      anyPredecessor || run[0].dependencyMutationID == expectedFirstDependency,
                      zip(run, run.dropFirst()).allSatisfy({ $1.dependencyMutationID == $0.mutationID })
                else { continue }
                let schemas = Set(run.map { $0.binding.map(\.authoredSchema) })
                if schemas.count != 1 {
                    try blockAfterDelete(in: run)
                    continue
                }
                if index == chain.count - 1 {
                    try merge(run)
                } else {
                    _ = try cancelInsertThroughDelete(run)
                }
            }
        }
    }

    private func merge(_ run: [PendingMutation]) throws {
        guard let first = run.first, let last = run.last, let binding = first.binding else { return }
        if try cancelInsertThroughDelete(run) { return }
        let deleteIndex = run.firstIndex { $0.operation == .delete }
        // A delete before the end keeps its own identity; the blocking pass handles what follows it.
        if let deleteIndex, deleteIndex != run.count - 1 { return }
        let operation: PushOperation
        switch first.operation {
        case .insert: operation = .insert
        case .update: operation = deleteIndex == nil ? .update : .delete
        case .delete: return
        }
        var merged: [String: StoredFieldValue] = [:]
        for entry in run {
            for field in entry.fields {
                merged[field.fieldID] = field
            }
        }
        let normalizedID = uuids.next()
        let now = clock.timestamp()
        try connection.run("""
            INSERT INTO _synchro_pending_changes
                (mutation_id, capture_uuid, table_id, table_name, record_id, pk_field_id, pk_logical_type, operation,
                 authored_schema_version, authored_schema_hash, base_version, client_version, lifecycle_state,
                 source_kind, dependency_mutation_id, atomic_group_id, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'unsealed', 'normalized', ?, ?, ?, ?)
            """, [
            .text(normalizedID), .text(normalizedID), .text(binding.tableID), .text(first.tableName),
            .text(first.recordID), .text(binding.primaryKeyFieldID), .text(binding.primaryKeyType.rawValue),
            .text(operation.rawValue), .integer(binding.authoredSchema.version), .text(binding.authoredSchema.hash),
            operation == .insert ? .null : (first.baseVersion.map(SQLiteValue.text) ?? .null),
            .text(last.clientVersion), first.dependencyMutationID.map(SQLiteValue.text) ?? .null,
            first.atomicGroupID.map(SQLiteValue.text) ?? .null, .text(now), .text(now),
        ])
        if operation != .delete {
            for field in merged.values.sorted(by: { $0.fieldID.utf8Precedes($1.fieldID) }) {
                try insertValue(field, mutationID: normalizedID)
            }
        }
        for entry in run {
            try markSource(entry, state: .supersededBeforeSend, successor: normalizedID, now: now)
        }
    }

    /// Cancels an insert through the first later delete (the row never reaches the server) and blocks every
    /// entry that depends on that delete.
    private func cancelInsertThroughDelete(_ run: [PendingMutation]) throws -> Bool {
        guard run.first?.operation == .insert, let deleteIndex = run.firstIndex(where: { $0.operation == .delete })
        else { return false }
        let cancellationID = uuids.next()
        let now = clock.timestamp()
        for entry in run[...deleteIndex] {
            try markSource(entry, state: .cancelledBeforeSend, successor: cancellationID, now: now)
        }
        try connection.run("""
            UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor', updated_at = ?
            WHERE dependency_mutation_id = ? AND lifecycle_state = 'unsealed'
            """, [.text(now), .text(run[deleteIndex].mutationID)])
        return true
    }

    private func blockAfterDelete(in run: [PendingMutation]) throws {
        guard let deleteIndex = run.firstIndex(where: { $0.operation == .delete }), deleteIndex < run.count - 1
        else { return }
        for successor in run[(deleteIndex + 1)...] {
            try block(successor.mutationID)
        }
    }

    private func markSource(
        _ entry: PendingMutation, state: MutationLifecycleState, successor: String, now: String
    ) throws {
        try connection.run("""
            UPDATE _synchro_pending_changes SET lifecycle_state = ?, normalized_mutation_id = ?, updated_at = ?
            WHERE mutation_id = ? AND lifecycle_state = 'unsealed'
            """, [.text(state.rawValue), .text(successor), .text(now), .text(entry.mutationID)])
    }

    private func insertValue(_ field: StoredFieldValue, mutationID: String) throws {
        try connection.run("""
            INSERT INTO _synchro_mutation_values
                (mutation_id, field_id, logical_type, value_kind, value_integer, value_real, value_text, value_blob)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [
            .text(mutationID), .text(field.fieldID), .text(field.logicalType), .text(field.kind.rawValue),
            field.integer.map(SQLiteValue.integer) ?? .null, field.real.map(SQLiteValue.real) ?? .null,
            field.text.map(SQLiteValue.text) ?? .null, field.blob.map(SQLiteValue.blob) ?? .null,
        ])
    }

    // MARK: - Blocking

    private func block(_ mutationID: String) throws {
        try connection.run("""
            UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor', updated_at = ?
            WHERE mutation_id = ? AND lifecycle_state = 'unsealed'
            """, [.text(clock.timestamp()), .text(mutationID)])
    }

    /// A delete has no resurrection: every later unsealed entry of the same row is blocked.
    private func blockSuccessorsOfDeletes() throws {
        let current = try MutationLedger.entries(
            where: "lifecycle_state NOT IN \(MutationLifecycleState.resolvedSQLList)", on: connection)
        let chains = Dictionary(grouping: current.filter { $0.rowIdentity != nil }) { $0.rowIdentity! }
        for chain in chains.values {
            let ordered = chain.sorted { $0.localOrder < $1.localOrder }
            guard let deleteIndex = ordered.firstIndex(where: { $0.operation == .delete }),
                  deleteIndex < ordered.count - 1 else { continue }
            for successor in ordered[(deleteIndex + 1)...] where successor.state == .unsealed {
                try block(successor.mutationID)
            }
        }
    }

    /// Each pass reaches one more link of a dependency chain.
    private func blockDependentsOfBlocked() throws {
        repeat {
            try connection.run("""
                UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor', updated_at = ?
                WHERE lifecycle_state = 'unsealed' AND dependency_mutation_id IN (
                    SELECT mutation_id FROM _synchro_pending_changes
                    WHERE lifecycle_state IN ('blocked_by_predecessor', 'legacy_blocked'))
                """, [.text(clock.timestamp())])
        } while connection.changes > 0
    }

    /// A group is sent whole or not at all, so one blocked member (or a member depending on a blocked entry)
    /// blocks every unsent member, and then their dependents.
    private func blockUnsentGroupMembers() throws {
        while true {
            let members = try connection.query("""
                SELECT mutation_id FROM _synchro_pending_changes
                WHERE lifecycle_state = 'unsealed' AND atomic_group_id IN (
                    SELECT member.atomic_group_id FROM _synchro_pending_changes AS member
                    LEFT JOIN _synchro_pending_changes AS predecessor
                        ON predecessor.mutation_id = member.dependency_mutation_id
                    WHERE member.atomic_group_id IS NOT NULL
                      AND 'blocked_by_predecessor' IN (member.lifecycle_state, predecessor.lifecycle_state))
                """) { try $0.text(at: 0) }
            guard !members.isEmpty else { return }
            for member in members {
                try block(member)
            }
            try blockDependentsOfBlocked()
        }
    }
}
