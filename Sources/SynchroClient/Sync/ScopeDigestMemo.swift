import SQLiteKit
import SynchroStore
import Synchronization
import SynchroProtocol

/// The scope digests the engine last recomputed (`spec/client-store.md` §9, "Scope digest recomputation"), each
/// with the state it was computed over, so that a later verification of an unchanged scope reuses the identical
/// value instead of re-reading and re-digesting every row (docs/decisions.md, "Scope digest memo").
///
/// Soundness rests on three guards: every engine transaction that is not a tracked server apply clears the memo
/// (``ClientStore``); a tracked one forgets a scope's digest on each ``LocalRows`` write to its provenance or to a
/// row or row version it has an edge to, and everything on failure; and an entry is reused only under the same
/// ``Stamp`` — no commit by another connection (the application connection, another process), no schema change,
/// the same manifest.
final class ScopeDigestMemo: Sendable {
    /// One remembered digest.
    struct Entry: Sendable {
        let checksum: Checksum
        let stamp: Stamp
    }

    /// What the engine connection observes of the database besides its own writes.
    struct Stamp: Sendable, Equatable {
        /// `PRAGMA data_version`: changes whenever another connection commits.
        let dataVersion: Int64
        /// `PRAGMA schema_version`: changes with every DDL statement, whichever connection runs it.
        let schemaVersion: Int64
        /// The schema hash of the manifest the digest was computed under.
        let schemaHash: [UInt8]

        init(connection: Connection, manifest: SchemaManifest) throws {
            dataVersion = try connection.cachedStatement("PRAGMA data_version").scalar()?.integerValue ?? -1
            schemaVersion = try connection.cachedStatement("PRAGMA schema_version").scalar()?.integerValue ?? -1
            schemaHash = manifest.schemaHashOctets
        }
    }

    private let entries = Mutex<[String: Entry]>([:])
    /// Scopes whose stored digest entries (``StoredScopeDigests``) a complete recomputation rewrote in this process,
    /// with the stamp it ran under: only those entries are used, and only under the same stamp.
    private let storedStamps = Mutex<[String: Stamp]>([:])

    /// The remembered digest of `scope`, whatever its stamp (for inspection).
    func checksum(of scope: String) -> Checksum? {
        entries.withLock { $0[scope]?.checksum }
    }

    /// Forgets every digest.
    func clear() {
        entries.withLock { $0.removeAll() }
        storedStamps.withLock { $0.removeAll() }
    }

    /// Starts a tracked transaction on `connection` with the remembered digests.
    func session(on connection: Connection) -> Session {
        Session(
            connection: ObjectIdentifier(connection), entries: entries.withLock { $0 },
            storedStamps: storedStamps.withLock { $0 })
    }

    /// Keeps what a committed tracked transaction left.
    func commit(_ session: Session) {
        let kept = session.entries
        entries.withLock { $0 = kept }
        let stamps = session.storedStamps
        storedStamps.withLock { $0 = stamps }
    }

    /// The memo inside one tracked server-apply transaction: entries it adds count only once it commits, and each
    /// ``LocalRows`` write forgets the digests that may read what it changes.
    final class Session: Sendable {
        /// The transaction's connection; ``LocalRows`` on another connection does not use the session.
        let connection: ObjectIdentifier
        private let state: Mutex<[String: Entry]>
        private let stored: Mutex<[String: Stamp]>

        fileprivate init(connection: ObjectIdentifier, entries: [String: Entry], storedStamps: [String: Stamp]) {
            self.connection = connection
            state = Mutex(entries)
            stored = Mutex(storedStamps)
        }

        fileprivate var entries: [String: Entry] {
            state.withLock { $0 }
        }

        fileprivate var storedStamps: [String: Stamp] {
            stored.withLock { $0 }
        }

        /// Whether `scope`'s stored digest entries were rewritten in this process under `stamp`.
        func storedEntriesAreCurrent(scope: String, stamp: Stamp) -> Bool {
            stored.withLock { $0[scope] == stamp }
        }

