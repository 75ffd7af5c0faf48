import Dispatch
import SynchroStore
import SQLiteKit
import Synchronization
import SynchroProtocol

/// The rows of a rebuild re-read and re-digested beside the engine, page by page, for the scope digest that
/// rebuild finality recomputes (`spec/client-store.md` §9, "Scope digest recomputation"; docs/decisions.md,
/// "Rebuild finality from rows checked beside the engine").
///
/// After each intermediate page commits, the rows it wrote are read back on a read-only connection of their
/// own, from a snapshot that includes that commit, converted from their stored values and digested with their
/// stored server version (``LocalRows/recordCheckSQL(_:key:)``, ``StoredRowDigester``), on a thread of their own
/// while the engine applies the next page. Finality then takes a row's digest from here when nothing can have
/// changed the row since it was read:
///
/// - no commit of another connection since the check began (`PRAGMA data_version` of the engine connection,
///   which changes with every commit of any other connection: the application's, another process's);
/// - no later write of the row by this rebuild (each record carries the number of the page that last wrote it,
///   each digest the number of pages committed before its snapshot);
/// - the same manifest.
///
/// Any other row — protected, written by the final page in finality's own transaction, or applied before the
/// check began (a resumed attempt) — is read inside the finality transaction as before.
final class RebuildRowCheck: Sendable {
    /// A row's 32-octet digest, read from a snapshot that includes the first `snapshot` committed pages (about 60
    /// bytes a row with its key, so that ``maximumRows`` bounds the check's memory).
    struct Entry: Sendable {
        let digest: (UInt64, UInt64, UInt64, UInt64)
        let snapshot: Int32

        init?(digest octets: [UInt8], snapshot: Int) {
            guard octets.count == 32 else { return nil }
            func word(_ index: Int) -> UInt64 {
                octets[(index * 8)..<(index * 8 + 8)].reduce(0) { $0 << 8 | UInt64($1) }
            }
            digest = (word(0), word(1), word(2), word(3))
            self.snapshot = Int32(clamping: snapshot)
        }

        var octets: [UInt8] {
            [digest.0, digest.1, digest.2, digest.3].flatMap { word in
                (0..<8).map { UInt8(truncatingIfNeeded: word >> (56 - 8 * $0)) }
            }
        }
    }

    /// Most rows a check keeps: beyond that it stops reading back and finality recomputes every row, as without it.
    static let maximumRows = 262_144

    private struct State {
        /// Pages committed so far.
        var committed = 0
        /// Per table name and record ID: the number of the page that last wrote the row.
        var lastWrite: [String: [String: Int]] = [:]
        var entries: [String: [String: Entry]] = [:]
        /// Rows written so far; past ``RebuildRowCheck/maximumRows`` the check gives up.
        var rows = 0
    }

    private let path: String
    let manifest: ClientManifest
    /// The engine connection's `PRAGMA data_version` when the check began.
    let dataVersion: Int64
    private let queue = DispatchQueue(label: "seedkit.rebuild-row-check", qos: .userInitiated)
    private let state = Mutex(State())
    /// The check's read-only connection, opened on first use; touched only on `queue`.
    private let connection = Mutex<Connection?>(nil)

    /// A check of the rows a rebuild writes to the store at `path` from now on; `dataVersion` is the engine
    /// connection's `PRAGMA data_version` now.
    init(path: String, manifest: ClientManifest, dataVersion: Int64) {
        self.path = path
        self.manifest = manifest
        self.dataVersion = dataVersion
    }

    /// Before a page's transaction: `records` (table name, record ID) are written by the next page, so nothing
    /// read back before it commits counts for them (also when the transaction rolls back).
    func willWrite(_ records: [(tableName: String, recordID: String)]) {
        state.withLock { state in
            state.rows += records.count
            guard state.rows <= Self.maximumRows else {
                (state.lastWrite, state.entries) = ([:], [:])
                return
            }
            let page = state.committed + 1
            for record in records {
                state.lastWrite[record.tableName, default: [:]][record.recordID] = page
            }
        }
    }

    /// After the page's transaction committed: reads its `records` back beside the engine.
    func committed(_ records: [(tableName: String, recordID: String)]) {
        let keep = state.withLock { state -> Bool in
            state.committed += 1
            return state.rows <= Self.maximumRows
        }
        if keep { queue.async { [self] in check(records) } }
    }

    /// Whether the check gave up (more than ``maximumRows`` rows).
    var gaveUp: Bool { state.withLock { $0.rows > Self.maximumRows } }

    /// Waits until every committed page has been read back.
    func drain() {
        queue.sync {}
    }

    /// The digest of the row read back after its last write by this rebuild, if any.
    func digest(tableName: String, recordID: String) -> [UInt8]? {
        state.withLock { state in
            guard let entry = state.entries[tableName]?[recordID],
                let written = state.lastWrite[tableName]?[recordID], Int(entry.snapshot) >= written
            else { return nil }
            return entry.octets
        }
    }

    /// Reads `records` back from a snapshot that includes at least the pages committed so far; a row that is
    /// missing, not at its canonical key or holds a value the stored path does not vouch for is left out.
    private func check(_ records: [(tableName: String, recordID: String)]) {
        connection.withLock { connection in
            do {
                if connection == nil {
                    connection = try Connection(path: path, mode: .readOnly)
                }
                guard let connection else { return }
                let snapshot = state.withLock { $0.committed }
                let found = try connection.transaction(kind: .deferred) { () throws -> [String: [String: Entry]] in
                    try read(records, snapshot: snapshot, on: connection)
                }
                state.withLock { state in
                    for (table, rows) in found {
                        state.entries[table, default: [:]].merge(rows) { $1 }
                    }
                }
            } catch {
                // A page that cannot be read back here is read inside finality's transaction instead.
            }
        }
    }

    private func read(
        _ records: [(tableName: String, recordID: String)], snapshot: Int, on connection: Connection
    ) throws -> [String: [String: Entry]] {
        var digester = StoredRowDigester(manifest: manifest.manifest)
        var found: [String: [String: Entry]] = [:]
        var byTable: [String: [String]] = [:]
        for record in records { byTable[record.tableName, default: []].append(record.recordID) }
        for table in manifest.localSchema {
            guard let recordIDs = byTable[table.tableName], let key = table.primaryKeyColumn,
                let layout = digester.layout(for: table)
            else { continue }
            let statement = try connection.cachedStatement(LocalRows.recordCheckSQL(table, key: key))
            var rows: [String: Entry] = [:]
            rows.reserveCapacity(recordIDs.count)
            for recordID in recordIDs {
                guard let (_, digest) = try LocalRows.checkedRow(
                    statement, recordID: recordID, key: key, tableName: table.tableName, layout: layout,
                    digester: &digester),
                    let entry = Entry(digest: digest, snapshot: snapshot)
                else { continue }
                rows[recordID] = entry
            }
            found[table.tableName] = rows
        }
        return found
    }
}
