import SynchroProtocol

/// One executed mutation: its outcome, and for a conflict what a re-read after an atomic rollback
/// needs (`spec/wire-protocol.md` §4.5).
struct ExecutedMutation {
    let outcome: PushOutcome
    let conflict: (code: PushConflictCode, mutation: EvaluatedMutation)?
}

/// Executes mutations of a first-execution push inside the caller's transaction: field evaluation,
/// then the row-state matrix with a byte-for-byte `base_version` compare-and-swap, then the source
/// write with a new server version and its capture (`spec/wire-protocol.md` §4.3–§4.4).
///
/// Requests are serialized by the engine's lock and run in one `BEGIN IMMEDIATE` transaction, so
/// reading the row and writing it is one compare-and-swap: two pushes never advance one version.
final class PushExecutor {
    private let evaluator: PushFieldEvaluator
    private let store: ServerStore
    private let current: SchemaManifest
    private var digester: RowDigester
    /// The capture LSN of the latest write of this push; nil while no write applied.
    private(set) var lastCaptureLSN: Int64?

    init(evaluator: PushFieldEvaluator, store: ServerStore) {
        self.evaluator = evaluator
        self.store = store
        current = evaluator.current
        digester = RowDigester(manifest: evaluator.current)
    }

    /// Executes one mutation as its own push unit (or as one step of an atomic group).
    func execute(_ mutation: PushMutation) throws -> ExecutedMutation {
        switch try evaluator.evaluate(mutation) {
        case .rejected(let outcome): return ExecutedMutation(outcome: outcome, conflict: nil)
        case .accepted(let evaluated): return try applyRowState(evaluated)
        }
    }

    /// Forgets the writes of a rolled-back atomic group: they never happened.
    func discardWrites() {
        lastCaptureLSN = nil
    }

    /// The failing conflict of a rolled-back atomic group, reported from the committed state so
    /// that earlier writes of the group never show. An atomic request addresses each row once, so
    /// today this equals the state seen at the failure; reading again keeps the rule true without
    /// relying on that.
    func reportAfterRollback(_ conflict: (code: PushConflictCode, mutation: EvaluatedMutation)) throws -> PushOutcome {
        let evaluated = conflict.mutation
        let existing = try CaptureLog.sourceRow(identity: evaluated.identity, store: store)
        if let existing, existing.state == .live, let row = existing.row, !isVisible(row, evaluated) {
            return try policyHidden(evaluated)
        }
        return try self.conflict(conflict.code, evaluated, existing).outcome
    }

    // MARK: - Row-state matrix

    private func applyRowState(_ evaluated: EvaluatedMutation) throws -> ExecutedMutation {
        let mutation = evaluated.mutation
        guard let existing = try CaptureLog.sourceRow(identity: evaluated.identity, store: store) else {
            guard mutation.operation == .insert, let row = evaluated.insertRow else {
                return try conflict(.rowNotFound, evaluated, nil)
            }
            return try apply(evaluated, row: row, state: .live)
        }
        guard existing.state == .live, let row = existing.row else {
            return try conflict(.rowDeleted, evaluated, existing)
        }
        // Row security: another user's live row is invisible, whatever the operation and base.
        guard isVisible(row, evaluated) else {
            return ExecutedMutation(outcome: try policyHidden(evaluated), conflict: nil)
        }
        switch mutation.operation {
        case .insert:
            return try conflict(.rowAlreadyExists, evaluated, existing)
        case .update, .delete:
            guard let base = mutation.baseVersion, base.exactlyEquals(existing.serverVersion) else {
                return try conflict(.versionConflict, evaluated, existing)
            }
            if mutation.operation == .update {
                return try apply(evaluated, row: patched(row, evaluated), state: .live)
            }
            guard let deletedAt = evaluated.table.lifecycle.deletedAtFieldID else {
                return try apply(evaluated, row: nil, state: .fence)
            }
            return try apply(evaluated, row: tombstone(row, evaluated, deletedAt: deletedAt), state: .tombstone)
        }
    }

    private func isVisible(_ row: JSONValue, _ evaluated: EvaluatedMutation) -> Bool {
        guard case .string(let owner)? = row.objectValue?[evaluated.ownerFieldID] else { return false }
        return owner.exactlyEquals(evaluator.user)
    }

