import SQLiteKit
import SynchroProtocol

/// One rebuild attempt's immutable staged snapshot (`spec/wire-protocol.md` §6.3): the scope's live
/// rows at one materialization boundary, in identity order, with their digests and the final
/// scope digest, bound to the client's generation, the schema, the lineage generations and the
/// client's accepted-write epoch at creation.
struct RebuildSession {
    /// Sessions serve pages for exactly 24 hours from creation; serving never extends it.
    static let lifetime: Int64 = 24 * 3_600_000_000

    let id: Int64
    let userID: String
    let clientID: String
    let rebuildID: String
    let scope: String
    let schemaHash: String
    let generation: Int64
    let epoch: Int64
    /// The stream position the snapshot was taken at; the final cursor resumes after it.
    let boundary: Int64
    let limit: Int64
    let created: Int64
    let rowCount: Int64
    let scopeDigest: [UInt8]
    /// The `rebuild_rows.staged` number of the first staged row; the row of ordinal `o` is `firstStaged + o`.
    let firstStaged: Int64
    let generations: StreamGenerations

    var expiry: Int64 { created + Self.lifetime }

    /// True when this authentic session can no longer serve pages.
    ///
    /// Expiry, a new generation, another schema, a lineage change, or a later accepted write of
    /// this client (the epoch) all end it (409 `rebuild_restart_required`).
    func isStale(client: ClientRecord, schemaHash current: String, generations now: StreamGenerations, at time: Int64)
        -> Bool
    {
        time >= expiry || generation != client.generation || !schemaHash.exactlyEquals(current)
            || epoch != client.acceptedWriteEpoch || generations != now
    }

    // MARK: - Lookup

    private static let columns = """
        session_id, user_id, client_id, rebuild_id, scope_id, schema_hash, generation, accepted_write_epoch,
        boundary, page_limit, created_us, row_count, scope_digest, first_staged
        """

    /// The session of one attempt, by the identity the client chose for it.
    static func find(user: String, client: String, rebuildID: String, store: ServerStore) throws -> RebuildSession? {
        try load(
            "SELECT \(columns) FROM rebuild_sessions WHERE user_id = ? AND client_id = ? AND rebuild_id = ?",
            [.text(user), .text(client), .text(rebuildID)], store: store)
    }

    /// The session a continuation names.
    static func find(id: Int64, store: ServerStore) throws -> RebuildSession? {
        try load("SELECT \(columns) FROM rebuild_sessions WHERE session_id = ?", [.integer(id)], store: store)
    }

    private static func load(_ sql: String, _ arguments: [SQLiteValue], store: ServerStore) throws -> RebuildSession? {
        let found = try store.db.cachedStatement(sql).query(arguments) { s in
            (
                id: s.int64(at: 0), user: try s.text(at: 1), client: try s.text(at: 2), rebuildID: try s.text(at: 3),
                scope: try s.text(at: 4), hash: try s.text(at: 5), generation: s.int64(at: 6), epoch: s.int64(at: 7),
                boundary: s.int64(at: 8), limit: s.int64(at: 9), created: s.int64(at: 10), rows: s.int64(at: 11),
                digest: s.blob(at: 12), firstStaged: s.int64(at: 13)
            )
        }.first
        guard let found else { return nil }
        let lineage = try store.db.cachedStatement(
            "SELECT body FROM rebuild_pages WHERE session_id = ? AND request_ordinal = ?"
        ).scalar([.integer(found.id), .integer(lineageOrdinal)])?.blobValue
        guard let lineage, let generations = decodeLineage(lineage) else { throw SyncIntegrityViolation() }
        return RebuildSession(
            id: found.id, userID: found.user, clientID: found.client, rebuildID: found.rebuildID, scope: found.scope,
            schemaHash: found.hash, generation: found.generation, epoch: found.epoch, boundary: found.boundary,
            limit: found.limit, created: found.created, rowCount: found.rows, scopeDigest: found.digest,
            firstStaged: found.firstStaged, generations: generations)
    }

    // MARK: - Staging

