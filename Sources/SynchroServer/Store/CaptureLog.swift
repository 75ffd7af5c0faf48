import SQLiteKit
import SynchroProtocol

/// The one write path of source rows: every accepted write (push or operator) changes `source_rows`
/// and appends the same state to `capture_log` with a new server version, in the caller's
/// transaction. Nothing here is pull-visible; the materializer publishes the log in LSN order
/// (`spec/integrity.md` §6.1).
enum CaptureLog {
    /// What one appended write produced.
    struct Entry {
        /// The capture LSN: a client's pending fence is this value until the materializer passes it.
        let lsn: Int64
        let identity: RowIdentity
        /// The new opaque version of the row (also the version of a fence-only delete).
        let serverVersion: String
        /// The row digest under the manifest used for validation; nil for a fence.
        let rowDigest: [UInt8]?
    }

    /// Why a write cannot be captured. Descriptions name the rule, never a value.
    enum Rejection: Error, CustomStringConvertible {
        case unknownTable
        /// The key or row breaks the manifest (`rule` is the row-digest rule, e.g. `missing_field`).
        case invalidRow(rule: String)
        /// A live or tombstone state without a row, or a fence with one.
        case rowPresenceMismatch

        var description: String {
            switch self {
            case .unknownTable: "unknown table"
            case .invalidRow(let rule): "row does not match the manifest: \(rule)"
            case .rowPresenceMismatch: "row presence does not match the row state"
            }
        }
    }

    /// Validates the write against `manifest` and records it in `source_rows` and `capture_log`.
    ///
    /// - Parameters:
    ///   - primaryKey: the key value (the value of the wire `pk` object's one member).
    ///   - row: the complete row for `.live` and `.tombstone`; nil for `.fence`.
    /// Must run inside a write transaction together with whatever else the write changes (a
    /// client's fence and epoch), so the write and its capture commit or fail as one.
    static func append(
        tableID: String, primaryKey: JSONValue, row: JSONValue?, state: RowState, manifest: SchemaManifest,
        store: ServerStore
    ) throws -> Entry {
        guard let table = manifest.table(id: tableID) else { throw Rejection.unknownTable }
        guard (row == nil) == (state == .fence) else { throw Rejection.rowPresenceMismatch }
        let version = try store.nextServerVersion()
        let identity: RowIdentity
        var digest: [UInt8]?
        do throws(RowDigestError) {
            if let row {
                var digester = RowDigester(manifest: manifest)
                let result = try digester.digest(
                    tableID: tableID, primaryKey: primaryKey, row: row, serverVersion: version)
                identity = result.identity
                digest = result.digest
            } else {
                identity = try RowIdentity(table: table, primaryKey: primaryKey)
            }
        } catch {
            throw Rejection.invalidRow(rule: error.rule)
        }
        let pkBytes = try CanonicalJSON.encode(primaryKey)
        let rowValue: SQLiteValue = try row.map { .blob(try CanonicalJSON.encode($0)) } ?? .null
        let arguments: [SQLiteValue] = [
            .blob(identity.bytes), .text(tableID), .blob(pkBytes), rowValue, .text(version), .integer(state.rawValue),
        ]
        try store.db.cachedStatement("""
            INSERT OR REPLACE INTO source_rows(identity, table_id, pk, row, server_version, state)
            VALUES (?, ?, ?, ?, ?, ?)
            """).run(arguments)
        try store.db.cachedStatement("""
            INSERT INTO capture_log(identity, table_id, pk, row, server_version, state) VALUES (?, ?, ?, ?, ?, ?)
            """).run(arguments)
        return Entry(
            lsn: try store.db.lastInsertRowID(), identity: identity, serverVersion: version, rowDigest: digest)
    }

    /// The current source state of one row (what push compares `base_version` with), or nil when
    /// the row never existed.
    static func sourceRow(identity: RowIdentity, store: ServerStore) throws -> SourceRow? {
        let rows = try store.db.cachedStatement(
            "SELECT row, server_version, state FROM source_rows WHERE identity = ?"
        ).rows([.blob(identity.bytes)])
        guard let first = rows.first, let version = first[1].textValue,
              let state = first[2].integerValue.flatMap(RowState.init(rawValue:))
        else { return nil }
        let row = try first[0].blobValue.map { try StrictJSONParser().parse($0) }
        return SourceRow(row: row, serverVersion: version, state: state)
    }
}

/// One row of `source_rows`: the latest accepted state of a row, materialized or not.
struct SourceRow {
    /// The complete row (live or tombstone); nil for a fence.
    let row: JSONValue?
    let serverVersion: String
    let state: RowState
}