    private func policyHidden(_ evaluated: EvaluatedMutation) throws -> PushOutcome {
        try .terminal(
            evaluated.mutation, schema: current.reference, code: .policyRejected,
            message: "the row is not visible to the authenticated user")
    }

    /// A conflict with the current state. Another user's tombstone is reported by its version only:
    /// row security never shows that user's row data.
    private func conflict(
        _ code: PushConflictCode, _ evaluated: EvaluatedMutation, _ existing: SourceRow?
    ) throws -> ExecutedMutation {
        var state: ReportedRowState?
        if let existing {
            var reportedRow: (JSONValue, Checksum)?
            if let row = existing.row, isVisible(row, evaluated) {
                reportedRow = (row, try checksum(row, evaluated, serverVersion: existing.serverVersion))
            }
            state = ReportedRowState(serverVersion: existing.serverVersion, row: reportedRow)
        }
        let outcome = try PushOutcome.conflict(evaluated.mutation, schema: current.reference, code: code, state: state)
        return ExecutedMutation(outcome: outcome, conflict: (code, evaluated))
    }

    // MARK: - Writes

    /// Writes the row's new state with a new server version and captures it (`CaptureLog` is the
    /// one write path of source rows).
    private func apply(_ evaluated: EvaluatedMutation, row: JSONValue?, state: RowState) throws -> ExecutedMutation {
        let entry: CaptureLog.Entry
        do {
            entry = try CaptureLog.append(
                tableID: evaluated.table.tableID, primaryKey: evaluated.mutation.pkValue, row: row, state: state,
                manifest: current, store: store)
        } catch is CaptureLog.Rejection {
            // Field evaluation validated every authored value, so only a stored row can be at fault.
            throw PushIntegrityError.storedRow
        }
        lastCaptureLSN = entry.lsn
        var reportedRow: (JSONValue, Checksum)?
        if let row, let digest = entry.rowDigest {
            reportedRow = (row, try Checksum(digest: digest))
        }
        let outcome = try PushOutcome.applied(
            evaluated.mutation, schema: current.reference,
            state: ReportedRowState(serverVersion: entry.serverVersion, row: reportedRow))
        return ExecutedMutation(outcome: outcome, conflict: nil)
    }

    /// The row after an update: authored values replace stored ones; the update timestamp is the
    /// request time.
    private func patched(_ row: JSONValue, _ evaluated: EvaluatedMutation) -> JSONValue {
        let authored = evaluated.mutation.columns ?? []
        let updatedAt = evaluated.table.lifecycle.updatedAtFieldID
        return rebuilt(row, evaluated) { id in
            if let column = authored.first(where: { $0.key.exactlyEquals(id) }) { return column.value }
            return PushFieldEvaluator.matches(updatedAt, id) ? .string(evaluator.timestamp) : nil
        }
    }

    /// The source tombstone a delete leaves: the row kept, its deletion time (and, as for any
    /// change, its update time) set to the request time.
    private func tombstone(_ row: JSONValue, _ evaluated: EvaluatedMutation, deletedAt: String) -> JSONValue {
        let updatedAt = evaluated.table.lifecycle.updatedAtFieldID
        return rebuilt(row, evaluated) { id in
            deletedAt.exactlyEquals(id) || PushFieldEvaluator.matches(updatedAt, id)
                ? .string(evaluator.timestamp) : nil
        }
    }

    /// Every field of the table in manifest order, from `replacement` where it answers, else stored.
    private func rebuilt(
        _ row: JSONValue, _ evaluated: EvaluatedMutation, replacement: (String) -> JSONValue?
    ) -> JSONValue {
        let stored = row.objectValue
        return .object(JSONObject(evaluated.table.fields.map { field in
            JSONMember(field.fieldID, replacement(field.fieldID) ?? stored?[field.fieldID] ?? .null)
        }))
    }

    /// The row digest under the current manifest, which is the outcome schema of every first execution.
    private func checksum(_ row: JSONValue, _ evaluated: EvaluatedMutation, serverVersion: String) throws -> Checksum {
        do {
            let (_, digest) = try digester.digest(
                tableID: evaluated.table.tableID, primaryKey: evaluated.mutation.pkValue, row: row,
                serverVersion: serverVersion)
            return try Checksum(digest: digest)
        } catch {
            throw PushIntegrityError.storedRow
        }
    }
}
