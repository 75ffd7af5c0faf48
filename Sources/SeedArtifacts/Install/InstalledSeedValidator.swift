import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The device installer's validation of a seed copy after the client store migrated it (`spec/seed-format.md`
/// §7.1, validation items 1–15, in that order), with a plain read-only connection. Shared by ``SeedInstaller``
/// and by ``SeedVerifier``'s installer checks. Unlike the upstream installer it collects every failure as an
/// `installer_*` finding instead of stopping at the first.
struct InstalledSeedValidator {
    /// The migrated copy.
    let copy: StagedCopy
    let collector: FindingCollector
    /// The seed the copy was made from and the publication checks' audit of it, when they run alongside.
    let seed: (path: String, shared: PublicationHandoff)?

    init(copy: StagedCopy, collector: FindingCollector, seed: (path: String, shared: PublicationHandoff)?) {
        self.copy = copy
        self.collector = collector
        self.seed = seed
    }

    /// Validates the migrated file at `path`.
    init(path: String, collector: FindingCollector, seed: (path: String, shared: PublicationHandoff)?) {
        self.init(copy: .file(path), collector: collector, seed: seed)
    }

    /// The 19 tables of the current layout (item 2).
    static let requiredTables = [
        "_synchro_meta", "_synchro_pending_changes", "_synchro_mutation_values", "_synchro_capture_context",
        "_synchro_capture_fields", "_synchro_push_batch_members", "_synchro_schema_archive", "_synchro_scopes",
        "_synchro_scope_rows", "_synchro_seed_receipts", "_synchro_row_versions", "_synchro_rebuild_attempts",
        "_synchro_rebuild_page_receipts", "_synchro_backoff", "_synchro_blocking_error", "_synchro_schema_migration",
        "_synchro_push_batches", "_synchro_rejected_mutations", "grdb_migrations",
    ]

    /// The work tables that must be empty (item 4).
    static let workTables = [
        "_synchro_pending_changes", "_synchro_mutation_values", "_synchro_capture_context", "_synchro_capture_fields",
        "_synchro_push_batch_members", "_synchro_push_batches", "_synchro_rejected_mutations",
        "_synchro_rebuild_attempts", "_synchro_rebuild_page_receipts", "_synchro_backoff", "_synchro_blocking_error",
        "_synchro_schema_migration",
    ]

    /// Metadata keys that must be present (item 5).
    static let requiredMetaKeys = [
        "checkpoint", "sync_lock", "schema_version", "schema_hash", "local_schema", "schema_manifest",
        "scope_set_version", "snapshot_complete",
    ]

    struct ScopeRow {
        let id: String
        let digest: [UInt8]?
        let local: [UInt8]?
    }

    struct ReceiptRow {
        let scope: String
        let cardinality: Int64?
        let digest: [UInt8]?
    }

