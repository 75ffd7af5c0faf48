import SQLiteKit
import SynchroStore
import SynchroProtocol

/// What a request binds to: the client ID, the server-issued generation and the active schema.
struct PushBinding {
    let clientID: String
    let generation: Int64
    let schema: SchemaReference
    /// The active `local_schema` JSON, stored with a batch as the schema it was built from.
    let localSchemaJSON: String

    /// The binding of a connected store: its bound client ID (``ClientIdentity``), generation and schema.
    static func current(on connection: Connection) throws -> PushBinding {
        guard let generationText = try MetaStore.value(.clientGeneration, on: connection),
              let generation = Int64(generationText), generation > 0,
              let versionText = try MetaStore.value(.schemaVersion, on: connection),
              let version = Int64(versionText), version > 0,
              let hash = try MetaStore.value(.schemaHash, on: connection),
              let schema = try? SchemaReference(version: version, hash: hash)
        else {
            throw PushError.notConnected
        }
        guard let clientID = try MetaStore.value(.clientServerID, on: connection), !clientID.isEmpty else {
            throw PushError.notConnected
        }
        return PushBinding(
            clientID: clientID, generation: generation, schema: schema,
            localSchemaJSON: try MetaStore.value(.localSchema, on: connection) ?? "[]")
    }
}

/// Reads and writes of `_synchro_push_batches` and `_synchro_push_batch_members`.
enum PendingBatches {
    /// The single `pending` batch with its stored bytes and members, or nil.
    static func load(on connection: Connection) throws -> SealedBatch? {
        let rows = try connection.rows(
            "SELECT batch_id, request_json FROM _synchro_push_batches WHERE state = 'pending' ORDER BY created_at")
        guard let row = rows.first else { return nil }
        guard rows.count == 1, let batchID = row[0].textValue, let text = row[1].textValue else {
            throw PushError.sealedBatchInvalid(batchID: rows.first?[0].textValue ?? "", rule: "one_pending_batch")
        }
        return try load(batchID: batchID, requestJSON: text, on: connection)
    }

    static func load(batchID: String, requestJSON: String, on connection: Connection) throws -> SealedBatch {
        let body = Array(requestJSON.utf8)
        let members = try connection.rows(
            "SELECT mutation_id FROM _synchro_push_batch_members WHERE batch_id = ? ORDER BY ordinal",
            [.text(batchID)]
        ).compactMap { $0[0].textValue }
        // The stored bytes are parsed only to check them against the members, never to rebuild them.
        guard let request = try? PushRequest.parse(body: body, shape: .wire), request.batchID == batchID,
              request.mutations.map(\.mutationID) == members
        else {
            throw PushError.sealedBatchInvalid(batchID: batchID, rule: "body_members_mismatch")
        }
        // Every member must still be sealed into this batch at its ordinal: a batch is validated against the
        // ledger before it is re-sent, never re-measured or rebuilt.
        let sealed = try connection.rows("""
            SELECT mutation_id FROM _synchro_pending_changes
            WHERE sealed_batch_id = ? AND lifecycle_state = 'sealed' ORDER BY sealed_ordinal
            """, [.text(batchID)]).compactMap { $0[0].textValue }
        guard sealed == members else {
            throw PushError.sealedBatchInvalid(batchID: batchID, rule: "ledger_members_mismatch")
        }
        return SealedBatch(batchID: batchID, body: body, mutationIDs: members, isAtomic: request.isAtomic)
    }

    /// Clears a durable `pushing` retry that names `batchID` (completion or renewal ends that work).
    static func clearBackoff(naming batchID: String, on connection: Connection) throws {
        try connection.run(
            "DELETE FROM _synchro_backoff WHERE resume_state = 'pushing' AND work_identity = ?", [.text(batchID)])
    }

    /// Inserts a `pending` batch with its members and moves each member to `sealed` with its ordinal.
    static func insert(
        batchID: String, body: [UInt8], mutationIDs: [String], schemaJSON: String, now: String,
        on connection: Connection
    ) throws {
        let entries = try MutationLedger.entries(
            where: "mutation_id IN (SELECT value FROM json_each(?))",
            [.text(try CanonicalJSON.string(.array(mutationIDs.map(JSONValue.string))))], on: connection)
        let byID = Dictionary(entries.map { ($0.mutationID, $0) }, uniquingKeysWith: { first, _ in first })
        var pending: [JSONValue] = []
        for (ordinal, id) in mutationIDs.enumerated() {
            guard let entry = byID[id] else { throw PushError.sealedBatchInvalid(batchID: batchID, rule: "member") }
            pending.append(pendingJSON(entry, batchID: batchID, ordinal: ordinal))
        }
        try connection.run("""
            INSERT INTO _synchro_push_batches (batch_id, request_json, pending_json, schema_json, state, created_at)
            VALUES (?, ?, ?, ?, 'pending', ?)
            """, [
            .text(batchID), .text(String(decoding: body, as: UTF8.self)),
            .text(try CanonicalJSON.string(.array(pending))), .text(schemaJSON), .text(now),
        ])
        for (ordinal, id) in mutationIDs.enumerated() {
            try connection.run(
                "INSERT INTO _synchro_push_batch_members (batch_id, mutation_id, ordinal) VALUES (?, ?, ?)",
                [.text(batchID), .text(id), .integer(Int64(ordinal))])
            try connection.run("""
                UPDATE _synchro_pending_changes
                SET lifecycle_state = 'sealed', sealed_batch_id = ?, sealed_ordinal = ?, updated_at = ?
                WHERE mutation_id = ? AND lifecycle_state = 'unsealed'
                """, [.text(batchID), .integer(Int64(ordinal)), .text(now), .text(id)])
            guard connection.changes == 1 else {
                throw PushError.sealedBatchInvalid(batchID: batchID, rule: "member_not_unsealed")
            }
        }
    }

