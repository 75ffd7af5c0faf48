import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Writes the seed database file (`spec/seed-format.md` §2, §5 steps 9–15): the baseline internal tables, the
/// synced tables, rows, versions, provenance, scopes and receipts in one transaction, then the named indexes of the
/// internal tables (built once over every row instead of row by row; docs/decisions.md, "Export: indexes built at
/// the end, pages verified ahead"), the capture triggers (after the rows, so loading enqueues nothing) and the
/// metadata. The committed file is the one §2 describes whatever the order of work.
///
/// The file keeps a rollback-journal header: it is never switched to WAL, so there is no sidecar to
/// checkpoint away and the published file opens from read-only media (ARCHITECTURE.md).
final class SeedDatabaseWriter {
    /// Page size of a seed file, bytes (docs/decisions.md, "Seed page size: 16 KiB"): the integrity checks, the
    /// row audit, the page proof and the copies read a quarter of the pages with fewer b-tree levels. Every
    /// SQLite reader opens any page size, and verify and install accept seeds of any.
    static let pageSize = 16_384

    let connection: Connection
    let manifest: ClientManifest
    private var tablesByID: [String: TableWriter]
    /// The row-version and edge inserts, prepared once (a cached statement is looked up by its SQL text per call);
    /// released before the connection closes.
    private var inserts: (version: Statement, edge: Statement)?
    /// `row_checksum` text around the digest's hex: the RFC 8785 form of a checksum object is fixed but for it.
    private let checksumText: (prefix: String, suffix: String)

    /// Opens a new, empty file at `path` and creates the schema inside the open transaction.
    init(path: String, manifest: ClientManifest) throws(SeedExportError) {
        self.manifest = manifest
        do {
            connection = try Connection(path: path)
        } catch {
            // The file is named: SQLite's own text ("unable to open database file") does not say which.
            throw .storage("cannot open \(path): \(error)")
        }
        do {
            // Fixed by the first table created, so before the schema.
            try connection.execute("PRAGMA page_size = \(Self.pageSize)")
            // Nothing deleted or overwritten may keep its bytes (issue #20, docs/decisions.md "Nothing secret left
            // in a seed"): freed cells, freeblocks and freelist/overflow pages are zeroed as they are freed.
            try connection.execute("PRAGMA secure_delete = ON")
            // The file is a temporary until verified and published: a crash leaves only the temporary.
            _ = try connection.setJournalMode(.delete)
            try connection.setSynchronous(.off)
            // 16 MiB: the allocator keeps what the cache freed when the writer closes, under the verification's own
            // memory; 64 MiB added about 75 MB to the export's peak (issue #5) and wrote no faster.
            try connection.execute("PRAGMA cache_size = -16384")
            try connection.execute("BEGIN IMMEDIATE")
            try Self.createBaseline(on: connection)
            var writers: [String: TableWriter] = [:]
            for table in manifest.localSchema {
                try connection.execute(SyncedTableDDL.createTable(table))
                writers[table.tableID] = try TableWriter(table: table, connection: connection)
            }
            tablesByID = writers
            inserts = (
                try connection.cachedStatement("""
                    INSERT INTO _synchro_row_versions (table_name, record_id, server_version, row_checksum)
                    VALUES (?, ?, ?, ?)
                    ON CONFLICT (table_name, record_id)
                    DO UPDATE SET server_version = excluded.server_version, row_checksum = excluded.row_checksum
                    """),
                try connection.cachedStatement("""
                    INSERT INTO _synchro_scope_rows (scope_id, table_name, record_id, checksum, generation)
                    VALUES (?, ?, ?, ?, 0)
                    """))
            checksumText = try Self.checksumTemplate()
        } catch let error as SeedExportError {
            throw error
        } catch {
            throw .storage("\(error)")
        }
    }

    deinit {
        releaseStatements()
        connection.close()
    }

    /// Finalizes the prepared statements this writer holds, so that closing really closes the file.
    private func releaseStatements() {
        inserts = nil
        tablesByID = [:]
    }

