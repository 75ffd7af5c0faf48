import SQLiteKit
import SynchroProtocol
import SynchroStore

/// The scope digest input kept on disk in the order the digest reads it (`spec/integrity.md` §4.6: one streaming
/// SHA-256 over `blob(row_identity) || row_digest` in identity order), so that a steady verification after a small
/// change re-reads and re-digests only the rows that changed, then hashes the stored digests in one pass of the
/// table's key (docs/decisions.md, "Stored scope digests on the client").
///
/// Layout (the engine's own, created on first use, not a migration step: upstream clients neither read nor write
/// it): `_synchro_seedkit_row_digests` holds one entry per edge of each maintained scope, keyed by scope and row
/// identity, with the row's last recomputed digest or NULL when that is stale; `_synchro_seedkit_pending_edges`
/// lists edges added since (their identity is computed in Swift when the digest next runs);
/// `_synchro_seedkit_digest_scopes` names the maintained scopes; `_synchro_seedkit_digest_counts` keeps each
/// maintained scope's edge count, the cardinality the digest declares before its rows (counting the edges again
/// would be a second pass over the scope). Triggers on `_synchro_scope_rows` and
/// `_synchro_row_versions` keep the entries in the same transaction as every change to an edge or a row version,
/// whichever statement makes it; ``LocalRows`` also marks each synced row it writes.
///
/// Stored entries are used only under ``ScopeDigestMemo`` guards: the scope's entries were rewritten by a complete
/// recomputation in this process under the same stamp (no commit by another connection, no schema change, the same
/// manifest) and no untracked engine transaction ran since. Anything else recomputes every row, as before, and
/// rewrites the scope's entries.
struct StoredScopeDigests {
    static let entries = "_synchro_seedkit_row_digests"
    static let pendingEdges = "_synchro_seedkit_pending_edges"
    static let scopes = "_synchro_seedkit_digest_scopes"
    static let counts = "_synchro_seedkit_digest_counts"

    static let layout = """
        CREATE TABLE IF NOT EXISTS _synchro_seedkit_digest_scopes (scope_id TEXT NOT NULL PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS _synchro_seedkit_row_digests (
            scope_id TEXT NOT NULL, identity BLOB NOT NULL, table_name TEXT NOT NULL, record_id TEXT NOT NULL,
            row_digest BLOB, PRIMARY KEY (scope_id, identity)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS _synchro_seedkit_row_digests_record
            ON _synchro_seedkit_row_digests (table_name, record_id, scope_id);
        CREATE TABLE IF NOT EXISTS _synchro_seedkit_digest_counts (
            scope_id TEXT NOT NULL PRIMARY KEY, edges INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_count_insert AFTER INSERT ON _synchro_scope_rows
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_counts WHERE scope_id = NEW.scope_id) BEGIN
            UPDATE _synchro_seedkit_digest_counts SET edges = edges + 1 WHERE scope_id = NEW.scope_id;
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_count_delete AFTER DELETE ON _synchro_scope_rows
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_counts WHERE scope_id = OLD.scope_id) BEGIN
            UPDATE _synchro_seedkit_digest_counts SET edges = edges - 1 WHERE scope_id = OLD.scope_id;
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_count_update AFTER UPDATE OF scope_id ON _synchro_scope_rows
        WHEN OLD.scope_id IS NOT NEW.scope_id BEGIN
            DELETE FROM _synchro_seedkit_digest_counts WHERE scope_id IN (OLD.scope_id, NEW.scope_id);
        END;
        CREATE TABLE IF NOT EXISTS _synchro_seedkit_pending_edges (
            scope_id TEXT NOT NULL, table_name TEXT NOT NULL, record_id TEXT NOT NULL,
            PRIMARY KEY (scope_id, table_name, record_id)) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_edge_insert AFTER INSERT ON _synchro_scope_rows
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_scopes WHERE scope_id = NEW.scope_id) BEGIN
            INSERT OR IGNORE INTO _synchro_seedkit_pending_edges (scope_id, table_name, record_id)
            VALUES (NEW.scope_id, NEW.table_name, NEW.record_id);
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_edge_delete AFTER DELETE ON _synchro_scope_rows
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_scopes WHERE scope_id = OLD.scope_id) BEGIN
            DELETE FROM _synchro_seedkit_row_digests
            WHERE table_name = OLD.table_name AND record_id = OLD.record_id AND scope_id = OLD.scope_id;
            DELETE FROM _synchro_seedkit_pending_edges
            WHERE scope_id = OLD.scope_id AND table_name = OLD.table_name AND record_id = OLD.record_id;
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_edge_update AFTER UPDATE ON _synchro_scope_rows
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_scopes WHERE scope_id IN (OLD.scope_id, NEW.scope_id))
        BEGIN
            DELETE FROM _synchro_seedkit_digest_scopes WHERE scope_id IN (OLD.scope_id, NEW.scope_id)
                AND NOT (OLD.scope_id IS NEW.scope_id AND OLD.table_name IS NEW.table_name
                    AND OLD.record_id IS NEW.record_id);
            UPDATE _synchro_seedkit_row_digests SET row_digest = NULL
            WHERE table_name = OLD.table_name AND record_id = OLD.record_id AND scope_id = OLD.scope_id;
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_version_insert AFTER INSERT ON _synchro_row_versions
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_scopes) BEGIN
            UPDATE _synchro_seedkit_row_digests SET row_digest = NULL
            WHERE table_name = NEW.table_name AND record_id = NEW.record_id;
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_version_update AFTER UPDATE ON _synchro_row_versions
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_scopes) BEGIN
            UPDATE _synchro_seedkit_row_digests SET row_digest = NULL
            WHERE (table_name = OLD.table_name AND record_id = OLD.record_id)
                OR (table_name = NEW.table_name AND record_id = NEW.record_id);
        END;
        CREATE TRIGGER IF NOT EXISTS _synchro_seedkit_version_delete AFTER DELETE ON _synchro_row_versions
        WHEN EXISTS (SELECT 1 FROM _synchro_seedkit_digest_scopes) BEGIN
            UPDATE _synchro_seedkit_row_digests SET row_digest = NULL
            WHERE table_name = OLD.table_name AND record_id = OLD.record_id;
        END;
        """ + chunkLayout

