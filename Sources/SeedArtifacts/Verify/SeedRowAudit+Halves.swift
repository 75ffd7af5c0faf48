import SQLiteKit
import SynchroStore
import SynchroProtocol

extension SeedRowAudit {
    /// ``readRows(_:versions:digesters:into:)``, with the rows above the middle rowid of a large table read on a
    /// second connection and thread (``AuditHalf``) while this one reads the rows up to it. The upper half's rows
    /// and findings are then appended in scan order — positions, ordinals and the per-check listing limit exactly
    /// as a single scan would have recorded them. When the second connection cannot be opened or is not
    /// baseline-shaped, the upper half is read here after the lower one.
    func readRowsInHalves(
        _ rows: AuditedRows, versions: VersionCursor?, digesters: inout Digesters, into collector: FindingCollector
    ) throws {
        guard let versions, let reopen, let middle = try middleRowid(rows.table) else {
            try readRows(rows, versions: versions, digesters: &digesters, into: collector)
            return
        }
        let upper = AuditHalf(audit: self, reopen: reopen, table: rows.table, key: rows.key, after: middle,
                              limit: collector.limit)
        let lowerFailure: (any Error)?
        do {
            try readRowsAlongVersions(rows, versions: versions, range: .through(middle), digesters: &digesters,
                                      into: collector)
            lowerFailure = nil
        } catch {
            lowerFailure = error
        }
        let half = upper.wait()
        if let lowerFailure { throw lowerFailure }
        guard let half else {
            try readRowsAlongVersions(rows, versions: versions, range: .after(middle), digesters: &digesters,
                                      into: collector)
            return
        }
        let offset = Int64(rows.count)
        rows.append(contentsOf: half.rows)
        collector.append(half.collector, shiftingRowsOf: rows.table.tableName, by: offset)
        if let failure = half.failure { throw failure }
    }

    /// The rowid splitting the table's rows in two halves, when the span of its rowids is within
    /// ``splitMinimumRows``…``splitMaximumRows``; nil otherwise, and nil when a column is named like the rowid
    /// (`t.rowid` would then be that column, and a NULL in it would fall in neither half).
    private func middleRowid(_ table: LocalSchemaTable) throws -> Int64? {
        guard !table.columns.contains(where: { ["rowid", "_rowid_", "oid"].contains($0.name.lowercased()) }) else {
            return nil
        }
        let name = SQLiteIdentifier.quote(table.tableName)
        let bounds = try connection.query(
            "SELECT (SELECT min(rowid) FROM \(name)), (SELECT max(rowid) FROM \(name))"
        ) { row -> (Int64, Int64)? in
            row.isNull(at: 0) || row.isNull(at: 1) ? nil : (row.int64(at: 0), row.int64(at: 1))
        }
        guard let first = bounds.first, let (low, high) = first else { return nil }
        let (span, overflow) = high.subtractingReportingOverflow(low)
        guard !overflow, span < Int64(splitMaximumRows), span + 1 >= Int64(splitMinimumRows) else { return nil }
        return low + span / 2
    }
}

/// The upper half of a table's rows, read by ``SeedRowAudit`` on a connection and thread of its own into rows and
/// findings of its own (positions and ordinals counted from the half's first row).
final class AuditHalf {
    struct Outcome {
        let rows: AuditedRows
        let collector: FindingCollector
        /// What stopped the read (the rows and findings before it are kept).
        let failure: (any Error)?
    }

    /// Nil when the thread could not open a baseline-shaped connection (nothing was read).
    private let outcome: Eventual<Outcome?>

    init(
        audit: SeedRowAudit, reopen: @escaping @Sendable () throws -> Connection, table: LocalSchemaTable,
        key: LocalSchemaColumn, after middle: Int64, limit: Int
    ) {
        let manifest = audit.manifest
        let knownScopes = audit.knownScopes
        let checks = audit.checks
        outcome = Eventual(onThread: {
            guard let connection = try? reopen() else { return nil }
            defer { connection.close() }
            // The half is one forward scan: a small page cache is enough.
            guard (try? connection.execute("PRAGMA cache_size = -2048")) != nil,
                  let versions = try? VersionCursor.baselineShaped(on: connection)
            else { return nil }
            defer { versions.finish() }
            let half = SeedRowAudit(connection: connection, manifest: manifest, knownScopes: knownScopes,
                                    checks: checks)
            let rows = AuditedRows(table: table, key: key)
            let collector = FindingCollector(limit: limit)
            var digesters = SeedRowAudit.Digesters(
                stored: StoredRowDigester(manifest: manifest.manifest), wire: RowDigester(manifest: manifest.manifest))
            var failure: (any Error)?
            do {
                try half.readRowsAlongVersions(rows, versions: versions, range: .after(middle),
                                               digesters: &digesters, into: collector)
            } catch {
                failure = error
            }
            return Outcome(rows: rows, collector: collector, failure: failure)
        })
    }

    /// Waits for the thread; nil when it could not open a baseline-shaped connection (nothing was read).
    func wait() -> Outcome? {
        outcome.wait()
    }
}
