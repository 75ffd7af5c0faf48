import SynchroProtocol

/// A verified schema manifest together with the JSON it came from and the local schema derived from it
/// (`spec/client-store.md` §5.1).
///
/// The JSON is kept because the local layout follows the manifest as listed: tables and columns in the
/// manifest's own order (``SchemaManifest`` sorts them by ID for hashing). Construction verifies the hash,
/// as the client contract requires before any synced table or authored intent exists.
public struct ClientManifest: Sendable {
    /// The validated manifest (hash verified).
    public let manifest: SchemaManifest
    /// The manifest object as received.
    public let json: JSONValue
    /// One LocalSchemaTable per manifest table, in manifest order.
    public let localSchema: [LocalSchemaTable]

    /// Verifies `json` and derives the local schema.
    public init(json: JSONValue) throws(SchemaApplicationError) {
        do {
            manifest = try SchemaManifest(json: json)
        } catch {
            throw .invalidManifest(error)
        }
        self.json = json
        localSchema = Self.derive(manifest: manifest, json: json)
        try Self.checkTableNames(localSchema)
    }

    /// Parses strict JSON octets, then verifies as ``init(json:)`` does.
    public init(bytes: [UInt8]) throws(SchemaApplicationError) {
        let json: JSONValue
        do {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw .invalidManifest(.malformedJSON(error))
        }
        try self.init(json: json)
    }

    /// The `{version, hash}` reference of the manifest.
    public var reference: SchemaReference { manifest.reference }

    /// The RFC 8785 form of the manifest as received: the `schema_manifest` meta value written on activation.
    package var canonicalJSON: String {
        // The manifest validated, so its strings and numbers have canonical forms.
        (try? CanonicalJSON.string(json)) ?? ""
    }

    private static func derive(manifest: SchemaManifest, json: JSONValue) -> [LocalSchemaTable] {
        let listed = json.objectValue?["tables"]?.arrayValue ?? []
        return listed.compactMap { value in
            guard let tableID = value.objectValue?["table_id"]?.stringValue, let table = manifest.table(id: tableID)
            else { return nil }
            let fieldOrder = (value.objectValue?["fields"]?.arrayValue ?? []).compactMap {
                $0.objectValue?["field_id"]?.stringValue
            }
            let indexOrder = (value.objectValue?["indexes"]?.arrayValue ?? []).compactMap {
                $0.objectValue?["index_id"]?.stringValue
            }
            return localTable(table, fieldOrder: fieldOrder, indexOrder: indexOrder)
        }
    }

    private static func localTable(
        _ table: ManifestTable, fieldOrder: [String], indexOrder: [String]
    ) -> LocalSchemaTable {
        let fields = fieldOrder.compactMap(table.field(id:))
        let columns = fields.map { field in
            LocalSchemaColumn(
                fieldID: field.fieldID, name: field.name, logicalType: field.type, nullable: field.nullable,
                writable: field.writable, precision: field.spec.precision, scale: field.spec.scale,
                sqliteDefaultSQL: nil, isPrimaryKey: field.fieldID.exactlyEquals(table.primaryKeyFieldID))
        }
        let indexes = indexOrder.compactMap { id in table.indexes.first { $0.indexID.exactlyEquals(id) } }.map {
            LocalSchemaIndex(indexID: $0.indexID, name: $0.name, fieldIDs: $0.fieldIDs, unique: $0.unique)
        }
        let lifecycle = table.lifecycle
        return LocalSchemaTable(
            tableID: table.tableID, relationID: table.relationID, tableName: table.name,
            primaryKeyFieldID: table.primaryKeyFieldID, createdAtFieldID: lifecycle.createdAtFieldID,
            updatedAtFieldID: lifecycle.updatedAtFieldID, deletedAtFieldID: lifecycle.deletedAtFieldID,
            updatedAtColumn: lifecycle.updatedAtFieldID.flatMap { table.field(id: $0)?.name } ?? "",
            deletedAtColumn: lifecycle.deletedAtFieldID.flatMap { table.field(id: $0)?.name } ?? "",
            composition: table.composition.rawValue, primaryKey: [table.primaryKeyField.name],
            columns: columns, indexes: indexes)
    }

    /// Refuses names a server may not give: a synced table or an index in the client's own namespaces
    /// (`_synchro_…`, `sqlite_…`, `grdb_migrations`, the client's internal index names), and two objects SQLite would take for one (tables and indexes share one case-insensitive namespace).
    /// Without this a manifest index named like a client index is skipped by `CREATE INDEX IF NOT EXISTS`, and
    /// removing it from the next version drops the client's own index (issue #19).
    private static func checkTableNames(_ tables: [LocalSchemaTable]) throws(SchemaApplicationError) {
        var seen: Set<String> = []
        for table in tables {
            let key = SQLName.normalized(table.tableName)
            guard !SQLName.isClientOwned(table.tableName) else { throw .reservedTableName(table.tableName) }
            guard seen.insert(key).inserted else { throw .duplicateTableName(table.tableName) }
        }
        for table in tables {
            for index in table.indexes {
                guard !SQLName.isClientOwned(index.name) else {
                    throw .reservedIndexName(table: table.tableName, index: index.name)
                }
                guard seen.insert(SQLName.normalized(index.name)).inserted else {
                    throw .duplicateIndexName(table: table.tableName, index: index.name)
                }
            }
        }
    }
}
