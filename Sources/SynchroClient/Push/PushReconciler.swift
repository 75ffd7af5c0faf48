import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Reconciliation of a push 200 (`spec/wire-protocol.md` §4.8, `spec/client-store.md` §8): the whole response
/// is validated against the sealed request first, then every outcome, the rows, versions, rejections, dependents
/// and the batch's completion commit in one server-apply transaction (capture suppressed, so nothing echoes).
public struct PushReconciler: Sendable {
    /// The store to reconcile.
    public let store: ClientStore

    public init(store: ClientStore) {
        self.store = store
    }

    /// How many outcomes of each status a response carried.
    public struct Summary: Sendable, Equatable {
        public var applied = 0
        public var conflicts = 0
        public var rejectedTerminal = 0

        public init(applied: Int = 0, conflicts: Int = 0, rejectedTerminal: Int = 0) {
            self.applied = applied
            self.conflicts = conflicts
            self.rejectedTerminal = rejectedTerminal
        }
    }

    /// One checked outcome, matched to its request mutation.
    struct Outcome {
        let mutation: PushMutation
        let object: JSONObject
        let status: String
        let serverVersion: String?
        let row: JSONValue?
        let checksum: Checksum?
    }

    /// Validates `responseBody` as the 200 of `batch` and applies it. A contract failure throws before any
    /// state changes; the batch then stays `pending`.
    public func reconcile(batch: SealedBatch, responseBody: [UInt8]) throws(PushError) -> Summary {
        guard let request = try? PushRequest.parse(body: batch.body, shape: .wire) else {
            throw .sealedBatchInvalid(batchID: batch.batchID, rule: "unparsable")
        }
        guard responseBody.count <= ResponseBudget.push.maximumBytes,
              let response = (try? ResponseBudget.push.parser.parse(responseBody))?.objectValue else {
            throw .responseContract(rule: "not_a_json_object")
        }
        let outcomes = try Self.match(response, to: request)
        let now = store.configuration.clock.timestamp()
        return try store.withEnginePush { connection throws(PushError) -> Summary in
            try mappingPushErrors {
                try EngineTransactions.serverApply(on: connection) { connection throws -> Summary in
                    let manifest = try ClientManifest(
                        bytes: Array((try MetaStore.value(.schemaManifest, on: connection) ?? "").utf8))
                    // Every row is verified, under the schema its outcome names, before the first write.
                    var archive = ArchivedManifests(connection: connection)
                    var fits: [RowFit] = []
                    for outcome in outcomes {
                        fits.append(try Self.verifyRow(outcome, manifest: manifest, archive: &archive))
                    }
                    var summary = Summary()
                    let applier = PushRowApplier(connection: connection, manifest: manifest, now: now)
                    for (outcome, fit) in zip(outcomes, fits) {
                        try applier.apply(outcome, fit: fit, batchID: batch.batchID)
                        switch outcome.status {
                        case "applied": summary.applied += 1
                        case "conflict": summary.conflicts += 1
                        default: summary.rejectedTerminal += 1
                        }
                    }
                    try connection.run("""
                        UPDATE _synchro_push_batches SET state = 'completed', completed_at = ?
                        WHERE batch_id = ? AND state = 'pending'
                        """, [.text(now), .text(batch.batchID)])
                    guard connection.changes == 1 else {
                        throw PushError.sealedBatchInvalid(batchID: batch.batchID, rule: "not_pending")
                    }
                    try PendingBatches.clearBackoff(naming: batch.batchID, on: connection)
                    return summary
                }
            }
        }
    }

