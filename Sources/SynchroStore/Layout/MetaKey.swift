import SQLiteKit

/// The keys of `_synchro_meta` (`spec/client-store.md` §3). Values are text; integers are canonical base-10.
public enum MetaKey: String, Sendable, CaseIterable {
    /// `'0'` captures application writes; `'1'` is server-apply mode, in which the capture triggers do not fire.
    case syncLock = "sync_lock"
    /// Legacy protocol-2 checkpoint; stays `'0'`.
    case checkpoint
    /// Active immutable schema version; missing or `0` is the fresh sentinel.
    case schemaVersion = "schema_version"
    /// Active schema hash; missing or empty is the fresh sentinel.
    case schemaHash = "schema_hash"
    /// JSON array of LocalSchemaTable objects describing the synced tables.
    case localSchema = "local_schema"
    /// The active manifest JSON.
    case schemaManifest = "schema_manifest"
    /// The client ID the database is bound to.
    case clientServerID = "client_server_id"
    /// seedkit's own key: the client IDs this store left, oldest first, as a JSON array of strings. An ID is left
    /// only when a first connect's answer was lost and the server refused its resend (`docs/decisions.md`, "A lost
    /// first-connect response: the store leaves the identity it never held"); kept for inspection, never sent.
    case replacedClientIDs = "replaced_client_server_ids"
    /// seedkit's own key: the names of the manifest indexes this store created (or adopted as exactly the manifest's),
    /// as a sorted JSON array of strings (``ManifestIndexOwnership``). Absent in stores written before it existed
    /// and in installed seeds; never sent.
    case manifestIndexes = "seedkit_manifest_indexes"
    /// seedkit's own key: the manifest's non-unique indexes an initial rebuild dropped to build once at its end, as
    /// an RFC 8785 JSON array of `{"name","sql","table"}` objects (``DeferredIndexes``). Present only between the
    /// transaction that drops them and the one that builds them; never in a seed; never sent.
    case deferredIndexes = "seedkit_deferred_indexes"
    /// Server-issued client generation.
    case clientGeneration = "client_generation"
    /// The server's scope-set version.
    case scopeSetVersion = "scope_set_version"
    /// Seed finalization flag.
    case snapshotComplete = "snapshot_complete"
    /// Transient: the atomic write group being captured; never present in a committed database.
    case atomicGroupID = "atomic_group_id"
    /// A seed's export ID (`spec/seed-format.md` §2.3); the client leaves it in place.
    case exportID = "seed_export_id"
    /// A seed's export manifest hash.
    case exportManifestHash = "seed_export_manifest_hash"
    /// A seed's stream generation.
    case streamGeneration = "seed_stream_generation"
    /// A seed's snapshot boundary (RFC 8785 JSON).
    case snapshotBoundary = "seed_snapshot_boundary"
    /// A seed's page limit.
    case pageLimit = "seed_page_limit"

    /// The keys of a seed's `_synchro_meta` (`spec/seed-format.md` §2.3): exactly these, no others, in the order
    /// the writer inserts them.
    public static let seedKeys: [MetaKey] = [
        .syncLock, .checkpoint, .schemaVersion, .schemaHash, .localSchema, .schemaManifest, .scopeSetVersion,
        .snapshotComplete, .exportID, .exportManifestHash, .streamGeneration, .snapshotBoundary, .pageLimit,
    ]
}

/// Reads and writes of `_synchro_meta` on whichever connection runs the current transaction.
package enum MetaStore {
    package static func value(_ key: MetaKey, on connection: Connection) throws(SQLiteError) -> String? {
        try connection.cachedStatement("SELECT value FROM _synchro_meta WHERE key = ?")
            .scalar([.text(key.rawValue)])?.textValue
    }

    package static func set(_ key: MetaKey, _ value: String, on connection: Connection) throws(SQLiteError) {
        // A plain UPDATE-or-INSERT pair, so nothing here depends on UPSERT support.
        let update = try connection.cachedStatement("UPDATE _synchro_meta SET value = ? WHERE key = ?")
        try update.run([.text(value), .text(key.rawValue)])
        if connection.changes == 0 {
            try connection.cachedStatement("INSERT INTO _synchro_meta (key, value) VALUES (?, ?)")
                .run([.text(key.rawValue), .text(value)])
        }
    }

    package static func remove(_ key: MetaKey, on connection: Connection) throws(SQLiteError) {
        try connection.cachedStatement("DELETE FROM _synchro_meta WHERE key = ?").run([.text(key.rawValue)])
    }

    /// The integer value of `key`, 0 when it is missing or not a plain integer (the upstream reading).
    package static func integer(_ key: MetaKey, on connection: Connection) throws(SQLiteError) -> Int64 {
        guard let text = try value(key, on: connection), let number = Int64(text) else {
            return 0
        }
        return number
    }
}
