import SQLiteKit
import SynchroProtocol

/// Turns the capture log into the pull-visible projection, membership and stream, in LSN order
/// (`spec/integrity.md` §6.1).
///
/// Each batch is one transaction: the entries' projection rows, membership edges and stream
/// entries, and the advanced `materialized_lsn` / `stream_position`, commit together, so pull and
/// rebuild always see a boundary where every materialized write is complete in every scope.
enum Materializer {
    /// Capture entries per transaction: large enough to amortize the commit, small enough to keep
    /// one transaction short under the engine's lock.
    static let batchSize = 1000

    /// Materializes every captured write not yet materialized.
    ///
    /// An entry that cannot be materialized (its row no longer fits the current manifest, its
    /// stored identity disagrees with its key) stops the log there: later entries wait behind it,
    /// because the stream must follow LSN order. The engine then reports blocked capture instead of
    /// `capture_pending` to clients whose writes wait (`spec/wire-protocol.md` §8.2).
    static func materializePending(state: inout EngineState) {
        do {
            try state.followSharedStore()
        } catch {
            state.captureBlocked = true
            return
        }
        var worker = MaterializationBatch(
            store: state.store, manifest: state.manifest, dataset: state.dataset)
        do {
            while true {
                let outcome = try worker.run()
                if case .blocked = outcome {
                    state.captureBlocked = true
                    return
                }
                if case .drained = outcome { break }
            }
            state.captureBlocked = false
        } catch {
            // A failed batch rolled back completely; the same entries are retried on the next call.
            state.captureBlocked = true
        }
    }
}

/// One pass of the materializer over at most ``Materializer/batchSize`` capture entries.
struct MaterializationBatch {
    enum Outcome {
        /// Entries were materialized; more may remain.
        case progressed
        /// Nothing remained.
        case drained
        /// An entry cannot be materialized; everything before it was committed.
        case blocked
    }

    /// An entry that breaks an integrity rule: it stops the log, it is not an operational failure.
    struct Unmaterializable: Error {}

    let store: ServerStore
    let manifest: SchemaManifest
    let dataset: Dataset
    private var digester: RowDigester

    init(store: ServerStore, manifest: SchemaManifest, dataset: Dataset) {
        self.store = store
        self.manifest = manifest
        self.dataset = dataset
        digester = RowDigester(manifest: manifest)
    }

    mutating func run() throws -> Outcome {
        try store.db.transaction {
            var stream = try StreamState.load(from: store)
            let entries = try pendingEntries(after: stream.materializedLSN)
            guard !entries.isEmpty else { return .drained }
            var outcome = Outcome.progressed
            for entry in entries {
                do {
                    try apply(entry, position: &stream.position)
                } catch is Unmaterializable {
                    outcome = .blocked
                    break
                }
                stream.materializedLSN = entry.lsn
            }
            // The ranges whose edges changed (marked by membership's triggers) are packed again in this transaction.
            try MembershipChunks.refreshDirty(store: store)
            try store.setMeta(StreamState.materializedLSNKey, .integer(stream.materializedLSN))
            try store.setMeta(StreamState.streamPositionKey, .integer(stream.position))
            return outcome
        }
    }

    private func pendingEntries(after lsn: Int64) throws -> [CapturedEntry] {
        try store.db.cachedStatement("""
            SELECT lsn, identity, table_id, pk, row, server_version, state FROM capture_log
            WHERE lsn > ? ORDER BY lsn LIMIT ?
            """).query([.integer(lsn), .integer(Int64(Materializer.batchSize))]) { s in
            CapturedEntry(
                lsn: s.int64(at: 0), identity: s.blob(at: 1), tableID: try s.text(at: 2), pk: s.blob(at: 3),
                row: s.isNull(at: 4) ? nil : s.blob(at: 4), serverVersion: try s.text(at: 5),
                state: RowState(rawValue: s.int64(at: 6)))
        }
    }

