import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Validates a client store without changing it (`seedkit validate`): SQLite's integrity and foreign-key
/// checks, the layout, the metadata rules of `spec/client-store.md` §3–§4 and §9, every provenance row's digest
/// and every verified scope checksum recomputed from the local rows with the engine's own digest code
/// (``LocalRows``), and optionally each scope's checksum against the server's terminal checksums.
///
/// The file is opened read-only and read in one snapshot: nothing is migrated, recovered or written, so a
/// store in the middle of another process's sync is validated as of its last commit.
public struct StoreValidator: Sendable {
    /// The client database file.
    public let path: String

    /// A validator of the store at `path`.
    public init(path: String) {
        self.path = path
    }

    /// Runs every offline check.
    public func validate() throws(ClientStoreError) -> StoreValidation {
        try withSnapshot { connection in try OfflineChecks.run(on: connection) }
    }

    /// Runs every offline check, then compares each scope with the server through one pull request built from
    /// the stored cursors (`spec/wire-protocol.md` §5), which is validated like any page and never applied.
    ///
    /// Only cursors the store installed are presented, so the request acknowledges nothing the store has not
    /// already committed; a page with `has_more` or a scope with changes after its cursor is reported as
    /// behind instead of compared.
    public func validate(against transport: any SyncTransport) throws(ClientStoreError) -> StoreValidation {
        let (validation, request) = try withSnapshot { connection in
            let validation = try OfflineChecks.run(on: connection)
            return (validation, try ServerComparisonRequest.build(on: connection, validation: validation))
        }
        return ServerComparisonRequest.compare(validation, request: request, transport: transport)
    }

    /// Opens the file read-only and runs `body` inside one read transaction.
    private func withSnapshot<Value>(_ body: (Connection) throws -> Value) throws(ClientStoreError) -> Value {
        let connection: Connection
        do {
            connection = try Connection(path: path, mode: .readOnly)
            try connection.setBusyTimeout(milliseconds: ConnectionConventions.busyTimeoutMilliseconds)
        } catch {
            throw .sqlite(error)
        }
        defer { connection.close() }
        return try mappingStoreErrors { try connection.transaction(kind: .deferred) { try body(connection) } }
    }
}

/// The offline checks, in order; a layout failure stops them (nothing else can be read reliably).
private struct OfflineChecks {
    let connection: Connection
    var validation = StoreValidation()
    /// Stale edges of the scope audited last.
    private var pendingEcho = 0

    init(connection: Connection) {
        self.connection = connection
    }

    static func run(on connection: Connection) throws -> StoreValidation {
        var checks = OfflineChecks(connection: connection)
        return try checks.run()
    }

    private mutating func run() throws -> StoreValidation {
        try checkSQLite()
        guard try checkLayout() else { return validation }
        try checkCaptureState()
        let manifest = try checkSchema()
        try checkClient(hasSchema: try MetaStore.integer(.schemaVersion, on: connection) > 0)
        try checkScopes(manifest: manifest)
        try checkQueue()
        try readNotes()
        return validation
    }

    private mutating func add(_ finding: StoreFinding) {
        validation.findings.append(finding)
    }

    // MARK: SQLite

    private mutating func checkSQLite() throws {
        let problems = try connection.integrityCheck()
        if problems != ["ok"] { add(.integrityCheck(problems: problems.count)) }
        let violations = try connection.query("SELECT DISTINCT \"table\" FROM pragma_foreign_key_check") {
            try $0.text(at: 0)
        }
        for table in violations.sorted() { add(.foreignKeyViolation(table: table)) }
    }

    // MARK: Layout

    private mutating func checkLayout() throws -> Bool {
        do {
            let layout = try StoreLayout.read(connection)
            guard layout.kind == .current else {
                add(.layout(rule: layout.kind == .empty ? "empty" : "not_migrated"))
                return false
            }
            try StoreLayoutVerifier.verify(connection)
            return true
        } catch {
            add(.layout(rule: error.rule))
            return false
        }
    }

    // MARK: Capture

    private mutating func checkCaptureState() throws {
        if try MetaStore.value(.syncLock, on: connection) != "0" { add(.captureState(rule: "sync_lock")) }
        if try MetaStore.value(.atomicGroupID, on: connection) != nil { add(.captureState(rule: "atomic_group_id")) }
        if try count("SELECT count(*) FROM _synchro_capture_context") > 0 {
            add(.captureState(rule: "capture_context"))
        }
    }

    // MARK: Schema