    /// Creates the session and stages the scope's rows at the current materialization boundary,
    /// in the caller's write transaction (the boundary, the rows and the digest are then one
    /// consistent snapshot).
    ///
    /// The rows are staged by reference (`row` NULL: the body is the projection row's, saved by the
    /// projection's triggers before it changes — ``ServerSchema/stagedRowReferences``), so staging
    /// writes a few dozen octets per row instead of every body. They are staged first, so that the
    /// row count is the cardinality the scope digest declares: the digest then reads the scope once
    /// more for its identities, not twice. The session row is completed with count and digest before
    /// the transaction commits.
    static func stage(
        request: RebuildRequest, client: ClientRecord, stream: StreamState, now: Int64, state: inout EngineState
    ) throws -> RebuildSession {
        let db = state.store.db
        try purgeExpired(now: now, store: state.store)
        try db.cachedStatement("""
            INSERT INTO rebuild_sessions(user_id, client_id, rebuild_id, scope_id, schema_hash, generation,
                accepted_write_epoch, boundary, page_limit, created_us, row_count, scope_digest)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, X'')
            """).run([
                .text(client.userID), .text(client.clientID), .text(request.rebuildID), .text(request.scope),
                .text(state.manifest.schemaHash), .integer(client.generation), .integer(client.acceptedWriteEpoch),
                .integer(stream.position), .integer(request.limit), .integer(now),
            ])
        let id = try db.lastInsertRowID()
        let (firstStaged, staged) = try stageLiveRows(of: request.scope, session: id, store: state.store)
        try db.cachedStatement("INSERT INTO rebuild_references(session_id) VALUES (?)").run([.integer(id)])
        let digest = try state.scopeDigests.digest(
            scope: request.scope, manifest: state.manifest, generations: stream.generations, store: state.store,
            knownCardinality: staged)
        guard staged == digest.cardinality else { throw SyncIntegrityViolation() }
        try db.cachedStatement("""
            UPDATE rebuild_sessions SET row_count = ?, scope_digest = ?, first_staged = ? WHERE session_id = ?
            """).run([.integer(digest.cardinality), .blob(digest.digest), .integer(firstStaged), .integer(id)])
        try db.cachedStatement("INSERT INTO rebuild_pages(session_id, request_ordinal, body) VALUES (?, ?, ?)")
            .run([.integer(id), .integer(lineageOrdinal), .blob(encodeLineage(stream.generations))])
        return RebuildSession(
            id: id, userID: client.userID, clientID: client.clientID, rebuildID: request.rebuildID,
            scope: request.scope, schemaHash: state.manifest.schemaHash, generation: client.generation,
            epoch: client.acceptedWriteEpoch, boundary: stream.position, limit: request.limit, created: now,
            rowCount: digest.cardinality, scopeDigest: digest.digest, firstStaged: firstStaged,
            generations: stream.generations)
    }

    /// Stages the scope's live materialized rows by reference (`row` NULL) under `session`, numbered one after
    /// another in ascending row-identity order (the BLOB order of `identity` is `memcmp`, the protocol's order;
    /// SQLite numbers the rows of one `INSERT … SELECT … ORDER BY` in that order, ``ServerSchema/rebuildRows(named:)``),
    /// and returns the first staged number and the count, after checking that the run is contiguous. Rebuild
    /// sessions and seed exports (session `-export_key`, ``SeedExportStaging``) stage alike.
    static func stageLiveRows(
        of scope: String, session: Int64, store: ServerStore
    ) throws -> (first: Int64, count: Int64) {
        let db = store.db
        try db.cachedStatement("""
            INSERT INTO rebuild_rows(session_id, identity, table_id, pk, row, server_version, row_digest)
            SELECT CAST(?1 AS INTEGER), p.identity, p.table_id, p.pk, CAST(NULL AS BLOB), p.server_version, p.row_digest
            FROM membership m JOIN projection p ON p.identity = m.identity
            WHERE m.scope_id = ?2 AND p.state = 0
            ORDER BY m.identity
            """).run([.integer(session), .text(scope)])
        let count = Int64(db.changes)
        let first = try count > 0 ? db.lastInsertRowID() - count + 1 : 0
        guard try db.cachedStatement(
            "SELECT count(*) FROM rebuild_rows WHERE staged >= ? AND staged < ? AND session_id = ?"
        ).scalar([.integer(first), .integer(first + count), .integer(session)])?.integerValue == count
        else { throw SyncIntegrityViolation() }
        return (first, count)
    }

    /// Drops the staged rows of expired sessions (and page bodies, which databases written before
    /// pages were rebuilt from the stage still hold). The session rows and their lineage records
    /// stay, so a late request of an expired attempt still gets 409 `rebuild_restart_required`
    /// rather than a new snapshot under the old `rebuild_id`.
    private static func purgeExpired(now: Int64, store: ServerStore) throws {
        let cutoff: [SQLiteValue] = [.integer(now - lifetime)]
        try store.db.cachedStatement(ServerSchema.deleteStagedRowsSQL(where: "s.created_us <= ?")).run(cutoff)
        try store.db.cachedStatement("""
            DELETE FROM rebuild_pages WHERE request_ordinal >= 0
                AND session_id IN (SELECT session_id FROM rebuild_sessions WHERE created_us <= ?)
            """).run(cutoff)
        try store.db.cachedStatement("""
            DELETE FROM rebuild_references
            WHERE session_id IN (SELECT session_id FROM rebuild_sessions WHERE created_us <= ?)
            """).run(cutoff)
    }

    // MARK: - Lineage record

    /// The lineage generations a session binds are kept as a record in `rebuild_pages` (at an
    /// ordinal no page uses), because `rebuild_sessions` has no columns for them. Page bodies
    /// themselves are not stored: ``RebuildPage`` rebuilds them from the stage, byte for byte.
    static let lineageOrdinal: Int64 = -1

    private static func encodeLineage(_ generations: StreamGenerations) throws -> [UInt8] {
        try CanonicalJSON.encode(.array([
            .string(String(generations.stream)), .string(String(generations.membership)),
            .string(String(generations.retention)),
        ]))
    }

    private static func decodeLineage(_ bytes: [UInt8]) -> StreamGenerations? {
        guard let values = (try? StrictJSONParser().parse(bytes))?.arrayValue, values.count == 3,
              let stream = values[0].stringValue.flatMap({ Int64($0) }),
              let membership = values[1].stringValue.flatMap({ Int64($0) }),
              let retention = values[2].stringValue.flatMap({ Int64($0) })
        else { return nil }
        return StreamGenerations(stream: stream, membership: membership, retention: retention)
    }
}
