import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The exporter's self-verification of a seed file (`spec/seed-format.md` §6), on a read-only `immutable=1`
/// connection, in the order of §6: sidecars, integrity, schema (and `user_version`, §2.1), metadata, queues,
/// seed state, migrations. Unlike the upstream exporter it does not stop at the first failure: every check whose
/// inputs could be read runs, and each failure is a typed finding.
struct PublicationVerifier {
    let path: String
    let options: SeedVerificationOptions
    let collector: FindingCollector
    /// Materialized rows re-digested.
    var rows = 0

    /// `_synchro_meta` as stored: key → value (any storage class).
    var meta: [String: SQLiteValue] = [:]
    /// The manifest of the `schema_manifest` meta value, when it decodes and validates.
    var manifest: ClientManifest?
    /// Why `schema_manifest` did not yield a manifest.
    var manifestProblem: String?
    /// The row audit, once it ran.
    var audit: RowAuditResult?
    /// Where the row audit and the integrity check are handed to the installer checks.
    let shared: PublicationHandoff?

    init(
        path: String, options: SeedVerificationOptions, shared: PublicationHandoff? = nil,
        meter: BudgetMeter? = nil
    ) {
        self.path = path
        self.options = options
        self.shared = shared
        collector = FindingCollector(
            limit: options.maximumFindingsPerCheck, meter: meter ?? BudgetMeter(options.budget))
    }

    /// Runs every check; the findings are in `collector`. The integrity check and the row audit are handed to
    /// `shared` as soon as they are known, and each exactly once.
    mutating func run() {
        collector.evaluated(.sidecarPresent)
        for suffix in SeedFileProbe.sidecars(of: path) {
            collector.add(.sidecarPresent, "a \(suffix) file exists next to the seed; a seed is published alone")
        }
        let connection: Connection
        do {
            connection = try SeedFileProbe.openImmutable(path, meter: collector.meter)
        } catch {
            collector.add(.sqliteError, "the seed cannot be opened read-only: \(error.codeName): \(error.message)")
            shared?.publish(nil)
            shared?.publish(integrityCheck: nil)
            return
        }
        defer { connection.close() }
        collector.evaluated(.integrityCheck)
        let integrity = IntegrityCheckTask(path: path, meter: collector.meter)
        shared?.publish(integrityCheck: integrity)
        let integrityPosition = collector.listed
        readMeta(connection)
        checkSchema(connection)
        checkUserVersion(connection)
        checkMeta()
        checkQueues(connection)
        checkSeedState(connection)
        shared?.publish(audit)
        checkMigrations(connection)
        checkCredentialResidue()
        integrity.report(into: collector, at: integrityPosition, as: .integrityCheck, failure: .integrityCheck)
    }

    // MARK: - §6 item 2

    // `PRAGMA integrity_check` runs concurrently with the other checks (``IntegrityCheckTask``); its finding is
    // listed in §6 order, after the sidecars'.

    // MARK: - §2.1

    private mutating func checkUserVersion(_ connection: Connection) {
        collector.evaluated(.userVersion)
        collector.guarding("PRAGMA user_version", as: .sqliteError) {
            let version = try connection.userVersion()
            if Int64(version) != SeedBaseline.userVersion {
                collector.add(.userVersion, "PRAGMA user_version is \(version), not \(SeedBaseline.userVersion)")
            }
        }
    }

    // MARK: - §6 item 5

    private mutating func checkQueues(_ connection: Connection) {
        collector.evaluated(.queueNotEmpty)
        for table in SeedBaseline.tables where table.mustBeEmpty {
            collector.guarding("counting \(table.name)", as: .sqliteError) {
                guard try connection.tableExists(table.name) else { return }
                let count = try connection.scalar("SELECT count(*) FROM \(table.name)")?.integerValue ?? 0
                if count > 0 {
                    collector.add(.queueNotEmpty, table: table.name, "\(count) rows; a seed carries no queued work")
                }
            }
        }
    }

    // MARK: - §6 item 7

    private mutating func checkMigrations(_ connection: Connection) {
        collector.evaluated(.migrationIdentifiers)
        collector.guarding("reading grdb_migrations", as: .sqliteError) {
            guard try connection.tableExists("grdb_migrations") else { return }
            let recorded = try connection.query("SELECT identifier FROM grdb_migrations") {
                (try? $0.value(at: 0))?.textValue ?? ""
            }
            let expected = SeedBaseline.migrationIdentifiers
            let missing = expected.filter { !recorded.contains($0) }
            let extra = recorded.filter { !expected.contains($0) }
            if !missing.isEmpty {
                collector.add(.migrationIdentifiers, table: "grdb_migrations",
                              "missing baseline identifiers: \(missing.joined(separator: ", "))")
            }
            if !extra.isEmpty {
                collector.add(.migrationIdentifiers, table: "grdb_migrations",
                              "\(extra.count) identifiers outside the baseline v1…v8: "
                                  + extra.sorted().joined(separator: ", "))
            }
        }
    }

    // MARK: - Issue #20: nothing secret left in the file

    /// Every byte of the file, used and free space alike, against the credential shapes of ``CredentialResidueScan``.
    private func checkCredentialResidue() {
        collector.evaluated(.credentialResidue)
        guard let hits = CredentialResidueScan.scan(path: path) else {
            collector.add(.sqliteError, "the file could not be mapped to scan it for credential residue")
            return
        }
        for hit in hits {
            collector.add(SeedFinding(
                .credentialResidue, page: hit.page,
                message: "\(hit.shape.rawValue) is in the file's bytes (live or deleted); a seed ships to every "
                    + "device"))
        }
    }

    // MARK: - Metadata rows

    /// Reads `_synchro_meta` and decodes the manifest, which the schema checks need before the metadata checks run.
    private mutating func readMeta(_ connection: Connection) {
        collector.guarding("reading _synchro_meta", as: .sqliteError) {
            guard try connection.tableExists("_synchro_meta") else { return }
            try connection.forEachRow("SELECT key, value FROM _synchro_meta") { row in
                guard case .text(let key) = try row.value(at: 0) else { return }
                meta[key] = try row.value(at: 1)
            }
        }
        guard case .text(let text)? = meta[MetaKey.schemaManifest.rawValue] else {
            manifestProblem = meta[MetaKey.schemaManifest.rawValue] == nil ? nil : "the value is not text"
            return
        }
        do {
            manifest = try ClientManifest(bytes: Array(text.utf8))
        } catch {
            manifestProblem = "\(error.rule): \(error)"
        }
    }

    func metaText(_ key: MetaKey) -> String? {
        meta[key.rawValue]?.textValue
    }
}
