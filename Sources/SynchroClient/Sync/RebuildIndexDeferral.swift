import SQLiteKit
import SynchroStore

/// When a rebuild defers the manifest's non-unique indexes (``DeferredIndexes``) and where they are built again
/// (`docs/decisions.md`, "Initial rebuild: non-unique manifest indexes built once at finality").
///
/// A rebuild attempt's first page defers the indexes of every synced table that has no row yet, provided nothing was
/// authored (no ledger entry, no rejected mutation) and nothing is deferred already; the indexes are built again in
/// the transaction of the attempt's finality, of a discarded or restarted attempt, at the start of every sync cycle
/// and when a store opens — whichever comes first — so a crash at any point leaves a record the next run resolves.
enum RebuildIndexDeferral {
    /// Defers the indexes of the empty synced tables of `manifest` when the store qualifies; returns the names.
    @discardableResult
    static func deferIfFresh(manifest: ClientManifest, on connection: Connection) throws -> [String] {
        guard try DeferredIndexes.record(on: connection) == nil else { return [] }
        let authored = try connection.scalar("""
            SELECT EXISTS (SELECT 1 FROM _synchro_pending_changes)
                OR EXISTS (SELECT 1 FROM _synchro_rejected_mutations)
            """)?.integerValue != 0
        guard !authored else { return [] }
        var empty: [LocalSchemaTable] = []
        for table in manifest.localSchema where table.indexes.contains(where: { !$0.unique }) {
            let hasRows = try connection.scalar(
                "SELECT EXISTS (SELECT 1 FROM \(SQLiteIdentifier.quote(table.tableName)))")?.integerValue != 0
            if !hasRows { empty.append(table) }
        }
        return try keepingDigests(manifest: manifest, on: connection) {
            try DeferredIndexes.deferNonUnique(of: empty, on: connection).map(\.name)
        }
    }

    /// Builds the deferred indexes again from the active manifest's definitions, inside the caller's transaction.
    @discardableResult
    static func restore(on connection: Connection) throws -> [String] {
        guard try DeferredIndexes.record(on: connection) != nil else { return [] }
        guard let text = try MetaStore.value(.schemaManifest, on: connection), !text.isEmpty else {
            return try DeferredIndexes.restore(tables: [], on: connection)
        }
        let manifest = try ClientManifest(bytes: Array(text.utf8))
        return try keepingDigests(manifest: manifest, on: connection) {
            try DeferredIndexes.restore(tables: manifest.localSchema, on: connection)
        }
    }

    /// Runs the index DDL of `body` inside a tracked transaction's session without making its remembered digests
    /// unusable (``ScopeDigestMemo/Session/carry(from:to:)``): after a rebuild of `catalog`, the first page of
    /// `user:alice` deferring the indexes of notes and tasks otherwise cost the next pull a recomputation of catalog.
    private static func keepingDigests(
        manifest: ClientManifest, on connection: Connection, _ body: () throws -> [String]
    ) throws -> [String] {
        guard let session = ScopeDigestMemo.Session.current, session.covers(connection) else { return try body() }
        let before = try ScopeDigestMemo.Stamp(connection: connection, manifest: manifest.manifest)
        let changed = try body()
        if !changed.isEmpty {
            let after = try ScopeDigestMemo.Stamp(connection: connection, manifest: manifest.manifest)
            session.carry(from: before, to: after)
        }
        return changed
    }
}

extension ClientStore {
    /// Builds indexes a rebuild left deferred (a crash, or a cycle that ended mid-rebuild) in one transaction of
    /// their own; reads only the record when there is none.
    func restoreDeferredIndexes() throws(ClientStoreError) {
        try withEngine { (connection) throws(ClientStoreError) in
            try mappingStoreErrors {
                guard try DeferredIndexes.record(on: connection) != nil else { return }
                _ = try connection.transaction(kind: .immediate) { try RebuildIndexDeferral.restore(on: connection) }
            }
        }
    }
}
