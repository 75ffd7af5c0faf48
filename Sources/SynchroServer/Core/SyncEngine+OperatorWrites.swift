import SQLiteKit
import SynchroProtocol

/// Why an operator write was refused. Descriptions name the rule, never a key or row value.
public enum OperatorWriteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The manifest has no such table.
    case unknownTable
    /// The key or row breaks the current manifest; `rule` is the row-digest rule (e.g. `missing_field`).
    case invalidRow(rule: String)
    /// A delete of a row that does not exist or is already deleted.
    case rowNotFound
    /// The store failed; nothing was written.
    case storeFailure

    public var description: String {
        switch self {
        case .unknownTable: "unknown table"
        case .invalidRow(let rule): "row does not match the manifest: \(rule)"
        case .rowNotFound: "no such live row"
        case .storeFailure: "the write could not be stored"
        }
    }
}

/// Writes made by the operator directly at the source, as an application would write its own
/// database. They take the push path's capture (`CaptureLog.append`) and become pull-visible only
/// through the materializer, like every other write (`spec/integrity.md` §6.1).
extension SyncEngine {
    /// Inserts or replaces one complete row with a new server version; returns that version.
    ///
    /// `pk` is the key value (the value of the wire `pk` object's one member). A row whose
    /// lifecycle `deleted_at` field is set is stored as a source tombstone.
    @discardableResult
    public func operatorWrite(table: String, pk: JSONValue, row: JSONValue) throws(OperatorWriteError) -> String {
        try capture(table: table, pk: pk) { _, manifestTable in
            (row, Self.isTombstone(row, table: manifestTable) ? .tombstone : .live)
        }
    }

    /// Deletes one live row with a new server version; returns that version.
    ///
    /// A table with a lifecycle `deleted_at` field keeps a source tombstone (the row with
    /// `deleted_at`, and `updated_at` when the table has one, set to now); any other table keeps
    /// only a deletion fence.
    @discardableResult
    public func operatorDelete(table: String, pk: JSONValue) throws(OperatorWriteError) -> String {
        try capture(table: table, pk: pk) { current, manifestTable in
            try self.deletion(of: current, table: manifestTable)
        }
    }

    /// Records an accepted write of a client as push does: the capture, the client's pending fence
    /// and its accepted-write epoch in one transaction. A test seam for fences and epochs without
    /// building push bodies; `row` nil deletes the row as ``operatorDelete(table:pk:)`` does.
    @discardableResult
    func acceptClientWrite(
        user: String, client clientID: String, table: String, pk: JSONValue, row: JSONValue?
    ) throws(OperatorWriteError) -> String {
        try capture(table: table, pk: pk) { current, manifestTable in
            guard let row else { return try self.deletion(of: current, table: manifestTable) }
            return (row, Self.isTombstone(row, table: manifestTable) ? .tombstone : .live)
        } afterCapture: { entry, store in
            guard var client = try ClientRecord.load(user: user, client: clientID, from: store.db) else {
                throw OperatorWriteError.rowNotFound
            }
            client.pendingFenceLSN = entry.lsn
            client.acceptedWriteEpoch += 1
            try client.save(to: store.db)
        }
    }

    private static func isTombstone(_ row: JSONValue, table: ManifestTable) -> Bool {
        guard let deletedAt = table.lifecycle.deletedAtFieldID, let value = row.objectValue?[deletedAt] else {
            return false
        }
        return !value.isNull
    }

    /// The state a delete leaves: a tombstone stamped now where the table keeps them, else a fence.
    private func deletion(of current: SourceRow?, table: ManifestTable) throws -> (JSONValue?, RowState) {
        guard let current, current.state == .live, let live = current.row?.objectValue else {
            throw OperatorWriteError.rowNotFound
        }
        guard let deletedAt = table.lifecycle.deletedAtFieldID else { return (nil, .fence) }
        let now = JSONValue.string(ProtocolTimestamp.format(microseconds: configuration.clock.nowMicroseconds()))
        let stamped = [deletedAt, table.lifecycle.updatedAtFieldID].compactMap { $0 }
        let members = live.members.map { member in
            stamped.contains { $0.exactlyEquals(member.key) } ? JSONMember(member.key, now) : member
        }
        return (.object(JSONObject(members)), .tombstone)
    }

    /// One captured write under the engine's lock: `decide` sees the row's current source state
    /// and returns the new one; the capture commits together with `afterCapture`'s changes, and in
    /// `.immediate` mode (unless a fault paused it) the write is materialized right after.
    private func capture(
        table: String, pk: JSONValue, decide: @Sendable (SourceRow?, ManifestTable) throws -> (JSONValue?, RowState),
        afterCapture: @Sendable (CaptureLog.Entry, ServerStore) throws -> Void = { _, _ in }
    ) throws(OperatorWriteError) -> String {
        let mark = checkpointer?.mark
        defer { boundLog(since: mark) }
        do {
            return try state.withLock { state in
                let store = state.store
                let manifest = state.manifest
                guard let manifestTable = manifest.table(id: table) else { throw OperatorWriteError.unknownTable }
                let identity: RowIdentity
                do throws(RowDigestError) {
                    identity = try RowIdentity(table: manifestTable, primaryKey: pk)
                } catch {
                    throw OperatorWriteError.invalidRow(rule: error.rule)
                }
                let version = try store.db.transaction {
                    let current = try CaptureLog.sourceRow(identity: identity, store: store)
                    let (row, rowState) = try decide(current, manifestTable)
                    let entry = try CaptureLog.append(
                        tableID: table, primaryKey: pk, row: row, state: rowState, manifest: manifest, store: store)
                    try afterCapture(entry, store)
                    return entry.serverVersion
                }
                if configuration.materialization == .immediate && !state.materializationPaused {
                    Materializer.materializePending(state: &state)
                }
                return version
            }
        } catch let error as OperatorWriteError {
            throw error
        } catch let error as CaptureLog.Rejection {
            switch error {
            case .unknownTable: throw .unknownTable
            case .invalidRow(let rule): throw .invalidRow(rule: rule)
            case .rowPresenceMismatch: throw .storeFailure
            }
        } catch {
            throw .storeFailure
        }
    }
}
