import SQLiteKit
import SynchroProtocol

/// The body of a successful pull (`spec/wire-protocol.md` §5.2, §5.3, §5.6).
enum PullResponse {
    static func write(
        plan: PullPlan, page: PullPage, client: ClientRecord, stream: StreamState, state: inout EngineState
    ) throws -> [UInt8] {
        var w = ResponseWriter(capacity: 1024 + page.selected.count * 512)
        var names = TableNames(manifest: state.manifest)
        w.raw("{")
        w.key("changes")
        w.raw("[")
        for (i, candidate) in page.selected.enumerated() {
            if i > 0 { w.raw(",") }
            try writeChange(candidate, to: &w, names: &names, store: state.store)
        }
        w.raw("],")
        w.key("scope_set_version")
        w.integer(client.scopeSetVersion)
        w.raw(",")
        w.key("scope_cursors")
        w.raw("{")
        for (i, cursor) in page.cursors.enumerated() {
            if i > 0 { w.raw(",") }
            let token = state.cursorSigner.issue(PullCursor(
                user: client.userID, client: client.clientID, generation: client.generation, scope: cursor.scope,
                schemaHash: state.manifest.schemaHash, generations: stream.generations, position: cursor.position
            ).payload)
            try w.string(cursor.scope)
            w.raw(":")
            try w.string(token)
        }
        w.raw("},")
        try writeScopeUpdates(plan.delta, to: &w)
        w.raw(",")
        w.key("rebuild")
        try w.stringArray(plan.rebuild)
        w.raw(",")
        w.key("has_more")
        w.bool(page.hasMore)
        if !page.hasMore {
            w.raw(",")
            w.key("checksums")
            try writeChecksums(scopes: plan.assigned, stream: stream, to: &w, state: &state)
        }
        w.raw("}")
        return w.bytes
    }

    /// One change object from the candidate's latest stream entry: the captured row, never live state.
    private static func writeChange(
        _ candidate: PullPage.Candidate, to w: inout ResponseWriter, names: inout TableNames, store: ServerStore
    ) throws {
        var found = false
        try store.db.cachedStatement(
            "SELECT table_id, pk, op, row, server_version, row_digest FROM stream WHERE position = ?"
        ).forEachRow([.integer(candidate.latest)]) { statement in
            guard !found, let operation = StreamOperation(rawValue: statement.int64(at: 2)) else {
                throw SyncIntegrityViolation()
            }
            found = true
            try writeChange(candidate, operation: operation, from: statement, to: &w, names: &names)
        }
        guard found else { throw SyncIntegrityViolation() }
    }

    private static func writeChange(
        _ candidate: PullPage.Candidate, operation: StreamOperation, from statement: any StoreRow,
        to w: inout ResponseWriter, names: inout TableNames
    ) throws {
        try names.select(statement, column: 0)
        w.raw("{")
        w.key("scope")
        try w.string(candidate.scope)
        w.raw(",")
        w.key("table")
        w.splice(names.table)
        w.raw(",")
        w.key("op")
        w.raw(operation == .upsert ? #""upsert""# : #""delete""#)
        w.raw(",")
        w.key("pk")
        w.raw("{")
        w.splice(names.keyField)
        w.raw(":")
        w.spliceColumn(statement, 1)
        w.raw("}")
        if operation != .delete {
            let digestLength = statement.withBlobBytes(at: 5) { $0.count }
            guard !statement.isNull(at: 3), digestLength == 32 else { throw SyncIntegrityViolation() }
            w.raw(",")
            w.key("row")
            w.spliceColumn(statement, 3)
            w.raw(",")
            w.key("row_checksum")
            try w.checksumColumn(statement, 5)
        }
        w.raw(",")
        w.key("server_version")
        try w.stringColumn(statement, 4)
        w.raw("}")
    }

    private static func writeScopeUpdates(_ delta: AssignmentDelta, to w: inout ResponseWriter) throws {
        w.key("scope_updates")
        w.raw("{")
        w.key("add")
        w.raw("[")
        for (i, scope) in delta.added.enumerated() {
            if i > 0 { w.raw(",") }
            w.raw("{")
            w.key("id")
            try w.string(scope)
            w.raw(",")
            w.key("cursor")
            w.raw("null}")
        }
        w.raw("],")
        w.key("remove")
        try w.stringArray(delta.removed)
        w.raw("}")
    }

    /// The scope digest of every active assigned scope at this page's boundary, scopes listed in
    /// `rebuild` included (`spec/wire-protocol.md` §5.6).
    private static func writeChecksums(
        scopes: [String], stream: StreamState, to w: inout ResponseWriter, state: inout EngineState
    ) throws {
        w.raw("{")
        for (i, scope) in scopes.enumerated() {
            if i > 0 { w.raw(",") }
            let entry = try state.scopeDigests.digest(
                scope: scope, manifest: state.manifest, generations: stream.generations, store: state.store)
            var digest = entry.digest
            if state.corruptNextChecksum.remove(scope) != nil {
                // Fault injection: one wrong terminal checksum, so clients exercise the scope-only rebuild.
                digest[0] ^= 0x01
            }
            try w.string(scope)
            w.raw(":")
            w.checksum(digest)
        }
        w.raw("}")
    }
}

extension PullCursor {
    /// A cursor of this server's current lineage.
    init(
        user: String, client: String, generation: Int64, scope: String, schemaHash: String,
        generations: StreamGenerations, position: Int64
    ) {
        self.init(
            user: user, client: client, generation: generation, scope: scope, schemaHash: schemaHash,
            streamGeneration: generations.stream, membershipGeneration: generations.membership,
            retentionGeneration: generations.retention, position: position)
    }
}