    /// Projection, membership and stream effects of one captured write.
    private mutating func apply(_ entry: CapturedEntry, position: inout Int64) throws {
        // Capture validates every write against the manifest of its time, so a table the current
        // manifest lacks was removed by a later schema publication, which also removed the table's
        // pull-visible rows: the write has nothing left to publish. Skipping it (instead of
        // blocking) keeps its author's fence satisfiable.
        guard manifest.table(id: entry.tableID) != nil else { return }
        guard let state = entry.state, (entry.row == nil) == (state == .fence),
              let pk = try? StrictJSONParser().parse(entry.pk)
        else { throw Unmaterializable() }
        var row: JSONValue?
        var digest: [UInt8]?
        if let bytes = entry.row {
            guard let parsed = try? StrictJSONParser().parse(bytes),
                  let result = try? digester.digest(
                      tableID: entry.tableID, primaryKey: pk, row: parsed, serverVersion: entry.serverVersion),
                  result.identity.bytes == entry.identity
            else { throw Unmaterializable() }
            row = parsed
            digest = result.digest
        }
        let before = try scopesBefore(identity: entry.identity)
        let after = row.map { dataset.scopes(forTable: entry.tableID, row: $0) } ?? []
        try writeProjection(entry, digest: digest)
        try writeMembership(
            identity: entry.identity, before: before, after: after, liveDigest: state == .live ? digest : nil)

        let rowOperation: StreamOperation = state == .live ? .upsert : .deleteWithRow
        var effects = after.map { ($0, rowOperation) }
        effects += before.filter { edge in !after.contains { $0.exactlyEquals(edge.scope) } }.map { ($0.scope, .delete) }
        effects.sort { $0.0.utf8Precedes($1.0) }
        for (scope, operation) in effects {
            position += 1
            let rowArgument: SQLiteValue = operation == .delete ? .null : entry.row.map(SQLiteValue.blob) ?? .null
            let digestArgument: SQLiteValue = operation == .delete ? .null : digest.map(SQLiteValue.blob) ?? .null
            try store.db.cachedStatement("""
                INSERT INTO stream(position, scope_id, identity, table_id, pk, op, row, server_version, row_digest)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).run([
                    .integer(position), .text(scope), .blob(entry.identity), .text(entry.tableID), .blob(entry.pk),
                    .integer(operation.rawValue), rowArgument, .text(entry.serverVersion), digestArgument,
                ])
        }
    }

    /// The scopes holding the row before this write, read from `membership`, each with whether the row was a live
    /// member there (its edge carries a digest): what the write changes in the scope's kept count.
    ///
    /// `membership` is keyed by scope, so the candidates come from the previous projection row
    /// (membership is always derived from it) and each is confirmed by a key lookup; a scan by
    /// identity would cost the whole table per write.
    private func scopesBefore(identity: [UInt8]) throws -> [(scope: String, live: Bool)] {
        let previous = try store.db.cachedStatement(
            "SELECT table_id, row FROM projection WHERE identity = ?"
        ).rows([.blob(identity)]).first
        guard let previous, let tableID = previous[0].textValue, let bytes = previous[1].blobValue,
              let row = try? StrictJSONParser().parse(bytes)
        else { return [] }
        return try dataset.scopes(forTable: tableID, row: row).compactMap { scope in
            let edge = try store.db.cachedStatement(
                "SELECT row_digest IS NOT NULL FROM membership WHERE scope_id = ? AND identity = ?"
            ).scalar([.text(scope), .blob(identity)])
            return edge.map { (scope, $0.integerValue == 1) }
        }
    }

    private func writeProjection(_ entry: CapturedEntry, digest: [UInt8]?) throws {
        try store.db.cachedStatement("""
            INSERT OR REPLACE INTO projection(identity, table_id, pk, row, server_version, row_digest, state)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """).run([
                .blob(entry.identity), .text(entry.tableID), .blob(entry.pk), entry.row.map(SQLiteValue.blob) ?? .null,
                .text(entry.serverVersion), digest.map(SQLiteValue.blob) ?? .null,
                .integer(entry.state?.rawValue ?? RowState.fence.rawValue),
            ])
    }

    /// Membership edges of the row after the write, each carrying the row's digest while it is live (NULL for a
    /// tombstone): the scope digest reads them in key order (``ScopeDigestCache``). Each scope's kept live count
    /// moves with its edge in the same transaction (``ScopeCardinality``).
    private func writeMembership(
        identity: [UInt8], before: [(scope: String, live: Bool)], after: [String], liveDigest: [UInt8]?
    ) throws {
        let digest = liveDigest.map(SQLiteValue.blob) ?? .null
        let live: Int64 = liveDigest == nil ? 0 : 1
        for edge in before where !after.contains(where: { $0.exactlyEquals(edge.scope) }) {
            try store.db.cachedStatement("DELETE FROM membership WHERE scope_id = ? AND identity = ?")
                .run([.text(edge.scope), .blob(identity)])
            try ScopeCardinality.add(edge.live ? -1 : 0, scope: edge.scope, store: store)
        }
        for scope in after {
            if let edge = before.first(where: { $0.scope.exactlyEquals(scope) }) {
                try store.db.cachedStatement("UPDATE membership SET row_digest = ? WHERE scope_id = ? AND identity = ?")
                    .run([digest, .text(scope), .blob(identity)])
                try ScopeCardinality.add(live - (edge.live ? 1 : 0), scope: scope, store: store)
            } else {
                try store.db.cachedStatement("INSERT INTO membership(scope_id, identity, row_digest) VALUES (?, ?, ?)")
                    .run([.text(scope), .blob(identity), digest])
                try ScopeCardinality.add(live, scope: scope, store: store)
            }
        }
    }
}

/// One `capture_log` row as the materializer reads it.
struct CapturedEntry {
    let lsn: Int64
    let identity: [UInt8]
    let tableID: String
    /// Canonical JSON of the key value.
    let pk: [UInt8]
    /// Canonical JSON of the complete row; nil for a fence.
    let row: [UInt8]?
    let serverVersion: String
    /// nil when the stored state is not a known ``RowState`` (an integrity failure).
    let state: RowState?
}