    /// Runs items 1–15 on the copy.
    func run() {
        collector.evaluated(.installerIntegrityCheck, .installerTableMissing, .installerMigrationIdentifiers,
                            .installerWorkTableNotEmpty, .installerMeta, .installerSchemaManifest,
                            .installerLocalSchema, .installerSchemaArchive, .installerSyncedTable, .installerTrigger,
                            .installerReceipt, .installerScope, .installerScopeDigest)
        let connection: Connection
        do {
            connection = try copy.openReadOnly()
        } catch {
            collector.add(.installerSQLiteError, "the migrated copy cannot be opened: \(error.codeName)")
            return
        }
        defer { connection.close() }
        // Item 1 runs concurrently with items 2–15; its finding is listed first. Alongside the publication checks
        // it starts as a `quick_check` (see ``reportIntegrity(_:coveredTables:at:)``).
        let integrity = IntegrityCheckTask(copy, scope: seed == nil ? .full : .quick)
        let integrityPosition = collector.listed
        let pages = seed.flatMap { pageIdentity(seed: $0.path, connection) }
        var coveredTables: Set<String>?
        defer { reportIntegrity(integrity, coveredTables: coveredTables, at: integrityPosition) }
        step("checking the table set") {
            for table in Self.requiredTables where !(try connection.tableExists(table)) {
                collector.add(.installerTableMissing, table: table, "the migrated layout lacks this table")
            }
        }
        step("reading grdb_migrations") { try checkMigrations(connection) }
        for table in Self.workTables {
            step("counting \(table)") {
                guard try connection.tableExists(table) else { return }
                let count = try connection.scalar("SELECT count(*) FROM \(table)")?.integerValue ?? 0
                if count > 0 {
                    collector.add(.installerWorkTableNotEmpty, table: table, "\(count) rows after migration")
                }
            }
        }
        var meta: [String: String] = [:]
        step("reading _synchro_meta") { meta = try readMeta(connection) }
        guard let schema = checkSchema(meta, connection) else { return }
        step("checking the synced tables") { try checkSyncedTables(schema.manifest, connection) }
        var scopes: [ScopeRow] = []
        var receipts: [ReceiptRow] = []
        step("reading _synchro_seed_receipts") { receipts = try readReceipts(schema.reference, connection) }
        step("reading _synchro_scopes") { scopes = try readScopes(connection) }
        matchScopes(scopes, receipts)
        // Before the wait for the publication checks' audit, which ends last.
        coveredTables = pages.flatMap { coveredByTableChecks($0, connection) }
        var audit = sharedAudit(schema.manifest, pages, connection)
        if audit == nil {
            step("re-reading the materialized rows") {
                audit = try SeedRowAudit(
                    connection: connection, manifest: schema.manifest, knownScopes: Set(scopes.map(\.id)),
                    checks: .installer, reopen: { [copy] in try copy.openReadOnly() }
                ).run(into: collector)
            }
        }
        if let audit { compareTallies(audit, scopes: scopes, receipts: receipts, manifest: schema.manifest) }
    }

    // MARK: - Items 12–15 from the publication checks' audit

