import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Reads of the mutation ledger, on whichever connection runs the current transaction. Every access is by
/// column name: upgraded files have a different physical column order (`spec/client-store.md` §2).
enum MutationLedger {
    static let entryColumns = """
        local_order, mutation_id, capture_uuid, table_id, table_name, record_id, pk_field_id, pk_logical_type,
        operation, authored_schema_version, authored_schema_hash, base_version, client_version, lifecycle_state,
        source_kind, dependency_mutation_id, normalized_mutation_id, sealed_batch_id, sealed_ordinal,
        atomic_group_id, accepted_json, rejected_json
        """

    /// Every entry matching `condition`, in `local_order`.
    static func entries(
        where condition: String = "1", _ arguments: [SQLiteValue] = [], on connection: Connection
    ) throws(ClientStoreError) -> [PendingMutation] {
        try mappingStoreErrors {
            let statement = try connection.prepare(
                "SELECT \(entryColumns) FROM _synchro_pending_changes WHERE \(condition) ORDER BY local_order")
            return try decode(statement, arguments, on: connection)
        }
    }

    /// Entries matching `condition` (over alias `candidate`) in capture order: a normalized entry sorts at the
    /// smallest `local_order` among its transitive sources, so normalization never moves a mutation after a
    /// later capture of another row (`spec/client-store.md` §8).
    static func entriesInCaptureOrder(
        where condition: String, _ arguments: [SQLiteValue] = [], on connection: Connection
    ) throws(ClientStoreError) -> [PendingMutation] {
        try mappingStoreErrors {
            let statement = try connection.prepare("""
                WITH RECURSIVE lineage(candidate_id, local_order, mutation_id) AS (
                    SELECT candidate.mutation_id, candidate.local_order, candidate.mutation_id
                    FROM _synchro_pending_changes AS candidate
                    WHERE \(condition)
                    UNION ALL
                    SELECT lineage.candidate_id, source.local_order, source.mutation_id
                    FROM lineage
                    JOIN _synchro_pending_changes AS source ON source.normalized_mutation_id = lineage.mutation_id
                ),
                capture(candidate_id, capture_order) AS (
                    SELECT candidate_id, min(local_order) FROM lineage GROUP BY candidate_id
                )
                SELECT \(entryColumns.split(separator: ",").map { "entry." + $0.trimmingWhitespace() }
                    .joined(separator: ", "))
                FROM capture JOIN _synchro_pending_changes AS entry ON entry.mutation_id = capture.candidate_id
                ORDER BY capture.capture_order, entry.local_order
                """)
            return try decode(statement, arguments, on: connection)
        }
    }

    /// The authored values of one entry, ordered by field ID octets.
    static func fields(of mutationID: String, on connection: Connection) throws -> [StoredFieldValue] {
        let statement = try connection.cachedStatement("""
            SELECT field_id, logical_type, value_kind, value_integer, value_real, value_text, value_blob
            FROM _synchro_mutation_values WHERE mutation_id = ?
            """)
        let values = try statement.query([.text(mutationID)]) { row -> StoredFieldValue in
            let kindText = try row.text(at: 2)
            guard let kind = StoredFieldValue.Kind(rawValue: kindText) else {
                throw ClientStoreError.ledgerIntegrity(
                    .storedValueShape(mutationID: mutationID, fieldID: try row.text(at: 0)))
            }
            return StoredFieldValue(
                fieldID: try row.text(at: 0), logicalType: try row.text(at: 1), kind: kind,
                integer: row.isNull(at: 3) ? nil : row.int64(at: 3),
                real: row.isNull(at: 4) ? nil : row.double(at: 4),
                text: row.isNull(at: 5) ? nil : try row.text(at: 5),
                blob: row.isNull(at: 6) ? nil : row.blob(at: 6))
        }
        return values.sorted { $0.fieldID.utf8Precedes($1.fieldID) }
    }

    private static func decode(
        _ statement: Statement, _ arguments: [SQLiteValue], on connection: Connection
    ) throws -> [PendingMutation] {
        let rows = try statement.query(arguments) { try $0.values() }
        return try rows.map { try entry($0, on: connection) }
    }

    private static func entry(_ row: [SQLiteValue], on connection: Connection) throws -> PendingMutation {
        func text(_ index: Int) -> String? { row[index].textValue }
        func integer(_ index: Int) -> Int64? { row[index].integerValue }
        let mutationID = text(1) ?? ""
        guard let operation = text(8).flatMap(PushOperation.init(rawValue:)) else {
            throw ClientStoreError.ledgerIntegrity(.unknownOperation(mutationID: mutationID))
        }
        guard let state = text(13).flatMap(MutationLifecycleState.init(rawValue:)) else {
            throw ClientStoreError.ledgerIntegrity(.unknownLifecycleState(mutationID: mutationID))
        }
        guard let source = text(14).flatMap(MutationSourceKind.init(rawValue:)) else {
            throw ClientStoreError.ledgerIntegrity(.unknownSourceKind(mutationID: mutationID))
        }
        return PendingMutation(
            localOrder: integer(0) ?? 0, mutationID: mutationID, captureUUID: text(2),
            binding: try binding(row, mutationID: mutationID), tableName: text(4) ?? "", recordID: text(5) ?? "",
            operation: operation, baseVersion: text(11), clientVersion: text(12) ?? "", state: state,
            sourceKind: source, dependencyMutationID: text(15), normalizedMutationID: text(16),
            sealedBatchID: text(17), sealedOrdinal: integer(18), atomicGroupID: text(19), acceptedJSON: text(20),
            rejectedJSON: text(21), fields: try fields(of: mutationID, on: connection))
    }

    /// All four bindings present and valid, or all absent (a legacy import); anything else is an integrity error.
    private static func binding(_ row: [SQLiteValue], mutationID: String) throws -> PendingMutation.Binding? {
        let parts = [row[3], row[6], row[7], row[9], row[10]]
        if parts.allSatisfy(\.isNull) { return nil }
        guard let tableID = row[3].textValue, let fieldID = row[6].textValue,
              let type = row[7].textValue.flatMap(PortableType.init(wireName:)), type.isKeyType,
              let version = row[9].integerValue, let hash = row[10].textValue,
              let schema = try? SchemaReference(version: version, hash: hash)
        else { throw ClientStoreError.ledgerIntegrity(.partialBindings(mutationID: mutationID)) }
        return PendingMutation.Binding(
            tableID: tableID, primaryKeyFieldID: fieldID, primaryKeyType: type, authoredSchema: schema)
    }
}

extension Substring {
    func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
