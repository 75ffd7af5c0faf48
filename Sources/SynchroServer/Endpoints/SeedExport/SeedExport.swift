import SQLiteKit
import SynchroProtocol

/// One portable seed export (`spec/integrity.md` §7.2): the snapshot every page and receipt of the
/// export is bound to. Stored once, in the transaction that staged its rows, and never changed:
/// later writes, materialization or schema changes cannot alter what an export serves (rows staged by
/// reference keep their bodies through the projection's copy-on-write, ``SeedExportStaging``).
struct SeedExport {
    /// The row key of `seed_exports` (staged rows refer to it).
    let key: Int64
    /// Lowercase UUID naming the export on the wire.
    let exportID: String
    /// base64url of 32 random octets: binds page tokens to this one export transaction.
    let transactionNonce: String
    /// `export_manifest_hash`, 64 lowercase hex.
    let manifestHash: String
    let schemaVersion: Int64
    let schemaHash: String
    let registryGeneration: Int64
    let generations: StreamGenerations
    /// The materialized stream position the rows were read at (0: generation start).
    let boundary: Int64
    let pageLimit: Int64
    /// The instant of the manifest call: every receipt's `issued_at`.
    let created: Int64
    /// The exported portable scopes, ascending by UTF-8 octets of the ID.
    let scopes: [SeedExportScope]

    /// The boundary object of the manifest, page tokens and receipts.
    var snapshotBoundary: SeedSnapshotBoundary { SeedSnapshotBoundary(streamPosition: boundary) }

    /// The scope entry named exactly `id`.
    func scope(_ id: String) -> SeedExportScope? {
        scopes.first { $0.id.exactlyEquals(id) }
    }

    // MARK: - Storage

    /// Stores the header; returns the export with its row key. Rows are staged (``SeedExportStaging``) and the
    /// scope entries stored (``insertScope(_:store:)``) in the same transaction.
    static func insert(_ export: SeedExport, store: ServerStore) throws -> SeedExport {
        let db = store.db
        try db.cachedStatement("""
            INSERT INTO seed_exports(export_id, transaction_nonce, export_manifest_hash, schema_version, schema_hash,
                registry_generation, stream_generation, membership_generation, retention_generation, boundary,
                page_limit, created_us)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).run([
                .text(export.exportID), .text(export.transactionNonce), .text(export.manifestHash),
                .integer(export.schemaVersion), .text(export.schemaHash), .integer(export.registryGeneration),
                .integer(export.generations.stream), .integer(export.generations.membership),
                .integer(export.generations.retention), .integer(export.boundary), .integer(export.pageLimit),
                .integer(export.created),
            ])
        return export.withKey(try db.lastInsertRowID())
    }

    /// Stores one scope entry of this (inserted) export, with the run of its staged rows.
    func insertScope(_ scope: SeedExportScope, store: ServerStore) throws {
        try store.db.cachedStatement("""
            INSERT INTO seed_export_scopes(export_key, scope_id, row_count, scope_digest, first_staged)
            VALUES (?, ?, ?, ?, ?)
            """).run([
                .integer(key), .text(scope.id), .integer(scope.rowCount), .blob(scope.digest),
                scope.firstStaged.map { .integer($0) } ?? .null,
            ])
    }

    /// The session number of this export's rows in `rebuild_rows` and `rebuild_references`: the negative row key
    /// (rebuild sessions are numbered from 1, so the two never meet).
    var stagingSession: Int64 { -key }

    /// This export with the scope entries as staged.
    func withStagedScopes(_ scopes: [SeedExportScope]) -> SeedExport { withScopes(scopes) }

    /// The stored export named `exportID`, or nil when this server never made it.
    static func load(exportID: String, store: ServerStore) throws -> SeedExport? {
        let headers = try store.db.cachedStatement("""
            SELECT export_key, export_id, transaction_nonce, export_manifest_hash, schema_version, schema_hash,
                   registry_generation, stream_generation, membership_generation, retention_generation, boundary,
                   page_limit, created_us
            FROM seed_exports WHERE export_id = ?
            """).query([.text(exportID)]) { s in
            SeedExport(
                key: s.int64(at: 0), exportID: try s.text(at: 1), transactionNonce: try s.text(at: 2),
                manifestHash: try s.text(at: 3), schemaVersion: s.int64(at: 4), schemaHash: try s.text(at: 5),
                registryGeneration: s.int64(at: 6),
                generations: StreamGenerations(
                    stream: s.int64(at: 7), membership: s.int64(at: 8), retention: s.int64(at: 9)),
                boundary: s.int64(at: 10), pageLimit: s.int64(at: 11), created: s.int64(at: 12), scopes: [])
        }
        // The UNIQUE column makes more than one row impossible; the exact comparison guards against
        // SQLite ever matching a text that differs in its octets.
        guard let header = headers.first, header.exportID.exactlyEquals(exportID) else { return nil }
        let scopes = try store.db.cachedStatement(
            "SELECT scope_id, row_count, scope_digest, first_staged FROM seed_export_scopes WHERE export_key = ? "
                + "ORDER BY scope_id"
        ).query([.integer(header.key)]) { s in
            SeedExportScope(
                id: try s.text(at: 0), rowCount: s.int64(at: 1), digest: s.blob(at: 2),
                firstStaged: s.isNull(at: 3) ? nil : s.int64(at: 3))
        }
        return header.withScopes(scopes)
    }

    private func withKey(_ key: Int64) -> SeedExport {
        SeedExport(
            key: key, exportID: exportID, transactionNonce: transactionNonce, manifestHash: manifestHash,
            schemaVersion: schemaVersion, schemaHash: schemaHash, registryGeneration: registryGeneration,
            generations: generations, boundary: boundary, pageLimit: pageLimit, created: created, scopes: scopes)
    }

    private func withScopes(_ scopes: [SeedExportScope]) -> SeedExport {
        SeedExport(
            key: key, exportID: exportID, transactionNonce: transactionNonce, manifestHash: manifestHash,
            schemaVersion: schemaVersion, schemaHash: schemaHash, registryGeneration: registryGeneration,
            generations: generations, boundary: boundary, pageLimit: pageLimit, created: created, scopes: scopes)
    }
}

/// One portable scope of an export: its row count and scope digest at the export boundary.
struct SeedExportScope {
    let id: String
    let rowCount: Int64
    /// The 32-octet scope digest (`spec/integrity.md` §4.6) of exactly the staged rows.
    let digest: [UInt8]
    /// The `rebuild_rows.staged` number of the scope's first row staged by reference (the row of ordinal `o` is
    /// `firstStaged + o`); nil for an export staged by copy into `seed_export_rows` (layouts before 5).
    let firstStaged: Int64?

    /// The scope-digest checksum object; a stored digest that is not 32 octets is an integrity failure.
    func checksum() throws -> JSONValue {
        guard let checksum = try? Checksum(digest: digest) else { throw SyncIntegrityViolation() }
        return checksum.json
    }
}