    /// The publication checks' audit of the seed, when the copy provably holds the same synced rows, row versions
    /// and edges (so re-digesting the copy would recompute exactly those digests); its findings are reported
    /// again under the installer checks. Nil when the checks do not run alongside, when their audit did not run,
    /// or when the migration changed anything: the copy is then audited on its own.
    private func sharedAudit(
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
    private func pageIdentity(seed seedPath: String, _ connection: Connection) -> SeedPageIdentity? {
        switch copy {
        case .file(let path):
            return SeedPageIdentity(copy: path, seed: seedPath)
        case .memory:
            // Nothing writes to the in-memory copy while the validation reads it.
            return SeedPageIdentity(copyOpenedBy: connection, seed: seedPath)
        }
    }

    /// Runs `body` with the seed at `seedPath` attached to `connection` as `seed` (read-only, `immutable=1`).
    func withSeedAttached<Result>(
        _ seedPath: String, _ connection: Connection, _ body: () throws -> Result
    ) throws -> Result {
        var seedURI = SeedFileProbe.immutableURI(seedPath)
        if case .memory = copy {
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

    private func step(_ name: String, _ body: () throws -> Void) {
        collector.guarding(name, as: .installerSQLiteError, body)
    }

    // MARK: - Items 3 and 5

    private func checkMigrations(_ connection: Connection) throws {
        guard try connection.tableExists("grdb_migrations") else { return }
        let recorded = try connection.query("SELECT identifier FROM grdb_migrations") {
            (try? $0.value(at: 0))?.textValue ?? ""
        }
        let expected = StoreMigration.allCases.map(\.identifier)
        if recorded.count != expected.count || Set(recorded) != Set(expected) {
            let missing = expected.filter { !recorded.contains($0) }
            collector.add(.installerMigrationIdentifiers, table: "grdb_migrations",
                          "\(recorded.count) identifiers recorded instead of the client's \(expected.count)"
                              + (missing.isEmpty ? "" : "; missing \(missing.joined(separator: ", "))"))
        }
    }

    /// Item 5: required keys, flag values, no client identity, a canonical schema reference.
    private func readMeta(_ connection: Connection) throws -> [String: String] {
        var meta: [String: String] = [:]
        try connection.forEachRow("SELECT key, value FROM _synchro_meta") { row in
            let key = (try? row.value(at: 0))?.textValue ?? ""
            guard !key.isEmpty else {
                collector.add(.installerMeta, table: "_synchro_meta", "a key is empty or not text")
                return
            }
            guard case .text(let value) = try row.value(at: 1) else {
                collector.add(.installerMeta, table: "_synchro_meta", "the value of \(key) is not text")
                return
            }
            meta[key] = value
        }
        for key in Self.requiredMetaKeys where meta[key] == nil {
            collector.add(.installerMeta, table: "_synchro_meta", "key \(key) is missing")
        }
        for (key, expected) in [("snapshot_complete", "1"), ("sync_lock", "0"), ("checkpoint", "0"),
                                ("scope_set_version", "0")] {
            if let value = meta[key], value != expected {
                collector.add(.installerMeta, table: "_synchro_meta", "\(key) is not \(expected)")
            }
        }
        if meta["client_server_id"] != nil {
            collector.add(.installerMeta, table: "_synchro_meta", "key client_server_id binds a client identity")
        }
        if let generation = meta["client_generation"], generation != "0" {
            collector.add(.installerMeta, table: "_synchro_meta", "client_generation is not 0")
        }
        return meta
    }

    // MARK: - Items 5–8

    struct InstalledSchema {
        let reference: SchemaReference
        let manifest: ClientManifest
    }

    /// The schema reference, the manifest (item 6), the local schema (item 7) and the archive row (item 8); nil
    /// when no manifest can be derived, which leaves nothing to compare the tables and rows with.
    private func checkSchema(_ meta: [String: String], _ connection: Connection) -> InstalledSchema? {
        guard let versionText = meta["schema_version"], let hash = meta["schema_hash"] else { return nil }
        guard let version = PublicationVerifier.canonicalInteger(versionText),
              let reference = try? SchemaReference(version: version, hash: hash)
        else {
            collector.add(.installerMeta, table: "_synchro_meta",
                          "schema_version and schema_hash are not a valid schema reference")
            return nil
        }
        guard let manifestText = meta["schema_manifest"] else { return nil }
        let manifest: ClientManifest
        do {
            manifest = try ClientManifest(bytes: Array(manifestText.utf8))
        } catch {
            collector.add(.installerSchemaManifest, table: "_synchro_meta",
                          "schema_manifest does not decode and validate: \(error.rule)")
            return nil
        }
        if manifest.reference != reference {
            collector.add(.installerSchemaManifest, table: "_synchro_meta",
                          "the manifest's version or recomputed hash differs from schema_version/schema_hash")
        }
        if let text = meta["local_schema"] {
            let decoded = try? SeedInstallSupport.decodeLocalSchema(text)
            if decoded != manifest.localSchema {
                collector.add(.installerLocalSchema, table: "_synchro_meta",
                              "local_schema differs from the local tables derived from schema_manifest")
            }
        }
        step("reading _synchro_schema_archive") {
            let rows = try connection.query(
                "SELECT schema_version, schema_hash, schema_json FROM _synchro_schema_archive"
            ) { (try $0.value(at: 0), try $0.value(at: 1), try $0.value(at: 2)) }
            guard rows.count == 1, let row = rows.first, row.0.integerValue == reference.version,
                  row.1.textValue == reference.hash
            else {
                collector.add(.installerSchemaArchive, table: "_synchro_schema_archive",
                              "\(rows.count) archive rows; exactly one, for the seed's schema, is required")
                return
            }
            let archived = row.2.textValue.flatMap { try? SeedInstallSupport.decodeLocalSchema($0) }
            if archived != manifest.localSchema {
                collector.add(.installerSchemaArchive, table: "_synchro_schema_archive",
                              "the archived schema_json differs from the local tables derived from schema_manifest")
            }
        }
        return InstalledSchema(reference: reference, manifest: manifest)
    }

    // MARK: - Item 9

    private func checkSyncedTables(_ manifest: ClientManifest, _ connection: Connection) throws {
        var triggers: [String: String] = [:]
        try connection.forEachRow("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'") { row in
            triggers[try row.text(at: 0)] = (try? row.value(at: 1))?.textValue ?? ""
        }
        for table in manifest.localSchema {
            let physical = try connection.columns(of: table.tableName)
            if !SeedInstallSupport.syncedTableMatches(physical, table) {
                collector.add(.installerSyncedTable, table: table.tableName,
                              "the columns differ from the manifest (count, name, type, NOT NULL, key or default)")
            }
            for (name, sql) in SeedInstallSupport.captureTriggers(for: table) {
                guard let stored = triggers[name] else {
                    collector.add(.installerTrigger, table: table.tableName, "trigger \(name) is missing")
                    continue
                }
                if !Self.equalCollapsed(stored, sql) {
                    collector.add(.installerTrigger, table: table.tableName,
                                  "trigger \(name) differs from the client's capture trigger generator")
                }
            }
        }
    }

    /// The text with every whitespace run collapsed to one space, trimmed.
    static func collapsed(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// `collapsed(a) == collapsed(b)`, compared octet by octet when both texts are ASCII (whose only whitespace
    /// characters are U+0009…U+000D and U+0020): the capture triggers' SQL is long, and classifying each of its
    /// characters as Unicode whitespace dominated this check.
    static func equalCollapsed(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        let compared = a.withUTF8 { x in b.withUTF8 { y in ASCIIWords.equal(x, y) } }
        return compared ?? (collapsed(a) == collapsed(b))
    }

    // MARK: - Items 10 and 11

    private func readReceipts(_ reference: SchemaReference, _ connection: Connection) throws -> [ReceiptRow] {
        var seen: Set<String> = []
        return try connection.query(
            "SELECT scope_id, receipt, schema_version, schema_hash, cardinality, checksum FROM _synchro_seed_receipts"
        ) { row -> ReceiptRow? in
            guard case .text(let scope) = try row.value(at: 0), !scope.isEmpty else {
                collector.add(.installerReceipt, table: "_synchro_seed_receipts", "a receipt has an empty scope ID")
                return nil
            }
            if !seen.insert(scope).inserted {
                collector.add(.installerReceipt, scope: scope, "more than one receipt for the scope")
            }
            if (try? row.value(at: 1))?.textValue?.isEmpty != false {
                collector.add(.installerReceipt, scope: scope, "the receipt is empty")
            }
            let storedVersion = try row.value(at: 2)
            let storedHash = try row.value(at: 3)
            if storedVersion.integerValue != reference.version || storedHash.textValue != reference.hash {
                collector.add(.installerReceipt, scope: scope, "the receipt's schema reference is not the seed's")
            }
            var cardinality: Int64?
            if case .integer(let value) = try row.value(at: 4), value >= 0 {
                cardinality = value
            } else {
                collector.add(.installerReceipt, scope: scope, "the receipt cardinality is not an integer ≥ 0")
            }
            let digest = row.isNull(at: 5) ? nil : row.withTextBytes(at: 5, ChecksumText.objectDigest)
            if digest == nil {
                collector.add(.installerReceipt, scope: scope, "the receipt checksum is not a checksum object")
            }
            return ReceiptRow(scope: scope, cardinality: cardinality, digest: digest)
        }.compactMap { $0 }
    }

    private func readScopes(_ connection: Connection) throws -> [ScopeRow] {
        try connection.query(
            "SELECT scope_id, cursor, checksum, local_checksum, generation FROM _synchro_scopes"
        ) { row -> ScopeRow? in
            guard case .text(let scope) = try row.value(at: 0), !scope.isEmpty else {
                collector.add(.installerScope, table: "_synchro_scopes", "a scope has an empty scope ID")
                return nil
            }
            if !row.isNull(at: 1) { collector.add(.installerScope, scope: scope, "the scope has a cursor") }
            let digest = row.isNull(at: 2) ? nil : row.withTextBytes(at: 2, ChecksumText.objectDigest)
            let local = row.isNull(at: 3) ? nil : row.withTextBytes(at: 3, ChecksumText.objectDigest)
            if digest == nil || local == nil {
                collector.add(.installerScope, scope: scope,
                              "the scope checksum or local checksum is not a checksum object")
            }
            if case .integer(0) = try row.value(at: 4) {} else {
                collector.add(.installerScope, scope: scope, "the scope generation is not 0")
            }
            return ScopeRow(id: scope, digest: digest, local: local)
        }.compactMap { $0 }
    }

    private func matchScopes(_ scopes: [ScopeRow], _ receipts: [ReceiptRow]) {
        let scopeIDs = Set(scopes.map(\.id))
        let receiptIDs = Set(receipts.map(\.scope))
        for scope in scopes.map(\.id).sorted() where !receiptIDs.contains(scope) {
            collector.add(.installerScope, scope: scope, "the scope has no receipt (receipt scope set ≠ scope set)")
        }
        for scope in receipts.map(\.scope).sorted() where !scopeIDs.contains(scope) {
            collector.add(.installerScope, scope: scope, "the receipt has no scope (receipt scope set ≠ scope set)")
        }
    }

    // MARK: - Item 15

    private func compareTallies(
        _ audit: RowAuditResult, scopes: [ScopeRow], receipts: [ReceiptRow], manifest: ClientManifest
    ) {
        for receipt in receipts {
            guard let scope = scopes.first(where: { $0.id == receipt.scope }) else { continue }
            let tally = audit.scopes[receipt.scope] ?? ScopeTally(
                edges: 0,
                digest: try? ScopeDigest.compute(
                    schemaHash: manifest.manifest.schemaHashOctets, scopeID: receipt.scope, entries: []
                ).digest)
            if let cardinality = receipt.cardinality, cardinality != Int64(tally.edges) {
                collector.add(.installerScopeDigest, scope: receipt.scope,
                              "\(tally.edges) provenance edges, the receipt cardinality is \(cardinality)")
            }
            if scope.digest == nil || scope.digest != receipt.digest || scope.local != receipt.digest {
                collector.add(.installerScopeDigest, scope: receipt.scope,
                              "the scope checksum or local checksum differs from the receipt checksum")
            }
            if tally.digest == nil || tally.digest != receipt.digest {
                collector.add(.installerScopeDigest, scope: receipt.scope,
                              "the scope digest recomputed from the rows differs from the receipt checksum")
            }
        }
    }
}

/// Whitespace-separated words of ASCII text.
private enum ASCIIWords {
    /// Whether `x` and `y` hold the same words in the same order; nil when either is not ASCII.
    static func equal(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard x.allSatisfy({ $0 < 0x80 }), y.allSatisfy({ $0 < 0x80 }) else { return nil }
        var i = skipSpace(x, 0)
        var j = skipSpace(y, 0)
        while i < x.count && j < y.count {
            while i < x.count && j < y.count && !isSpace(x[i]) && !isSpace(y[j]) {
                guard x[i] == y[j] else { return false }
                i += 1
                j += 1
            }
            let xEnded = i == x.count || isSpace(x[i])
            let yEnded = j == y.count || isSpace(y[j])
            guard xEnded && yEnded else { return false }
            i = skipSpace(x, i)
            j = skipSpace(y, j)
        }
        return i == x.count && j == y.count
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    private static func skipSpace(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var index = start
        while index < text.count && isSpace(text[index]) { index += 1 }
        return index
    }
}