    /// Names of the layout's objects, to tell whether it is complete.
    static let objectNames = [
        scopes, entries, "_synchro_seedkit_row_digests_record", pendingEdges, "_synchro_seedkit_edge_insert",
        "_synchro_seedkit_edge_delete", "_synchro_seedkit_edge_update", "_synchro_seedkit_version_insert",
        "_synchro_seedkit_version_update", "_synchro_seedkit_version_delete", counts,
        "_synchro_seedkit_count_insert", "_synchro_seedkit_count_delete", "_synchro_seedkit_count_update",
    ] + chunkObjectNames

    /// Whether every object of ``layout`` exists on `connection`.
    static func isInstalled(on connection: Connection) throws -> Bool {
        let placeholders = Array(repeating: "?", count: objectNames.count).joined(separator: ", ")
        return try connection.cachedStatement(
            "SELECT count(*) FROM main.sqlite_schema WHERE name IN (\(placeholders))"
        ).scalar(objectNames.map(SQLiteValue.text))?.integerValue == Int64(objectNames.count)
    }

    /// Marks the stored digests of one row stale (its values change); nothing when no scope is maintained.
    static func markStale(tableName: String, recordIDs: some Collection<String>, on connection: Connection) throws {
        guard try isInstalled(on: connection),
              try connection.cachedStatement("SELECT EXISTS (SELECT 1 FROM _synchro_seedkit_digest_scopes)")
                  .scalar()?.integerValue == 1
        else { return }
        let statement = try connection.cachedStatement(
            "UPDATE _synchro_seedkit_row_digests SET row_digest = NULL WHERE table_name = ? AND record_id = ?")
        for recordID in recordIDs {
            try statement.run([.text(tableName), .text(recordID)])
        }
    }

    let rows: LocalRows
    let session: ScopeDigestMemo.Session

