import SQLiteKit
import SynchroProtocol

/// Makes a validated publication the current manifest in one transaction
/// (`spec/wire-protocol.md` §12.2: "stage and activate the new projections atomically before the
/// manifest is visible").
///
/// Everything pull, rebuild and push read is re-rendered in place under the new manifest: the
/// rows of `projection` and `stream` get the new field set and their row digests under the new
/// schema hash (same `server_version`: a schema change is not a write of the row), and
/// `source_rows` and the not yet materialized `capture_log` entries get the new field set, so
/// later updates and materialization see complete rows. Rewriting in place keeps the read paths
/// (which splice stored octets) unchanged and makes every row served afterwards exact under the
/// current manifest; the cost is one pass over the stored rows per publication.
///
/// Rows of a removed table leave projection, membership, stream and source rows. Rebuild stages
/// of sessions bound to the old hash are dropped (their sessions stay, so late requests get 409
/// `rebuild_restart_required`). No lineage generation changes: every cursor binds the schema hash,
/// so cursors of the old schema are stale by themselves, and connect replaces the ones that may
/// continue (§3.4). Bumping a generation would stale those too.
struct SchemaActivation {
    /// Rows read per statement while rewriting: bounded memory on a large projection.
    static let batchSize: Int64 = 512

    let publication: SchemaPublication
    let store: ServerStore
    private let reshaper: RowReshaper
    private var digester: RowDigester

    init(publication: SchemaPublication, current: SchemaManifest, store: ServerStore) {
        self.publication = publication
        self.store = store
        reshaper = RowReshaper(from: current, to: publication.manifest, defaults: publication.defaults)
        digester = RowDigester(manifest: publication.manifest)
    }

    /// Inserts the manifest and re-renders the stored state, with the exact request and response
    /// recorded for replay. Throws ``SchemaPublicationError`` (`value_not_convertible`) when a
    /// stored value fits neither a retyped field nor its fallback; nothing is changed then.
    mutating func run(request: [UInt8], response: [UInt8], current: SchemaManifest) throws {
        let manifest = publication.manifest
        try store.db.transaction {
            try store.insertManifest(
                manifest, json: publication.manifestJSON, affectedScopes: publication.affectedScopes)
            try store.setMeta(Self.requestKey(manifest.schemaVersion), .blob(request))
            try store.setMeta(Self.responseKey(manifest.schemaVersion), .blob(response))
            // First: rows still staged by reference would otherwise take a copy of every body rewritten below.
            try dropRebuildStages(except: manifest.schemaHash)
            for table in current.tables where manifest.table(id: table.tableID) == nil {
                try removeRows(of: table.tableID)
            }
            let materialized = try StreamState.load(from: store).materializedLSN
            do {
                try rewrite(.projection, after: .blob([]))
                // Every live digest changed with the schema hash: membership's copies follow in one statement.
                try store.db.cachedStatement(ServerSchema.membershipDigestsFromProjection).run([])
                // Removed tables' rows left membership and digests may have become NULL: recount every scope.
                try ScopeCardinality.recountAll(store: store)
                // And the digest chunks are built again from membership, once, in key order.
                try MembershipChunks.rebuildAll(store: store)
                try rewrite(.stream, after: .integer(0))
                try copySourceRowsFromProjection()
                try rewrite(.sourceRows, after: .blob([]))
                try rewrite(.pendingCapture, after: .integer(materialized))
            } catch let unconvertible as RowReshaper.Unconvertible {
                throw SchemaPublicationError(
                    "value_not_convertible", table: unconvertible.tableID, field: unconvertible.fieldID)
            }
        }
    }

    /// `server_meta` keys of a publication's exact request and response octets.
    static func requestKey(_ version: Int64) -> String { "schema_publication:\(version):request" }
    static func responseKey(_ version: Int64) -> String { "schema_publication:\(version):response" }

    // MARK: - Steps

    private func removeRows(of tableID: String) throws {
        let table: [SQLiteValue] = [.text(tableID)]
        try store.db.cachedStatement(
            "DELETE FROM membership WHERE identity IN (SELECT identity FROM projection WHERE table_id = ?)"
        ).run(table)
        for sql in [
            "DELETE FROM projection WHERE table_id = ?", "DELETE FROM stream WHERE table_id = ?",
            "DELETE FROM source_rows WHERE table_id = ?",
        ] {
            try store.db.cachedStatement(sql).run(table)
        }
    }

    /// A source row whose version is the materialized one holds the same state as its projection
    /// row (both come from the capture of that version), so it takes the re-rendered projection
    /// octets instead of being rendered a second time; ``RowTable/sourceRows`` then selects only the
    /// source rows written after the last materialization.
    private func copySourceRowsFromProjection() throws {
        try store.db.cachedStatement("""
            UPDATE source_rows SET row = (SELECT p.row FROM projection p WHERE p.identity = source_rows.identity)
            WHERE row IS NOT NULL AND EXISTS (
                SELECT 1 FROM projection p WHERE p.identity = source_rows.identity
                    AND p.server_version = source_rows.server_version AND p.row IS NOT NULL)
            """).run([])
    }

