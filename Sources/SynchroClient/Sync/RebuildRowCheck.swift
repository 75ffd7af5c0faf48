import Dispatch
import SynchroStore
import SQLiteKit
import Synchronization
import SynchroProtocol

/// The rows of a rebuild re-read and re-digested beside the engine, page by page, for the scope digest that
/// rebuild finality recomputes (`spec/client-store.md` §9, "Scope digest recomputation"; docs/decisions.md,
/// "Rebuild finality from rows checked beside the engine" and "A rebuild row check of constant memory").
///
/// After each intermediate page commits, the rows it wrote are read back on a read-only connection of their own,
/// from a snapshot that includes that commit, converted from their stored values, digested with their stored server
/// version (``LocalRows/recordCheckSQL(_:key:)``, ``StoredRowDigester``) and compared, in the same snapshot, with
/// the row's stored edge digest — on a thread of their own while the engine applies the next page. The check keeps
/// counts, never a per-row record, so its memory does not grow with the scope. Finality then takes the stored edge
/// digest of every row the check vouches for, and re-reads only the final page's rows and protected rows' edges,
/// when all of these hold:
///
/// - every row of every committed page was read back and matched its edge (a row that is protected, missing, not
///   at its canonical key or holds a value the stored path does not vouch for fails the whole check);
/// - no commit of another connection since the check began (`PRAGMA data_version` of the engine connection,
///   which changes with every commit of any other connection: the application's, another process's);
/// - no row written twice by this rebuild, nor one written before the check began: finality's edge count (edges of
///   the attempt's generation, after the others are dropped) equals the rows the check saw written, final page
///   included — a row written twice, or one left by an earlier run of the attempt, makes the count differ;
/// - the same manifest.
///
/// Otherwise finality recomputes every row, as without the check.
final class RebuildRowCheck: Sendable {
    /// What finality may rely on: the rows of committed pages (each read back and matched), and the rows of the
    /// page being applied (the final page, read inside finality's transaction), per table name.
    struct Vouched: Sendable {
        let committedRows: Int
        let pendingRows: [String: Set<String>]
        let pendingCount: Int
    }

    private struct State {
        /// Rows of committed pages.
        var committedRows = 0
        /// Rows read back that matched their edge digest.
        var matchedRows = 0
        /// A row did not match, or a page could not be read back.
        var failed = false
        /// The rows of the page being applied now (at most one page).
        var pending: [(tableName: String, recordID: String)] = []
    }

    private let path: String
    let scope: String
    let manifest: ClientManifest
    /// The engine connection's `PRAGMA data_version` when the check began.
    let dataVersion: Int64
    private let queue = DispatchQueue(label: "seedkit.rebuild-row-check", qos: .userInitiated)
    private let state = Mutex(State())
    /// The check's read-only connection, opened on first use; touched only on `queue`.
    private let connection = Mutex<Connection?>(nil)

    /// A check of the rows a rebuild of `scope` writes to the store at `path` from now on; `dataVersion` is the
    /// engine connection's `PRAGMA data_version` now.
    init(path: String, scope: String, manifest: ClientManifest, dataVersion: Int64) {
        self.path = path
        self.scope = scope
        self.manifest = manifest
        self.dataVersion = dataVersion
    }

    /// Before a page's transaction: `records` (table name, record ID) are the rows the next page writes. A page
    /// rolled back and tried again replaces them.
    func willWrite(_ records: [(tableName: String, recordID: String)]) {
        state.withLock { $0.pending = records }
    }

    /// After the page's transaction committed: reads its rows back beside the engine.
    func committed() {
        let records = state.withLock { state in
            defer { state.pending = [] }
            state.committedRows += state.pending.count
            return state.pending
        }
        queue.async { [self] in check(records) }
    }

    /// Waits until every committed page has been read back.
    func drain() {
        queue.sync {}
    }

    /// What finality may rely on once every committed page was read back and each of its rows matched its edge;
    /// nil when a row did not (finality then recomputes every row).
    func vouched() -> Vouched? {
        drain()
        return state.withLock { state -> Vouched? in
            guard !state.failed, state.matchedRows == state.committedRows else { return nil }
            var pending: [String: Set<String>] = [:]
            for record in state.pending { pending[record.tableName, default: []].insert(record.recordID) }
            return Vouched(committedRows: state.committedRows, pendingRows: pending, pendingCount: state.pending.count)
        }
    }

    /// Reads `records` back from a snapshot that includes at least their page's commit and compares each row's
    /// digest with its stored edge digest; counts the matches, or marks the check failed.
    private func check(_ records: [(tableName: String, recordID: String)]) {
        connection.withLock { connection in
            do {
                if connection == nil {
                    connection = try Connection(path: path, mode: .readOnly)
                }
                guard let connection else {
                    state.withLock { $0.failed = true }
                    return
                }
                let matched = try connection.transaction(kind: .deferred) { () throws -> Int in
                    try read(records, on: connection)
                }
                state.withLock { state in
                    state.matchedRows += matched
                    if matched != records.count { state.failed = true }
                }
            } catch {
                // A page that cannot be read back leaves finality to read every row.
                state.withLock { $0.failed = true }
            }
        }
    }

    /// How many of `records` hold a row whose digest equals its stored edge digest.
    private func read(_ records: [(tableName: String, recordID: String)], on connection: Connection) throws -> Int {
        var digester = StoredRowDigester(manifest: manifest.manifest)
        var byTable: [String: [String]] = [:]
        for record in records { byTable[record.tableName, default: []].append(record.recordID) }
        let edge = try connection.cachedStatement(
            "SELECT checksum FROM _synchro_scope_rows WHERE scope_id = ? AND table_name = ? AND record_id = ?")
        var matched = 0
        for table in manifest.localSchema {
            guard let recordIDs = byTable[table.tableName], let key = table.primaryKeyColumn,
                let layout = digester.layout(for: table)
            else { continue }
            let statement = try connection.cachedStatement(LocalRows.recordCheckSQL(table, key: key))
            for recordID in recordIDs {
                guard let (_, digest) = try LocalRows.checkedRow(
                    statement, recordID: recordID, key: key, tableName: table.tableName, layout: layout,
                    digester: &digester)
                else { return matched }
                try edge.bind([.text(scope), .text(table.tableName), .text(recordID)])
                defer { edge.reset() }
                guard try edge.step(), edge.storageClass(at: 0) == .text,
                    Hex.decode(try edge.text(at: 0)) == digest
                else { return matched }
                matched += 1
            }
        }
        return matched
    }
}
