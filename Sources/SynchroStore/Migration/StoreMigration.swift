/// The upstream Swift client's migration steps, in registration order (`spec/client-store.md` §2).
///
/// The raw value is the identifier recorded in `grdb_migrations`. A file records a prefix of this sequence;
/// opening it runs the rest in order, each step in its own transaction together with its identifier row.
public enum StoreMigration: String, Sendable, CaseIterable {
    case v1 = "synchro_v1"
    case v2Buckets = "synchro_v2_buckets"
    case v3Scopes = "synchro_v3_scopes"
    case v4ScopeIntegrity = "synchro_v4_scope_integrity"
    case v5RejectedMutations = "synchro_v5_rejected_mutations"
    case v6Protocol3 = "synchro_v6_protocol_3"
    case v7PendingLocalRevision = "synchro_v7_pending_local_revision"
    case v8SealedPushBatches = "synchro_v8_sealed_push_batches"
    case v9MutationLedger = "synchro_v9_mutation_ledger"
    case v10RebuildPageReceipts = "synchro_v10_rebuild_page_receipts"
    case v11DurableBackoff = "synchro_v11_durable_backoff"
    case v12Gate2Recovery = "synchro_v12_gate2_recovery"
    case v13ScopeTextAffinity = "synchro_v13_scope_text_affinity"
    case v14CaptureContext = "synchro_v14_capture_context"
    case v15PendingProtocolIdentityIndex = "synchro_v15_pending_protocol_identity_index"
    case v16CaptureStorageValidation = "synchro_v16_capture_storage_validation"
    case v17PushLimitCaptureDependency = "synchro_v17_push_limit_capture_dependency"
    case v18AtomicGroups = "synchro_v18_atomic_groups"
    case v18KeyOnlyInsertCapture = "synchro_v18_key_only_insert_capture"

    /// The identifier recorded in `grdb_migrations`.
    public var identifier: String { rawValue }

    /// The protocol-3 seed interchange baseline: exactly v1 … v8 (`spec/seed-format.md` §1.1).
    public static let interchangeBaseline: [StoreMigration] = Array(allCases.prefix(8))
}
