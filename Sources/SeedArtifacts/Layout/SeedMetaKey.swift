/// The `_synchro_meta` keys of a seed (`spec/seed-format.md` §2.3): exactly these, no others.
public enum SeedMetaKey: String, CaseIterable, Sendable {
    case syncLock = "sync_lock"
    case checkpoint
    case schemaVersion = "schema_version"
    case schemaHash = "schema_hash"
    case localSchema = "local_schema"
    case schemaManifest = "schema_manifest"
    case scopeSetVersion = "scope_set_version"
    case snapshotComplete = "snapshot_complete"
    case exportID = "seed_export_id"
    case exportManifestHash = "seed_export_manifest_hash"
    case streamGeneration = "seed_stream_generation"
    case snapshotBoundary = "seed_snapshot_boundary"
    case pageLimit = "seed_page_limit"
}
