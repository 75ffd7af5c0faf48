import SynchroProtocol

/// The `local_schema` metadata value of a seed (`spec/seed-format.md` §2.4.1): the LocalSchemaTable array in
/// the exporter's spelling — absent optional IDs as JSON null, `composition` omitted when unknown, decimal
/// precision/scale null on other types, `sqliteDefaultSQL` null.
///
/// Indexes: upstream writes no `indexes` key, so a manifest that declares indexes yields a seed that both SDK
/// validators reject (§9 item 2). seedkit writes the Swift form (`fieldIDs`) when the manifest declares
/// indexes — what the Swift installer and seedkit's own installer compare against — and nothing otherwise,
/// so index-free manifests produce exactly the upstream bytes (docs/decisions.md, "Seeds of indexed manifests").
public enum SeedLocalSchema {
    /// The JSON value for `tables`, in manifest table order.
    public static func json(_ tables: [LocalSchemaTable]) -> JSONValue {
        .array(tables.map { LocalSchemaJSON.json($0, seedExporterForm: true) })
    }

    /// The RFC 8785 text stored in `_synchro_meta.local_schema`.
    public static func text(_ tables: [LocalSchemaTable]) throws -> String {
        String(decoding: try CanonicalJSON.encode(json(tables)), as: UTF8.self)
    }
}
