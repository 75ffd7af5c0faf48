import Foundation
import SQLiteKit
import Synchronization
import SynchroProtocol

/// The reference delta server's embedded store (docs/delta-server.md): one SQLite file holding, per entity type,
/// its rows (id, JSON data, the revision of their last write, a soft-delete flag), the last revision given out and
/// the vacuum horizon, plus each push's result by `client_id` (so a retried push gets the same answer).
///
/// Seed 003 §4: the revision is strictly increasing across all writes of an entity type and never reused; a delete is
/// a soft delete under a new revision (§5); `vacuum` removes the tombstones and moves the horizon, behind which a
/// client is told to `reset` (§6). One connection, serialised by a mutex: a reference, not a production server.
public final class DeltaStore: Sendable {
    private let connection: Mutex<Connection>

    public init(path: String) throws(SQLiteError) {
        let connection = try Connection(path: path)
        try connection.execute("""
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS delta_entities (entity TEXT NOT NULL PRIMARY KEY,
                rev INTEGER NOT NULL, horizon INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS delta_rows (entity TEXT NOT NULL, id TEXT NOT NULL, rev INTEGER NOT NULL,
                deleted INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (entity, id));
            CREATE UNIQUE INDEX IF NOT EXISTS delta_rows_by_rev ON delta_rows (entity, rev);
            CREATE TABLE IF NOT EXISTS delta_push_results (entity TEXT NOT NULL, client_id TEXT NOT NULL,
                result TEXT NOT NULL, PRIMARY KEY (entity, client_id));
            """)
        self.connection = Mutex(connection)
    }

    /// One stored row as a page shows it.
    public struct Row: Sendable {
        public let id: String
        public let rev: Int64
        public let deleted: Bool
        public let data: JSONObject
    }