    /// A stored-row table of the server and how its rows are read and written back.
    private enum RowTable {
        case sourceRows, pendingCapture, projection, stream

        var select: String {
            switch self {
            case .sourceRows: """
                SELECT s.identity, s.table_id, s.pk, s.row, s.server_version FROM source_rows s
                WHERE s.identity > ?1 AND s.row IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM projection p WHERE p.identity = s.identity AND p.server_version = s.server_version)
                ORDER BY s.identity LIMIT ?2
                """
            case .pendingCapture: """
                SELECT lsn, table_id, pk, row, server_version FROM capture_log
                WHERE lsn > ?1 AND row IS NOT NULL ORDER BY lsn LIMIT ?2
                """
            case .projection: """
                SELECT identity, table_id, pk, row, server_version FROM projection
                WHERE identity > ?1 AND row IS NOT NULL ORDER BY identity LIMIT ?2
                """
            case .stream: """
                SELECT position, table_id, pk, row, server_version FROM stream
                WHERE position > ?1 AND row IS NOT NULL ORDER BY position LIMIT ?2
                """
            }
        }

        var update: String {
            switch self {
            case .sourceRows: "UPDATE source_rows SET row = ?1 WHERE identity = ?2"
            case .pendingCapture: "UPDATE capture_log SET row = ?1 WHERE lsn = ?2"
            case .projection: "UPDATE projection SET row = ?1, row_digest = ?2 WHERE identity = ?3"
            case .stream: "UPDATE stream SET row = ?1, row_digest = ?2 WHERE position = ?3"
            }
        }

        /// Pull-visible rows carry a digest, which changes with the schema hash even when the row does not.
        var carriesDigest: Bool { self == .projection || self == .stream }
    }

    private struct StoredRow {
        let key: SQLiteValue
        let tableID: String
        let pk: [UInt8]
        let row: [UInt8]
        let serverVersion: String
    }

    /// Re-renders every row of `table` after `start` (exclusive) in key order, batch by batch.
    private mutating func rewrite(_ table: RowTable, after start: SQLiteValue) throws {
        var last = start
        while true {
            let batch = try store.db.cachedStatement(table.select).query([last, .integer(Self.batchSize)]) { s in
                StoredRow(
                    key: try s.value(at: 0), tableID: try s.text(at: 1), pk: s.blob(at: 2), row: s.blob(at: 3),
                    serverVersion: try s.text(at: 4))
            }
            guard let final = batch.last else { return }
            for stored in batch {
                guard let plan = reshaper.plan(for: stored.tableID) else {
                    // Only a pending capture of a removed table can remain; the materializer skips it.
                    guard table == .pendingCapture else { throw SyncIntegrityViolation() }
                    continue
                }
                if plan.keepsRows && !table.carriesDigest { continue }
                let (row, digest) = try render(stored, plan: plan, digest: table.carriesDigest)
                let arguments: [SQLiteValue] = digest.map { [.blob(row), .blob($0), stored.key] }
                    ?? [.blob(row), stored.key]
                try store.db.cachedStatement(table.update).run(arguments)
            }
            last = final.key
        }
    }

    /// The successor row octets (canonical JSON) and, when asked, its digest under the new manifest.
    private mutating func render(_ stored: StoredRow, plan: RowReshaper.TablePlan, digest: Bool) throws
        -> (row: [UInt8], digest: [UInt8]?)
    {
        let parsed: JSONValue
        let key: JSONValue
        do {
            parsed = try StrictJSONParser().parse(stored.row)
            key = try StrictJSONParser().parse(stored.pk)
        } catch {
            throw SyncIntegrityViolation()
        }
        let reshaped = try reshaper.reshape(parsed, plan: plan)
        let bytes = plan.keepsRows ? stored.row : try CanonicalJSON.encode(reshaped)
        guard digest else { return (bytes, nil) }
        do {
            let result = try digester.digest(
                tableID: stored.tableID, primaryKey: key, row: reshaped, serverVersion: stored.serverVersion)
            return (bytes, result.digest)
        } catch {
            throw SyncIntegrityViolation()
        }
    }

    /// Staged rows and pages of sessions bound to another schema: they can never be served again.
    private func dropRebuildStages(except schemaHash: String) throws {
        let hash: [SQLiteValue] = [.text(schemaHash)]
        try store.db.cachedStatement(ServerSchema.deleteStagedRowsSQL(where: "s.schema_hash <> ?")).run(hash)
        try store.db.cachedStatement("""
            DELETE FROM rebuild_references
            WHERE session_id IN (SELECT session_id FROM rebuild_sessions WHERE schema_hash <> ?)
            """).run(hash)
        // The lineage record (a negative ordinal) stays: loading the session needs it for the 409.
        try store.db.cachedStatement("""
            DELETE FROM rebuild_pages WHERE request_ordinal >= 0
                AND session_id IN (SELECT session_id FROM rebuild_sessions WHERE schema_hash <> ?)
            """).run(hash)
    }
}
