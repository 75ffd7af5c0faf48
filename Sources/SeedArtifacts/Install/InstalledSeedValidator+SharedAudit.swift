import SQLiteKit
import SynchroStore
import SynchroProtocol

// MARK: - Items 12–15 from the publication checks' audit

extension InstalledSeedValidator {
    /// The publication checks' audit of the seed, when the copy provably holds the same synced rows, row versions
    /// and edges (so re-digesting the copy would recompute exactly those digests); its findings are reported
    /// again under the installer checks. Nil when the checks do not run alongside, when their audit did not run,
    /// or when the migration changed anything: the copy is then audited on its own.
    func sharedAudit(
        _ manifest: ClientManifest, _ pages: SeedPageIdentity?, _ connection: Connection
    ) -> RowAuditResult? {
        guard let seed, (try? sameRows(as: seed.path, manifest, pages, connection)) == true else { return nil }
        guard let audit = seed.shared.wait() else { return nil }
        collector.evaluated(RowAuditChecks.installer.all)
        let publication = RowAuditChecks.publication.all
        let installer = RowAuditChecks.installer.all
        for (index, check) in publication.enumerated() {
            guard let count = audit.issues[check] else { continue }
            collector.add(installer[index], "\(count) \(check.name) findings hold for the migrated copy too, which "
                              + "holds exactly the seed's rows, row versions and provenance edges")
        }
        return audit
    }

    /// The page comparison of the copy with the seed at `seedPath`; nil when the files cannot be compared by pages.
    func pageIdentity(seed seedPath: String, _ connection: Connection) -> SeedPageIdentity? {
        switch copy {
        case .file(let path):
            return SeedPageIdentity(copy: path, seed: seedPath)
        case .memory, .overlay:
            // Nothing writes to the copy while the validation reads it; its pages are read through its own VFS (an
            // overlay file read by path would show holes where the seed's pages are).
            return SeedPageIdentity(copyOpenedBy: connection, seed: seedPath)
        }
    }

    /// Runs `body` with the seed at `seedPath` attached to `connection` as `seed` (read-only, `immutable=1`).
    func withSeedAttached<Result>(
        _ seedPath: String, _ connection: Connection, _ body: () throws -> Result
    ) throws -> Result {
        var seedURI = SeedFileProbe.immutableURI(seedPath)
        if copy.hasOwnVFS {
            // An attached database inherits the connection's VFS; the seed is a file.
            guard let vfs = Connection.defaultVFSName else { throw NoDefaultVFS() }
            seedURI += "&vfs=" + vfs
        }
        try connection.run("ATTACH DATABASE ? AS seed", [.text(seedURI)])
        defer { try? connection.execute("DETACH DATABASE seed") }
        try connection.execute("PRAGMA seed.mmap_size = 0; PRAGMA seed.cache_size = -16384")
        return try body()
    }

    /// SQLite names no default VFS, which the attached seed would need.
    private struct NoDefaultVFS: Error {}

    /// Whether every synced table, `_synchro_row_versions`, `_synchro_scope_rows` and `_synchro_scopes` of the copy
    /// equal the seed's: the same rowids holding the same values of the same storage classes. A table the migration
    /// did not touch is proven equal by its pages (``SeedPageIdentity``); any other is read side by side with the
    /// attached seed's, both in rowid order. The migration leaves these rows in place (v13 keeps a seed's edge
    /// table and copies `_synchro_scopes`, or an edge table of another shape, in rowid order), so equal files compare
    /// equal; any other difference only costs the copy its own audit.
    private func sameRows(
        as seedPath: String, _ manifest: ClientManifest, _ pages: SeedPageIdentity?, _ connection: Connection
    ) throws -> Bool {
        var tables = manifest.localSchema.map { table in
            (table.tableName, table.columns.map { ($0.name, Self.numericTypes.contains($0.logicalType)) })
        }
        tables.append(("_synchro_row_versions", [
            ("table_name", false), ("record_id", false), ("server_version", true), ("row_checksum", true),
        ]))
        tables.append(("_synchro_scope_rows", [
            ("scope_id", false), ("table_name", false), ("record_id", false), ("checksum", true), ("generation", true),
        ]))
        tables.append(("_synchro_scopes", [
            ("scope_id", false), ("cursor", true), ("checksum", true), ("generation", true), ("local_checksum", true),
        ]))
        return try withSeedAttached(seedPath, connection) { try sameRows(tables, pages: pages, connection) }
    }

    private func sameRows(
        _ tables: [(String, [(String, Bool)])], pages: SeedPageIdentity?, _ connection: Connection
    ) throws -> Bool {
        for (table, columns) in tables {
            if let pages,
                pages.proves(table: table, on: connection) || pages.provesByCells(table: table, on: connection)
            {
                continue
            }
            guard try sameRows(table, columns.map { (name: $0.0, typed: $0.1) }, connection) else { return false }
        }
        return true
    }

    /// Types whose stored integers and reals differ in meaning although `IS` finds them equal.
    private static let numericTypes: Set<PortableType> = [.int, .int64, .boolean, .float]

    /// Whether `main.table` and `seed.table` hold the same rowids with the same values of the same storage classes:
    /// both read in rowid order side by side, every value compared octet for octet (stricter than `IS` for every
    /// column, so also for the `typed` ones, where `IS` would hold between the integer 1 and the real 1.0).
    private func sameRows(
        _ table: String, _ columns: [(name: String, typed: Bool)], _ connection: Connection
    ) throws -> Bool {
        let name = SQLiteIdentifier.quote(table)
        let list = (["rowid"] + columns.map { SQLiteIdentifier.quote($0.name) }).joined(separator: ", ")
        let copy = try connection.prepare("SELECT \(list) FROM main.\(name) ORDER BY rowid")
        defer { copy.reset() }
        let seed = try connection.prepare("SELECT \(list) FROM seed.\(name) ORDER BY rowid")
        defer { seed.reset() }
        while true {
            let more = try copy.step()
            guard try seed.step() == more else { return false }
            guard more else { return true }
            for column in 0...columns.count where !Self.sameValue(copy, seed, at: column) {
                return false
            }
        }
    }

    /// Whether column `column` of both current rows holds the same storage class and the same value.
    private static func sameValue(_ a: Statement, _ b: Statement, at column: Int) -> Bool {
        let kind = a.storageClass(at: column)
        guard kind == b.storageClass(at: column) else { return false }
        switch kind {
        case .null: return true
        case .integer: return a.int64(at: column) == b.int64(at: column)
        case .real: return a.double(at: column).bitPattern == b.double(at: column).bitPattern
        case .text: return a.withTextBytes(at: column) { x in b.withTextBytes(at: column) { OctetRange.equal(x, $0) } }
        case .blob: return a.withBlobBytes(at: column) { x in b.withBlobBytes(at: column) { OctetRange.equal(x, $0) } }
        }
    }
}
