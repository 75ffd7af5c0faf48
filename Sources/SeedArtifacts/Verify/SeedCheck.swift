/// The rule a ``SeedFinding`` reports, by a stable snake_case name (the `check` member of `seedkit verify --json`).
///
/// Publication checks are the exporter's self-verification of `spec/seed-format.md` §6 on the seed file itself;
/// `installer_*` checks are the device installer's validation of §7.1 on a copy migrated by the client store.
/// docs/seed-verification.md lists every check in the order it runs.
public enum SeedCheck: String, Sendable, Hashable, CaseIterable {
    // Before everything: schema objects that would run the seed's own code (views, virtual tables, triggers other
    // than the capture triggers), and the verification's work budget.
    case executableSchema = "executable_schema"
    case budgetExceeded = "budget_exceeded"
    // §6 item 1: files next to the seed.
    case sidecarPresent = "sidecar_present"
    // §6 item 2.
    case integrityCheck = "integrity_check"
    // §6 item 3: schema.
    case internalTableShape = "internal_table_shape"
    case forbiddenWord = "forbidden_word"
    case internalIndex = "internal_index"
    case syncedTableShape = "synced_table_shape"
    case syncedTableIndex = "synced_table_index"
    case unexpectedTable = "unexpected_table"
    case triggerMissing = "trigger_missing"
    case triggerSQL = "trigger_sql"
    case unexpectedTrigger = "unexpected_trigger"
    // §2.1.
    case userVersion = "user_version"
    // §6 item 4: metadata (§2.3).
    case metaKeyMissing = "meta_key_missing"
    case metaKeyForbidden = "meta_key_forbidden"
    case metaKeyUnexpected = "meta_key_unexpected"
    case metaValue = "meta_value"
    case schemaManifest = "schema_manifest"
    case localSchema = "local_schema"
    // §6 item 5.
    case queueNotEmpty = "queue_not_empty"
    // §6 item 6: seed state.
    case scopeState = "scope_state"
    case receiptMissing = "receipt_missing"
    case receiptExtra = "receipt_extra"
    case receiptInvalid = "receipt_invalid"
    case receiptBinding = "receipt_binding"
    case exportManifestHash = "export_manifest_hash"
    case rowVersionInvalid = "row_version_invalid"
    case primaryKeyStorage = "primary_key_storage"
    case primaryKeyDuplicate = "primary_key_duplicate"
    case rowValueInvalid = "row_value_invalid"
    case rowWithoutVersion = "row_without_version"
    case versionWithoutRow = "version_without_row"
    case rowDigestMismatch = "row_digest_mismatch"
    case edgeInvalid = "edge_invalid"
    case edgeWithoutRow = "edge_without_row"
    case edgeDigestMismatch = "edge_digest_mismatch"
    case rowWithoutEdge = "row_without_edge"
    case cardinalityMismatch = "cardinality_mismatch"
    case scopeDigestMismatch = "scope_digest_mismatch"
    case scopeChecksumMismatch = "scope_checksum_mismatch"
    // §6 item 7.
    case migrationIdentifiers = "migration_identifiers"
    /// A credential shape (JWT, Bearer credential, PEM private key, cloud access key) somewhere in the file, live or
    /// in free space (issue #20); the finding names the page, never the bytes.
    case credentialResidue = "credential_residue"
    /// SQLite failed while a publication check read the file (typically a corrupt page).
    case sqliteError = "sqlite_error"

    // §7.1: the device installer's procedure and validation, on the migrated copy.
    case installerOpen = "installer_open"
    case installerIntegrityCheck = "installer_integrity_check"
    case installerTableMissing = "installer_table_missing"
    case installerMigrationIdentifiers = "installer_migration_identifiers"
    case installerWorkTableNotEmpty = "installer_work_table_not_empty"
    case installerMeta = "installer_meta"
    case installerSchemaManifest = "installer_schema_manifest"
    case installerLocalSchema = "installer_local_schema"
    case installerSchemaArchive = "installer_schema_archive"
    case installerSyncedTable = "installer_synced_table"
    case installerTrigger = "installer_trigger"
    case installerReceipt = "installer_receipt"
    case installerScope = "installer_scope"
    case installerRowVersion = "installer_row_version"
    case installerScopeRow = "installer_scope_row"
    case installerMaterializedRows = "installer_materialized_rows"
    case installerScopeDigest = "installer_scope_digest"
    /// SQLite failed while an installer check read the migrated copy.
    case installerSQLiteError = "installer_sqlite_error"

    /// The stable name.
    public var name: String { rawValue }

    /// Whether the check belongs to the device installer's validation (§7.1) rather than to publication (§6).
    public var isInstallerCheck: Bool { rawValue.hasPrefix("installer_") }
}