    /// The scope digest from the stored entries, re-digesting the stale ones and writing their digests back; nil
    /// when the entries may not be used (not rewritten under the current stamp) or do not add up (an entry of an
    /// unknown table or a missing row, a number of entries that differs from the kept edge count, an identity out of
    /// order, a chunk whose rows or range do not match). Clean chunks are hashed as stored (one update per chunk, after
    /// the accumulator's walk of their rows); dirty ranges are read entry by entry, then packed again.
    func storedDigest(scope: String, stamp: ScopeDigestMemo.Stamp) throws -> Checksum? {
        guard session.storedEntriesAreCurrent(scope: scope, stamp: stamp), try Self.isInstalled(on: rows.connection),
              try rows.connection.cachedStatement("SELECT 1 FROM _synchro_seedkit_digest_scopes WHERE scope_id = ?")
                  .scalar([.text(scope)]) != nil,
              try resolvePendingEdges(scope: scope),
              var accumulator = try keptCountAccumulator(scope: scope)
        else { return nil }
        var pass = EntryPass(rows: rows, scope: scope)
        let (chunks, dirty) = try Self.chunkIndex(scope: scope, on: rows.connection)
        var repack: [[UInt8]] = []
        if chunks.first?.lower != [] {
            guard try pass.add(ChunkRange(lower: [], upper: chunks.first?.lower), to: &accumulator) else { return nil }
            if !chunks.isEmpty { repack.append([]) }
        }
        if !chunks.isEmpty {
            let octets = try rows.connection.cachedStatement(
                "SELECT lower, octets FROM _synchro_seedkit_digest_chunks WHERE scope_id = ? ORDER BY lower")
            try octets.bind([.text(scope)])
            defer { octets.reset() }
            var index = 0
            while try octets.step() {
                guard index < chunks.count, chunks[index].lower.elementsEqual(octets.unsafeBlobBytes(at: 0)) else {
                    return nil
                }
                let range = ChunkRange(lower: chunks[index].lower, upper: chunks.dropFirst(index + 1).first?.lower)
                if dirty.contains(range.lower) {
                    guard try pass.add(range, to: &accumulator) else { return nil }
                    repack.append(range.lower)
                } else {
                    guard Self.addChunk(
                        octets.unsafeBlobBytes(at: 1), members: chunks[index].members, range: range, to: &accumulator)
                    else { return nil }
                }
                index += 1
            }
            guard index == chunks.count else { return nil }
        }
        guard let checksum = try LocalRows.checksum(of: accumulator) else { return nil }
        let write = try rows.connection.cachedStatement(
            "UPDATE _synchro_seedkit_row_digests SET row_digest = ? WHERE scope_id = ? AND identity = ?")
        for (identity, digest) in pass.refreshed {
            try write.run([.blob(digest), .text(scope), .blob(identity)])
        }
        if chunks.isEmpty {
            try Self.buildChunks(scope: scope, on: rows.connection)
        } else {
            for lower in repack { try Self.repackChunk(scope: scope, from: lower, on: rows.connection) }
        }
        return checksum
    }

    /// Entries read one by one (dirty ranges, the part below the first chunk), stale ones re-digested from their rows.
    private struct EntryPass {
        let rows: LocalRows
        let scope: String
        var restaled: StaleRows
        /// Re-digested entries of unprotected rows, written back after the digest.
        var refreshed: [(identity: [UInt8], digest: [UInt8])] = []

        init(rows: LocalRows, scope: String) {
            self.rows = rows
            self.scope = scope
            restaled = StaleRows(rows: rows)
        }

        /// Adds the entries of `range`; false when one does not add up.
        mutating func add(_ range: ChunkRange, to accumulator: inout ScopeDigestAccumulator) throws -> Bool {
            let statement = try StoredScopeDigests.entryRange(range, on: rows.connection)
            try statement.bind([.text(scope), .blob(range.lower)] + (range.upper.map { [.blob($0)] } ?? []))
            defer { statement.reset() }
            let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
            while try statement.step() {
                if statement.storageClass(at: 1) == .blob {
                    // In place, without a generic call per row.
                    guard (try? accumulator.add(
                        identityHead: statement.unsafeBlobBytes(at: 0), identityTail: empty,
                        rowDigest: statement.unsafeBlobBytes(at: 1))) != nil
                    else { return false }
                    continue
                }
                let identity = statement.blob(at: 0)
                guard let entry = try restaled.entry(
                    scope: scope, tableName: try statement.text(at: 2), recordID: try statement.text(at: 3)),
                    entry.identity.bytes == identity,
                    (try? accumulator.add(identity: entry.identity, rowDigest: entry.digest)) != nil
                else { return false }
                if !entry.protected { refreshed.append((identity, entry.digest)) }
            }
            return true
        }
    }

    /// The digest's start with the scope's kept edge count; nil when none is kept (a layout older than the count) or
    /// it is not a count.
    private func keptCountAccumulator(scope: String) throws -> ScopeDigestAccumulator? {
        guard let edges = try rows.connection.cachedStatement(
            "SELECT edges FROM _synchro_seedkit_digest_counts WHERE scope_id = ?"
        ).scalar([.text(scope)])?.integerValue, edges >= 0
        else { return nil }
        return try? ScopeDigestAccumulator(
            schemaHash: rows.manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(edges))
    }

    /// Gives each edge added since the last digest its stored entry (identity computed here, digest stale).
    private func resolvePendingEdges(scope: String) throws -> Bool {
        let pending = try rows.connection.cachedStatement(
            "SELECT table_name, record_id FROM _synchro_seedkit_pending_edges WHERE scope_id = ?"
        ).query([.text(scope)]) { (try $0.text(at: 0), try $0.text(at: 1)) }
        guard !pending.isEmpty else { return true }
        let insert = try rows.connection.cachedStatement("""
            INSERT OR REPLACE INTO _synchro_seedkit_row_digests (scope_id, identity, table_name, record_id, row_digest)
            VALUES (?, ?, ?, ?, NULL)
            """)
        for (tableName, recordID) in pending {
            guard let table = rows.tables.values.first(where: { $0.tableName == tableName }),
                  let key = table.primaryKeyColumn,
                  let identity = try? rows.identity(table, key, recordID)
            else { return false }
            try insert.run([.text(scope), .blob(identity.bytes), .text(tableName), .text(recordID)])
        }
        try rows.connection.cachedStatement("DELETE FROM _synchro_seedkit_pending_edges WHERE scope_id = ?")
            .run([.text(scope)])
        return true
    }