    /// A `pending_json` entry (`spec/client-store.md` §4.7) for a member as it is being sealed.
    private static func pendingJSON(_ entry: PendingMutation, batchID: String, ordinal: Int) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let values = entry.fields.map { JSONMember($0.fieldID, $0.wireValue() ?? .null) }
        return .object(JSONObject([
            JSONMember("mutation_id", .string(entry.mutationID)),
            JSONMember("local_order", .number(JSONNumber(entry.localOrder))),
            JSONMember("table_id", text(entry.binding?.tableID)),
            JSONMember("record_id", .string(entry.recordID)),
            JSONMember("table_name", .string(entry.tableName)),
            JSONMember("pk_field_id", text(entry.binding?.primaryKeyFieldID)),
            JSONMember("pk_logical_type", text(entry.binding?.primaryKeyType.rawValue)),
            JSONMember("operation", .string(entry.operation.rawValue)),
            JSONMember("base_updated_at", text(entry.baseVersion)),
            JSONMember("client_updated_at", .string(entry.clientVersion)),
            JSONMember("authored_schema_version",
                       entry.binding.map { .number(JSONNumber($0.authoredSchema.version)) } ?? .null),
            JSONMember("authored_schema_hash", text(entry.binding?.authoredSchema.hash)),
            JSONMember("lifecycle_state", .string(MutationLifecycleState.sealed.rawValue)),
            JSONMember("source_kind", .string(entry.sourceKind.rawValue)),
            JSONMember("dependency_mutation_id", text(entry.dependencyMutationID)),
            JSONMember("normalized_mutation_id", text(entry.normalizedMutationID)),
            JSONMember("sealed_batch_id", .string(batchID)),
            JSONMember("sealed_ordinal", .number(JSONNumber(Int64(ordinal)))),
            JSONMember("atomic_group_id", text(entry.atomicGroupID)),
            JSONMember("field_values", .object(JSONObject(values))),
        ]))
    }
}

/// Ledger transitions shared by sealing and reconciliation.
enum LedgerTransitions {
    /// Every unresolved, unsealed transitive dependent of `mutationID` becomes `blocked_by_predecessor`, and so does
    /// every unsent member of a group one of them belongs to, and their dependents in turn: a group is sent whole
    /// or not at all (client contract §6.4), so one blocked member blocks the group in the same transaction.
    static func blockDependents(of mutationID: String, on connection: Connection) throws {
        try connection.run("""
            WITH RECURSIVE dependent(id) AS (
                SELECT mutation_id FROM _synchro_pending_changes WHERE dependency_mutation_id = ?
                UNION
                SELECT entry.mutation_id FROM _synchro_pending_changes AS entry
                JOIN dependent ON entry.dependency_mutation_id = dependent.id
            )
            UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor'
            WHERE mutation_id IN (SELECT id FROM dependent) AND lifecycle_state = 'unsealed'
            """, [.text(mutationID)])
        repeat {
            try connection.run("""
                UPDATE _synchro_pending_changes SET lifecycle_state = 'blocked_by_predecessor'
                WHERE lifecycle_state = 'unsealed' AND (
                    atomic_group_id IN (
                        SELECT atomic_group_id FROM _synchro_pending_changes
                        WHERE lifecycle_state = 'blocked_by_predecessor' AND atomic_group_id IS NOT NULL)
                    OR dependency_mutation_id IN (
                        SELECT mutation_id FROM _synchro_pending_changes
                        WHERE lifecycle_state = 'blocked_by_predecessor'))
                """)
        } while connection.changes > 0
    }
}

extension ClientStore {
    /// Runs `body` on the engine connection with push errors.
    func withEnginePush<Value: Sendable>(
        _ body: (Connection) throws(PushError) -> Value
    ) throws(PushError) -> Value {
        let result: Result<Value, PushError>
        do {
            result = try withEngine { (connection) throws(ClientStoreError) -> Result<Value, PushError> in
                do throws(PushError) {
                    return .success(try body(connection))
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            throw .store(error)
        }
        return try result.get()
    }

    /// The stored `pending` batch, exactly as sealed, or nil.
    public func pendingBatch() throws(PushError) -> SealedBatch? {
        try withEnginePush { connection throws(PushError) -> SealedBatch? in
            try mappingPushErrors { try PendingBatches.load(on: connection) }
        }
    }
}