        /// Records that `scope`'s stored digest entries were just rewritten under `stamp`.
        func storedEntriesRewritten(scope: String, stamp: Stamp) {
            stored.withLock { $0[scope] = stamp }
        }

        /// The tracked transaction running on this thread, if any.
        @TaskLocal static var current: Session?

        /// Forgets the digest of `scope`: its provenance changes.
        func invalidate(scope: String) {
            state.withLock { _ = $0.removeValue(forKey: scope) }
        }

        /// Forgets the digest of every scope with an edge to the row (its provenance as it stands now): the row,
        /// its row version or its deletion changes. A scope without such an edge does not read the row; one that
        /// gains the edge later forgets its digest then (``invalidate(scope:)``).
        func invalidate(tableName: String, recordID: String, on connection: Connection) throws {
            try StoredScopeDigests.markStale(tableName: tableName, recordIDs: CollectionOfOne(recordID), on: connection)
            guard state.withLock({ !$0.isEmpty }) else { return }
            let scopes = try connection.cachedStatement(
                "SELECT DISTINCT scope_id FROM _synchro_scope_rows WHERE table_name = ? AND record_id = ?"
            ).rows([.text(tableName), .text(recordID)])
            guard !scopes.isEmpty else { return }
            state.withLock { entries in
                for scope in scopes {
                    if let scope = scope.first?.textValue { entries.removeValue(forKey: scope) }
                }
            }
        }

        /// ``invalidate(tableName:recordID:on:)`` for many rows of one table, 64 record IDs per query.
        func invalidate(tableName: String, recordIDs: [String], on connection: Connection) throws {
            try StoredScopeDigests.markStale(tableName: tableName, recordIDs: recordIDs, on: connection)
            var start = 0
            while start < recordIDs.count, state.withLock({ !$0.isEmpty }) {
                let batch = recordIDs[start..<min(start + 64, recordIDs.count)]
                let placeholders = Array(repeating: "?", count: batch.count).joined(separator: ", ")
                let scopes = try connection.cachedStatement("""
                    SELECT DISTINCT scope_id FROM _synchro_scope_rows
                    WHERE table_name = ? AND record_id IN (\(placeholders))
                    """).rows([.text(tableName)] + batch.map(SQLiteValue.text))
                state.withLock { entries in
                    for scope in scopes {
                        if let scope = scope.first?.textValue { entries.removeValue(forKey: scope) }
                    }
                }
                start += batch.count
            }
        }

        /// Keeps every digest and stored-entry stamp taken under `old` valid under `new`, for DDL of this transaction
        /// that reads and writes no row, row version or edge (a non-unique index dropped or built, ``DeferredIndexes``):
        /// its only effect on the stamp is `schema_version`, and every digest input is the same octets after it.
        func carry(from old: Stamp, to new: Stamp) {
            guard old != new else { return }
            state.withLock { entries in
                for (scope, entry) in entries where entry.stamp == old {
                    entries[scope] = Entry(checksum: entry.checksum, stamp: new)
                }
            }
            stored.withLock { stamps in
                for (scope, stamp) in stamps where stamp == old { stamps[scope] = new }
            }
        }

        /// Whether `connection` is the transaction's.
        func covers(_ connection: Connection) -> Bool {
            ObjectIdentifier(connection) == self.connection
        }

        /// The remembered digest of `scope` when its stamp still holds, else `compute()`'s, which is remembered.
        func digest(
            scope: String, on connection: Connection, manifest: SchemaManifest, compute: () throws -> Checksum
        ) throws -> Checksum {
            let stamp = try Stamp(connection: connection, manifest: manifest)
            if let entry = state.withLock({ $0[scope] }), entry.stamp == stamp { return entry.checksum }
            let checksum = try compute()
            state.withLock { $0[scope] = Entry(checksum: checksum, stamp: stamp) }
            return checksum
        }
    }
}
