import SQLiteKit
import SynchroProtocol

/// The pages of a rebuild session (`spec/wire-protocol.md` §6.2, §6.3). A page is written once, from
/// the staged rows only, and stored; every later request for it gets the stored octets.
enum RebuildPage {
    /// The page whose first record has `ordinal`: the stored body, or a new one built and stored.
    /// Call inside a write transaction.
    static func body(session: RebuildSession, ordinal: Int64, state: EngineState) throws -> [UInt8] {
        let db = state.store.db
        if let stored = try db.cachedStatement(
            "SELECT body FROM rebuild_pages WHERE session_id = ? AND request_ordinal = ?"
        ).scalar([.integer(session.id), .integer(ordinal)])?.blobValue {
            return stored
        }
        let body = try build(session: session, ordinal: ordinal, state: state)
        try db.cachedStatement("INSERT INTO rebuild_pages(session_id, request_ordinal, body) VALUES (?, ?, ?)")
            .run([.integer(session.id), .integer(ordinal), .blob(body)])
        return body
    }

    private static func build(session: RebuildSession, ordinal: Int64, state: EngineState) throws -> [UInt8] {
        let end = ordinal + session.limit
        let hasMore = end < session.rowCount
        var w = ResponseWriter(capacity: 1024 + Int(session.limit) * 512)
        var keys = PrimaryKeyFields(manifest: state.manifest)
        w.raw("{")
        w.key("scope")
        try w.string(session.scope)
        w.raw(",")
        w.key("records")
        w.raw("[")
        var written: Int64 = 0
        try state.store.db.cachedStatement("""
            SELECT table_id, pk, row, server_version, row_digest FROM rebuild_rows
            WHERE session_id = ? AND ordinal >= ? AND ordinal < ? ORDER BY ordinal
            """).forEachRow([.integer(session.id), .integer(ordinal), .integer(end)]) { row in
            let digest = row.blob(at: 4)
            guard digest.count == 32 else { throw SyncIntegrityViolation() }
            if written > 0 { w.raw(",") }
            written += 1
            let tableID = try row.text(at: 0)
            w.raw("{")
            w.key("table")
            try w.string(tableID)
            w.raw(",")
            w.key("pk")
            try w.primaryKey(fieldID: try keys.fieldID(table: tableID), value: row.blob(at: 1))
            w.raw(",")
            w.key("row")
            w.splice(row.blob(at: 2))
            w.raw(",")
            w.key("row_checksum")
            w.checksum(digest)
            w.raw(",")
            w.key("server_version")
            try w.string(try row.text(at: 3))
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