    /// Replaces the scope's stored entries with `entries` of a complete recomputation in identity order (protected
    /// rows stored stale: their digest is the edge's), and records the scope as maintained with its edge count.
    static func rewrite(
        scope: String, on connection: Connection, _ fill: (_ store: (RowIdentity, [UInt8]?, String, String) throws -> Void) throws -> Bool
    ) throws -> Bool {
        // First: with no chunk, the entries' triggers mark nothing for the scope while it is refilled.
        try dropChunks(scope: scope, on: connection)
        for sql in [
            "DELETE FROM _synchro_seedkit_row_digests WHERE scope_id = ?",
            "DELETE FROM _synchro_seedkit_pending_edges WHERE scope_id = ?",
            "INSERT OR IGNORE INTO _synchro_seedkit_digest_scopes (scope_id) VALUES (?)",
            """
            INSERT OR REPLACE INTO _synchro_seedkit_digest_counts (scope_id, edges)
            SELECT ?1, count(*) FROM _synchro_scope_rows WHERE scope_id = ?1
            """,
        ] {
            try connection.cachedStatement(sql).run([.text(scope)])
        }
        let insert = try connection.cachedStatement("""
            INSERT INTO _synchro_seedkit_row_digests (scope_id, identity, table_name, record_id, row_digest)
            VALUES (?, ?, ?, ?, ?)
            """)
        let filled = try fill { identity, digest, tableName, recordID in
            try insert.run([
                .text(scope), .blob(identity.bytes), .text(tableName), .text(recordID), digest.map(SQLiteValue.blob) ?? .null,
            ])
        }
        if filled { try buildChunks(scope: scope, on: connection) }
        return filled
    }

    /// Stops maintaining `scope`'s entries (a recomputation that could not stream them).
    static func forget(scope: String, on connection: Connection) throws {
        try dropChunks(scope: scope, on: connection)
        for sql in [
            "DELETE FROM _synchro_seedkit_digest_scopes WHERE scope_id = ?",
            "DELETE FROM _synchro_seedkit_digest_counts WHERE scope_id = ?",
            "DELETE FROM _synchro_seedkit_row_digests WHERE scope_id = ?",
            "DELETE FROM _synchro_seedkit_pending_edges WHERE scope_id = ?",
        ] {
            try connection.cachedStatement(sql).run([.text(scope)])
        }
    }

    /// Stale entries re-read from their rows, with each table's protected rows read once.
    private struct StaleRows {
        let rows: LocalRows
        var digester: StoredRowDigester
        var protected: [String: Set<String>] = [:]

        init(rows: LocalRows) {
            self.rows = rows
            digester = StoredRowDigester(manifest: rows.manifest)
        }

        /// The identity and digest of one stale entry: the edge's digest for a protected row, else the row's stored
        /// values digested with its server version; nil when the row cannot be digested that way.
        mutating func entry(
            scope: String, tableName: String, recordID: String
        ) throws -> (identity: RowIdentity, digest: [UInt8], protected: Bool)? {
            guard let table = rows.tables.values.first(where: { $0.tableName == tableName }),
                  let key = table.primaryKeyColumn, let layout = digester.layout(for: table)
            else { return nil }
            if protected[tableName] == nil { protected[tableName] = rows.protectedRecordIDs(of: table) }
            guard let protectedIDs = protected[tableName] else { return nil }
            if protectedIDs.contains(recordID) {
                guard let text = try rows.connection.cachedStatement("""
                    SELECT checksum FROM _synchro_scope_rows WHERE scope_id = ? AND table_name = ? AND record_id = ?
                    """).scalar([.text(scope), .text(tableName), .text(recordID)])?.textValue,
                      let digest = Hex.decode(text)
                else { return nil }
                return (try rows.identity(table, key, recordID), digest, true)
            }
            let read = try rows.connection.cachedStatement(LocalRows.recordCheckSQL(table, key: key))
            guard let row = try LocalRows.checkedRow(
                read, recordID: recordID, key: key, tableName: tableName, layout: layout, digester: &digester)
            else { return nil }
            return (row.identity, row.digest, false)
        }
    }
}
