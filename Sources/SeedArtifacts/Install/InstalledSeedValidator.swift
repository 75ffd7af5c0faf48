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

    /// Runs items 1–15 on the copy.
    func run() {
        collector.evaluated(.installerIntegrityCheck, .installerTableMissing, .installerMigrationIdentifiers,
                            .installerWorkTableNotEmpty, .installerMeta, .installerSchemaManifest,
                            .installerLocalSchema, .installerSchemaArchive, .installerSyncedTable, .installerTrigger,
                            .installerReceipt, .installerScope, .installerScopeDigest)
        let connection: Connection
        do {
            connection = try copy.openReadOnly(meter: collector.meter)
        } catch {
            collector.add(.installerSQLiteError, "the migrated copy cannot be opened: \(error.codeName)")
            return
        }
        defer { connection.close() }
        // Item 1 runs concurrently with items 2–15; its finding is listed first. Alongside the publication checks
        // it starts as a `quick_check` (see ``reportIntegrity(_:coveredTables:at:)``).
        let integrity = IntegrityCheckTask(copy, scope: seed == nil ? .full : .quick, meter: collector.meter)
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
                    checks: .installer,
                    reopen: { [copy, meter = collector.meter] in try copy.openReadOnly(meter: meter) }
                ).run(into: collector)
            }
        }
        if let audit { compareTallies(audit, scopes: scopes, receipts: receipts, manifest: schema.manifest) }
    }

    func step(_ name: String, _ body: () throws -> Void) {
        collector.guarding(name, as: .installerSQLiteError, body)
    }
}