    /// The canonical checksum object of an all-zero digest, split around its hex: every `row_checksum` is the
    /// prefix, the digest's 64 lowercase hex characters and the suffix.
    private static func checksumTemplate() throws -> (prefix: String, suffix: String) {
        let zeros = [UInt8](repeating: 0, count: 32)
        let text = try CanonicalJSON.string(Checksum(digest: zeros).json)
        let hex = Hex.encode(zeros)
        guard let range = text.range(of: hex), text.range(of: hex, range: range.upperBound..<text.endIndex) == nil
        else { throw SeedExportError.storage("the checksum object has no single digest member") }
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    /// The internal tables, without their named indexes (``createIndexes()`` builds them after the rows).
    private static func createBaseline(on connection: Connection) throws {
        for table in SeedBaseline.tables {
            try connection.execute(table.createSQL)
        }
        for identifier in SeedBaseline.migrationIdentifiers {
            try connection.run("INSERT INTO grdb_migrations (identifier) VALUES (?)", [.text(identifier)])
        }
        try connection.setUserVersion(Int32(SeedBaseline.userVersion))
    }

    /// Writes one verified record with its version and its provenance edge in `scope`.
    func write(record: VerifiedSeedRecord, scope: String) throws(SeedExportError) {
        guard let writer = tablesByID[record.tableID], let inserts else {
            throw .storage("a verified record names a table without a writer")
        }
        do {
            try writer.insert(row: record.row)
            let hex = record.digestHex
            try inserts.version.run(
                writer.table.tableName, record.recordID, record.serverVersion,
                checksumText.prefix + hex + checksumText.suffix)
            try inserts.edge.run(scope, writer.table.tableName, record.recordID, hex)
        } catch {
            throw .storage("\(error)")
        }
    }

    /// The named indexes of the internal tables (`idx_synchro_scope_rows_record`, …), built once over the rows
    /// written: SQLite sorts the keys and fills the index in order, where row-by-row inserts placed each integer key
    /// spelled as text at its own position. Inside the transaction, so no committed file lacks them.
    private func createIndexes() throws {
        for table in SeedBaseline.tables {
            for index in table.indexes {
                try connection.execute(index.sql)
            }
        }
    }

    /// The scope row and its receipt, once every record of the scope is written and verified.
    func finishScope(_ scope: SeedExportManifest.Scope) throws(SeedExportError) {
        do {
            let checksum = try CanonicalJSON.string(scope.checksum.json)
            try connection.run(
                "INSERT INTO _synchro_scopes (scope_id, cursor, checksum, generation, local_checksum) VALUES (?, NULL, ?, 0, ?)",
                [.text(scope.id), .text(checksum), .text(checksum)])
            try connection.run("""
                INSERT INTO _synchro_seed_receipts (scope_id, receipt, schema_version, schema_hash, cardinality, checksum)
                VALUES (?, ?, ?, ?, ?, ?)
                """, [
                    .text(scope.id), .text(scope.continuation), .integer(manifest.manifest.schemaVersion),
                    .text(manifest.manifest.schemaHash), .integer(scope.cardinality), .text(checksum),
                ])
        } catch {
            throw .storage("\(error)")
        }
    }

    /// Creates the triggers, writes the metadata with `snapshot_complete = 0` and commits.
    func commit(export: SeedExportManifest) throws(SeedExportError) {
        do {
            try createIndexes()
            for table in manifest.localSchema {
                for trigger in LegacyCaptureTriggers.statements(for: table) {
                    try connection.execute(trigger.sql)
                }
            }
            let values: [(MetaKey, String)] = [
                (.syncLock, "0"), (.checkpoint, "0"),
                (.schemaVersion, String(manifest.manifest.schemaVersion)),
                (.schemaHash, manifest.manifest.schemaHash),
                (.localSchema, try SeedLocalSchema.text(manifest.localSchema)),
                (.schemaManifest, try CanonicalJSON.string(manifest.json)),
                (.scopeSetVersion, "0"), (.snapshotComplete, "0"),
                (.exportID, export.exportID), (.exportManifestHash, export.exportManifestHash),
                (.streamGeneration, export.streamGeneration),
                (.snapshotBoundary, try CanonicalJSON.string(export.snapshotBoundary.json)),
                (.pageLimit, String(export.pageLimit)),
            ]
            for (key, value) in values {
                try connection.run("INSERT INTO _synchro_meta (key, value) VALUES (?, ?)", [.text(key.rawValue), .text(value)])
            }
            try connection.execute("COMMIT")
        } catch {
            throw .storage("\(error)")
        }
    }

    /// Flips `snapshot_complete` to `1` in its own transaction (exactly one row must change) and makes the
    /// file durable.
    func finalize() throws(SeedExportError) {
        do {
            try connection.setSynchronous(.full)
            try connection.run("UPDATE _synchro_meta SET value = '1' WHERE key = 'snapshot_complete' AND value = '0'")
            guard connection.changes == 1 else { throw SeedExportError.storage("snapshot_complete did not change") }
        } catch let error as SeedExportError {
            throw error
        } catch {
            throw .storage("\(error)")
        }
        releaseStatements()
        connection.close()
    }

    /// Rolls back and closes after a failure.
    func abandon() {
        if connection.isOpen && connection.isInTransaction {
            _ = try? connection.execute("ROLLBACK")
        }
        releaseStatements()
        connection.close()
    }
}

/// The prepared upsert of one synced table.
private struct TableWriter {
    let table: LocalSchemaTable
    let statement: Statement

    init(table: LocalSchemaTable, connection: Connection) throws {
        self.table = table
        let names = table.columns.map { SQLiteIdentifier.quote($0.name) }
        let placeholders = Array(repeating: "?", count: names.count).joined(separator: ", ")
        let key = SQLiteIdentifier.quote(table.primaryKeyColumn?.name ?? "")
        let updates = table.columns.filter { !$0.isPrimaryKey }.map {
            "\(SQLiteIdentifier.quote($0.name)) = excluded.\(SQLiteIdentifier.quote($0.name))"
        }
        let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates.joined(separator: ", "))"
        statement = try connection.cachedStatement("INSERT INTO \(SQLiteIdentifier.quote(table.tableName)) (\(names.joined(separator: ", "))) "
            + "VALUES (\(placeholders)) ON CONFLICT (\(key)) \(conflict)")
    }

    /// Binds the row's values in column order and runs the upsert.
    func insert(row: [SQLiteValue]) throws {
        try statement.run(row)
    }
}