    /// Upserts (`data` non-nil) or soft-deletes rows under new revisions, in one transaction; returns the revisions.
    @discardableResult
    public func write(entity: String, _ writes: [(id: String, data: JSONObject?)]) throws -> [Int64] {
        try connection.withLock { connection in
            try connection.execute("BEGIN IMMEDIATE")
            do {
                var rev = try connection.scalar("SELECT rev FROM delta_entities WHERE entity = ?", [.text(entity)])?
                    .integerValue ?? 0
                var revs: [Int64] = []
                revs.reserveCapacity(writes.count)
                let upsert = "INSERT INTO delta_rows (entity, id, rev, deleted, data) VALUES (?, ?, ?, 0, ?) "
                    + "ON CONFLICT (entity, id) DO UPDATE SET rev = excluded.rev, deleted = 0, data = excluded.data"
                let delete = "UPDATE delta_rows SET rev = ?, deleted = 1 WHERE entity = ? AND id = ? AND deleted = 0"
                for write in writes {
                    if let data = write.data {
                        rev += 1
                        try connection.cachedStatement(upsert).run(
                            [.text(entity), .text(write.id), .integer(rev), .text(try CanonicalJSON.string(.object(data)))])
                        revs.append(rev)
                    } else {
                        try connection.cachedStatement(delete).run([.integer(rev + 1), .text(entity), .text(write.id)])
                        if connection.changes > 0 { rev += 1 }
                        revs.append(rev)
                    }
                }
                try connection.run(
                    "INSERT INTO delta_entities (entity, rev, horizon) VALUES (?, ?, 0) "
                        + "ON CONFLICT (entity) DO UPDATE SET rev = excluded.rev", [.text(entity), .integer(rev)])
                try connection.execute("COMMIT")
                return revs
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Rows of `entity` with `rev > since`, ascending, at most `limit`; and the vacuum horizon.
    public func rows(entity: String, since: Int64, limit: Int) throws -> (rows: [Row], horizon: Int64) {
        try connection.withLock { connection in
            let horizon = try connection.scalar(
                "SELECT horizon FROM delta_entities WHERE entity = ?", [.text(entity)])?.integerValue ?? 0
            let statement = try connection.cachedStatement(
                "SELECT id, rev, deleted, data FROM delta_rows WHERE entity = ? AND rev > ? ORDER BY rev LIMIT ?")
            var rows: [Row] = []
            try statement.bind([.text(entity), .integer(since), .integer(Int64(limit))])
            defer { statement.reset() }
            while try statement.step() {
                let data = try StrictJSONParser().parse(Array(try statement.text(at: 3).utf8)).objectValue ?? JSONObject([])
                rows.append(Row(
                    id: try statement.text(at: 0), rev: statement.int64(at: 1), deleted: statement.int64(at: 2) != 0,
                    data: data))
            }
            return (rows, horizon)
        }
    }

    /// Rows as a pull page splices them: each row's id and data as their stored octets, back to back in one buffer
    /// (no `String` per value), the data being the stored RFC 8785 text, spliced in unparsed (the store only ever
    /// holds canonical JSON objects).
    public struct StoredRows: Sendable {
        public struct Row: Sendable {
            public let rev: Int64
            public let deleted: Bool
            /// Where the id and the data are in ``octets``.
            public let id: Range<Int>
            public let data: Range<Int>
        }

        public var octets: [UInt8] = []
        public var rows: [Row] = []
    }

    /// As ``rows(entity:since:limit:)``, as ``StoredRows``; and the vacuum horizon.
    public func storedRows(entity: String, since: Int64, limit: Int) throws -> (rows: StoredRows, horizon: Int64) {
        try connection.withLock { connection in
            let horizon = try connection.scalar(
                "SELECT horizon FROM delta_entities WHERE entity = ?", [.text(entity)])?.integerValue ?? 0
            let statement = try connection.cachedStatement(
                "SELECT id, rev, deleted, data FROM delta_rows WHERE entity = ? AND rev > ? ORDER BY rev LIMIT ?")
            var stored = StoredRows()
            stored.rows.reserveCapacity(limit)
            try statement.bind([.text(entity), .integer(since), .integer(Int64(limit))])
            defer { statement.reset() }
            while try statement.step() {
                let idStart = stored.octets.count
                statement.withTextBytes(at: 0) { stored.octets.append(contentsOf: $0) }
                let dataStart = stored.octets.count
                statement.withTextBytes(at: 3) { stored.octets.append(contentsOf: $0) }
                stored.rows.append(.init(
                    rev: statement.int64(at: 1), deleted: statement.int64(at: 2) != 0, id: idStart..<dataStart,
                    data: dataStart..<stored.octets.count))
            }
            return (stored, horizon)
        }
    }

    /// The current row of `id`, if any (deleted or not).
    public func row(entity: String, id: String) throws -> Row? {
        try connection.withLock { connection in
            guard let values = try connection.rows(
                "SELECT id, rev, deleted, data FROM delta_rows WHERE entity = ? AND id = ?", [.text(entity), .text(id)]
            ).first else { return nil }
            let data = try StrictJSONParser().parse(Array((values[3].textValue ?? "{}").utf8)).objectValue
            return Row(id: id, rev: values[1].integerValue ?? 0, deleted: values[2].integerValue == 1,
                       data: data ?? JSONObject([]))
        }
    }

    /// The stored result of a push mutation by its `client_id`, or records `result` as it.
    public func pushResult(entity: String, clientID: String, record result: String? = nil) throws -> String? {
        try connection.withLock { connection in
            if let result {
                try connection.run(
                    "INSERT OR IGNORE INTO delta_push_results VALUES (?, ?, ?)",
                    [.text(entity), .text(clientID), .text(result)])
                return result
            }
            return try connection.scalar(
                "SELECT result FROM delta_push_results WHERE entity = ? AND client_id = ?",
                [.text(entity), .text(clientID)])?.textValue
        }
    }

    /// Removes `entity`'s tombstones and moves its horizon to its last revision H: a client whose checkpoint is
    /// behind H is told to reset. The surviving rows are written again above H (their revisions shifted by H, order
    /// kept, no revision reused), so a client pulling from zero never passes a cursor below the horizon — without
    /// that, the server could not tell a fresh pull at cursor 7 from a client that stopped at 7 before the vacuum.
    public func vacuum(entity: String) throws {
        try connection.withLock { connection in
            try connection.execute("BEGIN IMMEDIATE")
            do {
                try connection.run("DELETE FROM delta_rows WHERE entity = ? AND deleted = 1", [.text(entity)])
                try connection.run("UPDATE delta_rows SET rev = rev + (SELECT rev FROM delta_entities WHERE entity = ?) "
                    + "WHERE entity = ?", [.text(entity), .text(entity)])
                try connection.run(
                    "UPDATE delta_entities SET horizon = rev, rev = 2 * rev WHERE entity = ?", [.text(entity)])
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    public func close() {
        connection.withLock { $0.close() }
    }
}