    /// The envelope and outcome checks of `spec/wire-protocol.md` §4.4 and §4.8: exact members, the batch ID,
    /// every request mutation exactly once with its table and key, `outcome_schema`, status-specific members.
    static func match(_ response: JSONObject, to request: PushRequest) throws(PushError) -> [Outcome] {
        guard Set(response.keys) == ["batch_id", "server_time", "accepted", "rejected"], response.count == 4 else {
            throw .responseContract(rule: "envelope_members")
        }
        guard response["batch_id"]?.stringValue == request.batchID else { throw .responseContract(rule: "batch_id") }
        guard response["server_time"]?.stringValue != nil else { throw .responseContract(rule: "server_time") }
        guard let accepted = response["accepted"]?.arrayValue, let rejected = response["rejected"]?.arrayValue else {
            throw .responseContract(rule: "outcome_arrays")
        }
        var byID: [String: PushMutation] = [:]
        for mutation in request.mutations { byID[mutation.mutationID] = mutation }
        var seen: Set<String> = []
        var outcomes: [Outcome] = []
        for (value, isAccepted) in accepted.map({ ($0, true) }) + rejected.map({ ($0, false) }) {
            guard let object = value.objectValue, let id = object["mutation_id"]?.stringValue,
                  let status = object["status"]?.stringValue
            else {
                throw .responseContract(rule: "outcome_shape")
            }
            guard let mutation = byID[id] else { throw .responseContract(rule: "unknown_mutation") }
            guard seen.insert(id).inserted else { throw .responseContract(rule: "duplicate_outcome") }
            guard object["table"]?.stringValue == mutation.table,
                  object["pk"] == .object(JSONObject([JSONMember(mutation.pkFieldID, mutation.pkValue)]))
            else {
                throw .responseContract(rule: "identity_mismatch")
            }
            guard let schema = object["outcome_schema"], (try? SchemaReference(json: schema)) != nil else {
                throw .responseContract(rule: "outcome_schema")
            }
            let expected: Set<String> = isAccepted ? ["applied"] : ["conflict", "rejected_terminal"]
            guard expected.contains(status) else { throw .responseContract(rule: "status") }
            let version = object["server_version"]
            let row = object["server_row"]
            let checksum = object["row_checksum"]
            guard version == nil || version?.stringValue?.isEmpty == false,
                  (row == nil) == (checksum == nil), row == nil || version != nil
            else {
                throw .responseContract(rule: "row_members")
            }
            if status == "applied" && version == nil { throw .responseContract(rule: "applied_without_version") }
            if status == "rejected_terminal" && (version != nil || row != nil) {
                throw .responseContract(rule: "terminal_with_state")
            }
            var parsedChecksum: Checksum?
            if let checksum {
                guard let parsed = try? Checksum(json: checksum) else { throw .responseContract(rule: "row_checksum") }
                parsedChecksum = parsed
            }
            outcomes.append(Outcome(
                mutation: mutation, object: object, status: status, serverVersion: version?.stringValue, row: row,
                checksum: parsedChecksum))
        }
        guard seen.count == request.mutations.count else { throw .responseContract(rule: "missing_outcome") }
        return outcomes
    }

    /// How an outcome's row may be written into the active local schema (client contract §7.1).
    enum RowFit {
        /// No row, or a row verified under the active schema: applied as it is.
        case active
        /// A row verified under an earlier schema whose table has the active table's fields and value rules: its
        /// values are the active row's, so it is applied as it is.
        case projectable
        /// A row verified under an earlier schema that the active table does not match: no row is written in
        /// place; the scopes that hold it are rebuilt under the current schema.
        case incompatible
    }

    /// Recomputes the row digest under the outcome's schema: the active manifest, or the archived schema the store
    /// activated earlier (a replay or an outcome of a batch sealed before a schema change carries the schema it
    /// was decided under). A schema the store never had cannot be verified and fails.
    static func verifyRow(
        _ outcome: Outcome, manifest: ClientManifest, archive: inout ArchivedManifests
    ) throws -> RowFit {
        guard let row = outcome.row, let checksum = outcome.checksum, let version = outcome.serverVersion else {
            return .active
        }
        let reference = try SchemaReference(json: outcome.object["outcome_schema"] ?? .null)
        let schema: SchemaManifest
        if reference == manifest.reference {
            schema = manifest.manifest
        } else if let archived = try archive.manifest(reference) {
            schema = archived
        } else {
            throw PushError.outcomeSchemaUnavailable(version: reference.version)
        }
        let digest: RowDigest
        do {
            digest = try RowDigest.compute(
                manifest: schema, tableID: outcome.mutation.table, primaryKey: outcome.mutation.pkValue,
                row: row, serverVersion: version)
        } catch {
            throw PushError.rowVerification(mutationID: outcome.mutation.mutationID, rule: error.rule)
        }
        guard digest.hex == checksum.hex else {
            throw PushError.rowVerification(mutationID: outcome.mutation.mutationID, rule: "row_checksum_mismatch")
        }
        guard reference != manifest.reference else { return .active }
        guard let earlier = schema.table(id: outcome.mutation.table),
            let current = manifest.manifest.table(id: outcome.mutation.table)
        else {
            // A table the active manifest removed has no local row to write (PushRowApplier skips it).
            return .projectable
        }
        return Self.fits(earlier, into: current) ? .projectable : .incompatible
    }

    /// Whether every row valid under `earlier` is a valid row of `current` with the same values: the same field
    /// IDs, types, precision and scale, and no field that became required.
    static func fits(_ earlier: ManifestTable, into current: ManifestTable) -> Bool {
        guard earlier.fields.count == current.fields.count else { return false }
        return zip(earlier.fields, current.fields).allSatisfy { old, new in
            old.fieldID.exactlyEquals(new.fieldID) && old.type == new.type && old.spec.precision == new.spec.precision
                && old.spec.scale == new.spec.scale && (new.nullable || !old.nullable)
        }
    }
}

/// The earlier schemas of `_synchro_schema_archive`, read once per reconciliation.
struct ArchivedManifests {
    let connection: Connection
    private var read: [SchemaReference: SchemaManifest?] = [:]

    init(connection: Connection) {
        self.connection = connection
    }

    mutating func manifest(_ reference: SchemaReference) throws -> SchemaManifest? {
        if let known = read[reference] { return known }
        let manifest = try SchemaArchive.manifest(of: reference, on: connection)
        read[reference] = manifest
        return manifest
    }
}