    /// Checks the schema metadata and returns the active manifest, nil for a fresh store or an unreadable one.
    private mutating func checkSchema() throws -> ClientManifest? {
        let version = try MetaStore.value(.schemaVersion, on: connection) ?? "0"
        let hash = try MetaStore.value(.schemaHash, on: connection) ?? ""
        let manifestText = try MetaStore.value(.schemaManifest, on: connection) ?? ""
        if version == "0" && hash.isEmpty {
            if !manifestText.isEmpty { add(.schemaMetadata(rule: "manifest_without_reference")) }
            return nil
        }
        guard let number = Int64(version), number > 0, !hash.isEmpty else {
            add(.schemaMetadata(rule: "reference_incomplete"))
            return nil
        }
        guard let manifest = try? ClientManifest(bytes: Array(manifestText.utf8)) else {
            add(.schemaMetadata(rule: "manifest_unreadable"))
            return nil
        }
        guard manifest.reference.version == number, manifest.reference.hash == hash else {
            add(.schemaMetadata(rule: "manifest_reference"))
            return nil
        }
        let archived = try count(
            "SELECT count(*) FROM _synchro_schema_archive WHERE schema_version = ? AND schema_hash = ?",
            [.integer(number), .text(hash)])
        if archived != 1 { add(.schemaMetadata(rule: "archive_missing")) }
        let local = try? LocalSchemaJSON.decode(try MetaStore.value(.localSchema, on: connection) ?? "")
        if local != manifest.localSchema { add(.schemaMetadata(rule: "local_schema")) }
        for table in manifest.localSchema where !(try physicalTableMatches(table)) {
            add(.schemaMetadata(rule: "table_layout"))
            break
        }
        return manifest
    }

    private func physicalTableMatches(_ table: LocalSchemaTable) throws -> Bool {
        try PhysicalTable.matches(table, on: connection)
    }

    // MARK: Client

    private mutating func checkClient(hasSchema: Bool) throws {
        let generation = try MetaStore.integer(.clientGeneration, on: connection)
        let bound = try MetaStore.value(.clientServerID, on: connection) ?? ""
        if generation > 0 {
            if !hasSchema { add(.clientMetadata(rule: "generation_without_schema")) }
            if bound.isEmpty { add(.clientMetadata(rule: "generation_without_client_id")) }
        }
        let receipts = try count("SELECT count(*) FROM _synchro_seed_receipts")
        if generation == 0, receipts == 0, try count("SELECT count(*) FROM _synchro_scopes") > 0 {
            add(.clientMetadata(rule: "scopes_without_generation"))
        }
    }

    // MARK: Scopes

    private mutating func checkScopes(manifest: ClientManifest?) throws {
        let scopes = try connection.query(
            "SELECT scope_id, cursor IS NOT NULL, checksum, local_checksum FROM _synchro_scopes ORDER BY scope_id"
        ) { row in
            (
                id: try row.text(at: 0), hasCursor: row.int64(at: 1) != 0,
                checksum: row.isNull(at: 2) ? nil : try row.text(at: 2), local: try row.text(at: 3)
            )
        }
        let known = Set(scopes.map(\.id))
        for table in ["_synchro_scope_rows", "_synchro_rebuild_attempts", "_synchro_rebuild_page_receipts"] {
            let orphans = try connection.query(
                "SELECT DISTINCT scope_id FROM \(table) ORDER BY scope_id") { try $0.text(at: 0) }
            for scope in orphans where !known.contains(scope) {
                add(.scopeMetadata(scope: scope, rule: "\(table.dropFirst("_synchro_".count))_without_scope"))
            }
        }
        let attempts = Set(try connection.query("SELECT scope_id FROM _synchro_rebuild_attempts") {
            try $0.text(at: 0)
        })
        let rows = manifest.map { LocalRows(connection: connection, manifest: $0) }
        for scope in scopes {
            if scope.hasCursor && scope.checksum == nil {
                add(.scopeMetadata(scope: scope.id, rule: "cursor_without_checksum"))
            }
            // An empty local checksum beside a cursor means "not verified locally under the active schema yet"
            // (a migration replaced the cursor); any other value must be the verified checksum.
            if scope.hasCursor, let checksum = scope.checksum, !scope.local.isEmpty, checksum != scope.local {
                add(.scopeMetadata(scope: scope.id, rule: "local_checksum"))
            }
            if scope.hasCursor && attempts.contains(scope.id) {
                add(.scopeMetadata(scope: scope.id, rule: "rebuild_attempt_beside_cursor"))
            }
            let edges = try count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = ?", [.text(scope.id)])
            var digest = StoreValidation.Digest.noChecksum
            pendingEcho = 0
            if let rows, let manifest {
                // A checksum verified under an earlier schema cannot be recomputed under the active one.
                let comparable = scope.checksum != nil && (!scope.hasCursor || !scope.local.isEmpty)
                let verified = try audit(
                    scope: scope.id, stored: comparable ? scope.checksum : nil, rows: rows, manifest: manifest)
                digest = verified ? .verified : scope.checksum == nil ? .noChecksum
                    : pendingEcho > 0 ? .awaitingPull : comparable ? .mismatch : .awaitingSchemaVerification
            } else if edges > 0 {
                add(.scopeMetadata(scope: scope.id, rule: "provenance_without_schema"))
            }
            validation.scopes.append(StoreValidation.Scope(
                scopeID: scope.id, rows: Int(edges), hasCursor: scope.hasCursor, hasChecksum: scope.checksum != nil,
                digest: digest, rowsAwaitingPull: pendingEcho))
        }
    }

