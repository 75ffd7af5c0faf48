import SQLiteKit
import SynchroProtocol

/// The pages of a rebuild session (`spec/wire-protocol.md` §6.2, §6.3).
///
/// A page is a pure function of the staged snapshot: the staged rows of its ordinal range in
/// ordinal order, spliced as stored (a row staged by reference with the projection body it refers
/// to, which still has the staged version), and tokens signed deterministically (HMAC over a payload of
/// session facts). Building a page again therefore gives the same octets every time, which is what
/// exact replay requires, without storing each page body beside the staged rows it repeats.
enum RebuildPage {
    /// The page whose first record has `ordinal`, built from the staged rows. Call inside the
    /// transaction that validated the session, so the session and its rows are read together.
    static func body(session: RebuildSession, ordinal: Int64, state: EngineState) throws -> [UInt8] {
        try build(session: session, ordinal: ordinal, state: state)
    }

    private static func build(session: RebuildSession, ordinal: Int64, state: EngineState) throws -> [UInt8] {
        let end = ordinal + session.limit
        let hasMore = end < session.rowCount
        var w = ResponseWriter(capacity: 1024 + Int(session.limit) * 512)
        var names = TableNames(manifest: state.manifest)
        w.raw("{")
        w.key("scope")
        try w.string(session.scope)
        w.raw(",")
        w.key("records")
        w.raw("[")
        var written: Int64 = 0
        // A row staged by reference takes the projection's body, which must still be the staged version (the
        // projection's triggers save the body before any change, so a mismatch is a broken snapshot).
        try state.store.db.cachedStatement("""
            SELECT r.table_id, r.pk, coalesce(r.row, p.row), r.server_version, r.row_digest,
                   r.row IS NULL AND (p.row IS NULL OR p.server_version IS DISTINCT FROM r.server_version)
            FROM rebuild_rows r LEFT JOIN projection p ON r.row IS NULL AND p.identity = r.identity
            WHERE r.staged >= ? AND r.staged < ? AND r.session_id = ? ORDER BY r.staged
            """).forEachRow([
                .integer(session.firstStaged + ordinal), .integer(session.firstStaged + min(end, session.rowCount)),
                .integer(session.id),
            ]) { row in
            guard row.int64(at: 5) == 0, row.withBlobBytes(at: 4, { $0.count }) == 32 else {
                throw SyncIntegrityViolation()
            }
            if written > 0 { w.raw(",") }
            written += 1
            try names.select(row, column: 0)
            w.raw("{")
            w.key("table")
            w.splice(names.table)
            w.raw(",")
            w.key("pk")
            w.raw("{")
            w.splice(names.keyField)
            w.raw(":")
            w.spliceColumn(row, 1)
            w.raw("},")
            w.key("row")
            w.spliceColumn(row, 2)
            w.raw(",")
            w.key("row_checksum")
            try w.checksumColumn(row, 4)
            w.raw(",")
            w.key("server_version")
            try w.stringColumn(row, 3)
            w.raw("}")
        }
        // The staged rows are the snapshot: fewer than the session promised means they are gone.
        guard written == min(session.limit, max(0, session.rowCount - ordinal)) else { throw SyncIntegrityViolation() }
        w.raw("],")
        w.key("cursor")
        if hasMore {
            try w.string(state.continuationSigner.issue(RebuildContinuation(session: session, ordinal: end).payload))
        } else {
            w.raw("null")
        }
        w.raw(",")
        w.key("has_more")
        w.bool(hasMore)
        if !hasMore {
            let cursor = PullCursor(
                user: session.userID, client: session.clientID, generation: session.generation, scope: session.scope,
                schemaHash: session.schemaHash, generations: session.generations, position: session.boundary)
            w.raw(",")
            w.key("final_scope_cursor")
            try w.string(state.cursorSigner.issue(cursor.payload))
            w.raw(",")
            w.key("checksum")
            w.checksum(session.scopeDigest)
        }
        w.raw("}")
        return w.bytes
    }
}
