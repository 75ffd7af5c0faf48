import SQLiteKit
import SynchroStore
import SynchroProtocol

/// What one applied pull page did.
public struct PullPageOutcome: Sendable, Equatable {
    /// Whether the server has more for this boundary (pull again with the installed cursors).
    public let hasMore: Bool
    /// Scopes installed as healthy by this terminal page (digest verified), byte order.
    public let verifiedScopes: [String]
    /// Scopes that are rebuild-required after this page (listed in `rebuild`, mismatching, or without cursor).
    public let rebuildRequired: [String]
    /// Changes the page carried.
    public let rows: Int
}

/// Pulls incremental pages (`spec/wire-protocol.md` §5.8, `spec/client-store.md` §9): the whole body is
/// validated first, then applied in one server-apply transaction; a terminal page installs cursor and checksum
/// only for scopes whose recomputed local digest matches.
public struct PullApplier: Sendable {
    /// Where and as whom to pull.
    public let context: SyncContext

    /// Creates an applier.
    public init(context: SyncContext) {
        self.context = context
    }

    /// The request local state produces: stored cursors of every known scope, the bound generation and schema.
    public func request() throws(SyncError) -> PullRequest {
        let limit = context.pageLimit
        return try context.store.readSyncState { connection in try Self.request(on: connection, limit: limit) }
    }

    static func request(on connection: Connection, limit: Int64) throws -> PullRequest {
        let binding = try ScopeStore.binding(on: connection)
        let clientID = try ClientIdentity.bound(on: connection)
        let scopes = try ScopeStore.all(on: connection)
        return PullRequest(
            clientID: clientID, clientGeneration: binding.generation, schema: binding.schema,
            scopeSetVersion: try MetaStore.integer(.scopeSetVersion, on: connection),
            scopes: ScopeCursorMap(scopes.map { .init(scopeID: $0.scopeID, cursor: $0.cursor) }), limit: limit)
    }

    /// The exact body of the pull request local state makes now (the work identity of a `pulling` retry).
    static func requestJSON(on connection: Connection, limit: Int64) throws -> String {
        try CanonicalJSON.string(try request(on: connection, limit: limit).json)
    }

    /// Pulls one page. A non-200 reply (including `503 capture_pending`) throws with nothing changed.
    public func runPage() throws(SyncError) -> PullPageOutcome {
        let request = try request()
        let body = try SyncExchange.mapping { try CanonicalJSON.encode(request.json) }
        let (json, _) = try SyncExchange.post(context.transport, path: "/sync/pull", body: body)
        SyncCrashPoint.pullReceived.reached()
        let outcome = try apply(json: json, request: request)
        SyncCrashPoint.pullPage.reached()
        return outcome
    }

    /// Pulls pages until a terminal page; returns the terminal page's outcome.
    public func pull() throws(SyncError) -> PullPageOutcome {
        while true {
            let outcome = try runPage()
            if !outcome.hasMore { return outcome }
        }
    }

    func apply(json: JSONValue, request: PullRequest) throws(SyncError) -> PullPageOutcome {
        let store = context.store
        let manifest = try store.readSyncState { connection in try store.activeManifest(on: connection) }
        let localScopes = Set(request.scopes.entries.map(\.scopeID))
        let page = try PullPage(json: json, localScopes: localScopes, manifest: manifest.manifest)
        try ScopeSetVersionRule.check(
            presented: request.scopeSetVersion, received: page.scopeSetVersion,
            changed: !page.added.isEmpty || !page.removed.isEmpty, member: "scope_set_version")
        return try context.store.applySyncKeepingScopeDigests { connection in
            // The request must still describe local state: a concurrent change would make the page misapply.
            let current = try ScopeStore.all(on: connection)
            guard current.map({ ScopeCursorMap.Entry(scopeID: $0.scopeID, cursor: $0.cursor) })
                == request.scopes.entries
            else {
                throw SyncError.invalidState(reason: "scope state changed during the pull")
            }
            let generations = Dictionary(uniqueKeysWithValues: current.map { ($0.scopeID, $0.generation) })
            let rows = LocalRows(connection: connection, manifest: manifest)
            let protected = try rows.protectedRows(of: page.changes.lazy.compactMap(\.row))
            for change in page.changes {
                let tableName = try rows.table(change.tableID).tableName
                let recordID = rows.recordID(change.primaryKey)
                if let row = change.row {
                    try rows.write(row, protected: protected)
                    if change.isDelete {
                        try rows.removeEdge(scope: change.scope, tableName: tableName, recordID: recordID)
                    } else {
                        try rows.upsertEdge(
                            scope: change.scope, tableName: tableName, recordID: recordID, digest: row.digest,
                            generation: generations[change.scope] ?? 0)
                    }
                } else {
                    try rows.setVersion(
                        tableName: tableName, recordID: recordID, version: change.serverVersion, checksum: nil)
                    try rows.removeEdge(scope: change.scope, tableName: tableName, recordID: recordID)
                    try rows.deleteIfOrphaned(tableName: tableName, recordID: recordID)
                }
            }
            for scopeID in page.removed {
                try ScopeStore.remove(scopeID, rows: rows, on: connection)
            }
            for scopeID in page.added {
                try ScopeStore.add(scopeID, cursor: nil, on: connection)
            }
            for scopeID in page.rebuild {
                try ScopeStore.invalidate(scopeID, on: connection)
            }
            var verified: [String] = []
            let issued = Dictionary(page.scopeCursors.map { ($0.scopeID, $0.cursor) }, uniquingKeysWith: { $1 })
            if let checksums = page.checksums {
                let rebuild = Set(page.rebuild)
                let cursors = Dictionary(
                    try ScopeStore.all(on: connection).map { ($0.scopeID, $0.cursor) }, uniquingKeysWith: { $1 })
                for (scopeID, checksum) in checksums.sorted(by: { $0.key < $1.key }) where !rebuild.contains(scopeID) {
                    // A scope without an issued or stored cursor stays rebuild-required: a checksum alone never
                    // makes it healthy.
                    guard let cursor = issued[scopeID] ?? cursors[scopeID] ?? nil else { continue }
                    let local = try rows.scopeDigest(scope: scopeID)
                    if local == checksum {
                        let text = try CanonicalJSON.string(checksum.json)
                        try connection.run("""
                            UPDATE _synchro_scopes SET cursor = ?, checksum = ?, local_checksum = ? WHERE scope_id = ?
                            """, [.text(cursor), .text(text), .text(text), .text(scopeID)])
                        verified.append(scopeID)
                    } else {
                        try ScopeStore.invalidate(scopeID, on: connection)
                    }
                }
            } else {
                for (scopeID, cursor) in issued {
                    try connection.run(
                        "UPDATE _synchro_scopes SET cursor = ? WHERE scope_id = ?", [.text(cursor), .text(scopeID)])
                }
            }
            try MetaStore.set(.scopeSetVersion, String(page.scopeSetVersion), on: connection)
            try BackoffStore.clear(.pulling, workIdentity: try CanonicalJSON.string(request.json), on: connection)
            let required = try ScopeStore.all(on: connection).filter { $0.cursor == nil }.map(\.scopeID)
            return PullPageOutcome(
                hasMore: page.hasMore, verifiedScopes: verified, rebuildRequired: required, rows: page.changes.count)
        }
    }
}