    /// Recomputes one scope: row digests against provenance, and the scope digest against the stored checksum.
    private mutating func audit(
        scope: String, stored: String?, rows: LocalRows, manifest: ClientManifest
    ) throws -> Bool {
        let audit: LocalRows.ScopeAudit
        do {
            audit = try rows.audit(scope: scope, detailed: true)
        } catch {
            add(.scopeMetadata(scope: scope, rule: "provenance_unreadable"))
            return false
        }
        // A row the metadata says exists but that is gone is damage whatever schema its digest was made under.
        for (table, count) in audit.missingRows.sorted(by: { $0.key < $1.key }) {
            add(.rowMissing(scope: scope, table: table, rows: count))
        }
        pendingEcho = audit.staleEdges
        // Rows a push reconciliation changed after the scope was verified: the stored checksum describes the
        // state before them until the pull echo arrives, so it cannot be compared now (not damage).
        guard let stored, audit.staleEdges == 0 else { return false }
        guard let checksum = try? Checksum(json: StrictJSONParser().parse(Array(stored.utf8))) else {
            add(.scopeMetadata(scope: scope, rule: "checksum_unreadable"))
            return false
        }
        // A verified scope proves every row it covers. Only when it fails are the rows looked at one by one.
        guard checksum == audit.checksum else {
            explainMismatch(scope: scope, audit: audit, rows: rows, manifest: manifest)
            return false
        }
        return true
    }

    /// Names the damaged rows of a scope whose checksum the local rows do not reproduce, or, when nothing
    /// unprotected is damaged and rows with pending local intent keep digests that may predate the active schema,
    /// reports those rows as awaiting their push and pull echo instead (``ScopeMismatchAudit``).
    private mutating func explainMismatch(
        scope: String, audit: LocalRows.ScopeAudit, rows: LocalRows, manifest: ClientManifest
    ) {
        let rowAudit: ScopeMismatchAudit
        do {
            rowAudit = try ScopeMismatchAudit(scope: scope, manifest: manifest, rows: rows, connection: connection)
        } catch {
            add(.scopeMetadata(scope: scope, rule: "provenance_unreadable"))
            return
        }
        if rowAudit.awaitsPush(missingRows: audit.missingRows) {
            pendingEcho = rowAudit.protectedRows
            return
        }
        for (table, count) in rowAudit.damagedRows.sorted(by: { $0.key < $1.key }) {
            add(.rowDigestMismatch(scope: scope, table: table, rows: count))
        }
        add(.scopeDigestMismatch(scope: scope))
    }

    // MARK: Queue

    private mutating func checkQueue() throws {
        let pending = try count("SELECT count(*) FROM _synchro_push_batches WHERE state = 'pending'")
        let renewal = try count("SELECT count(*) FROM _synchro_push_batches WHERE state = 'renewal_required'")
        if pending + renewal > 1 { add(.queue(rule: "more_than_one_open_batch")) }
        if pending == 1 {
            do {
                _ = try PendingBatches.load(on: connection)
            } catch let error as PushError {
                if case .sealedBatchInvalid(_, let rule) = error { add(.queue(rule: rule)) } else { throw error }
            }
        }
        let strays = try count("""
            SELECT count(*) FROM _synchro_pending_changes AS entry
            WHERE entry.lifecycle_state = 'sealed' AND NOT EXISTS (
                SELECT 1 FROM _synchro_push_batches AS batch WHERE batch.batch_id = entry.sealed_batch_id
                    AND batch.state IN ('pending', 'renewal_required'))
            """)
        if strays > 0 { add(.queue(rule: "sealed_without_open_batch")) }
    }

    // MARK: Notes

    private mutating func readNotes() throws {
        validation.pendingMutations = Int(try count(
            "SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state NOT IN "
                + MutationLifecycleState.resolvedSQLList))
        validation.blockingError = try connection.scalar(
            "SELECT code FROM _synchro_blocking_error WHERE singleton = 1")?.textValue
        validation.migrationJournal = try count("SELECT count(*) FROM _synchro_schema_migration") > 0
    }

    private func count(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> Int64 {
        try connection.scalar(sql, arguments)?.integerValue ?? 0
    }
}
