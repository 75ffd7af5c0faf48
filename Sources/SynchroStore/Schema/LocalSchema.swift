import SynchroProtocol

/// One synced table as the upstream client stores it in `local_schema`, in archive rows and in batches
/// (`spec/client-store.md` §5.1). Column and index names are local DDL names; the IDs are the protocol identity.
public struct LocalSchemaTable: Sendable, Equatable {
    /// Immutable logical table ID.
    public let tableID: String
    /// Server relation ID (informational).
    public let relationID: String
    /// Local table name.
    public let tableName: String
    /// The primary-key field ID.
    public let primaryKeyFieldID: String
    /// The creation-time field ID, nil when the table has none.
    public let createdAtFieldID: String?
    /// The update-time field ID, nil when the table has none.
    public let updatedAtFieldID: String?
    /// The soft-delete field ID, nil when the table has none.
    public let deletedAtFieldID: String?
    /// Column name of the update-time field, `""` when absent.
    public let updatedAtColumn: String
    /// Column name of the soft-delete field, `""` when absent (then a DELETE removes the row).
    public let deletedAtColumn: String
    /// `single_scope` or `multi_scope` when known.
    public let composition: String?
    /// The single primary-key column name.
    public let primaryKey: [String]
    /// One column per manifest field, in manifest order.
    public let columns: [LocalSchemaColumn]
    /// Client-owned indexes (empty when the stored JSON has none, as in seeds).
    public let indexes: [LocalSchemaIndex]

    /// Creates a table description.
    public init(
        tableID: String, relationID: String, tableName: String, primaryKeyFieldID: String,
        createdAtFieldID: String?, updatedAtFieldID: String?, deletedAtFieldID: String?,
        updatedAtColumn: String, deletedAtColumn: String, composition: String?, primaryKey: [String],
        columns: [LocalSchemaColumn], indexes: [LocalSchemaIndex]
    ) {
        self.tableID = tableID
        self.relationID = relationID
        self.tableName = tableName
        self.primaryKeyFieldID = primaryKeyFieldID
        self.createdAtFieldID = createdAtFieldID
        self.updatedAtFieldID = updatedAtFieldID
        self.deletedAtFieldID = deletedAtFieldID
        self.updatedAtColumn = updatedAtColumn
        self.deletedAtColumn = deletedAtColumn
        self.composition = composition
        self.primaryKey = primaryKey
        self.columns = columns
        self.indexes = indexes
    }

    /// The primary-key column (the column flagged `isPrimaryKey`, else the one named by `primaryKey`).
    public var primaryKeyColumn: LocalSchemaColumn? {
        columns.first(where: \.isPrimaryKey) ?? columns.first { $0.name == primaryKey.first }
    }

    /// Columns an application write authors (keys, versions and lifecycle fields are not writable).
    public var writableColumns: [LocalSchemaColumn] {
        columns.filter(\.writable)
    }

    /// The column with this field ID.
    public func column(fieldID: String) -> LocalSchemaColumn? {
        columns.first { $0.fieldID.exactlyEquals(fieldID) }
    }

    /// The column SQLite would resolve for `name` (identifiers compare case-insensitively in ASCII).
    public func column(named name: String) -> LocalSchemaColumn? {
        let key = SQLName.normalized(name)
        return columns.first { SQLName.normalized($0.name) == key }
    }
}

/// One column of a synced table.
public struct LocalSchemaColumn: Sendable, Equatable {
    /// The manifest field ID.
    public let fieldID: String
    /// The local column name.
    public let name: String
    /// The portable type, which fixes the declared SQLite type and the stored value kind.
    public let logicalType: PortableType
    /// Whether SQL NULL is allowed.
    public let nullable: Bool
    /// Whether application writes author the field.
    public let writable: Bool
    /// Decimal precision (decimal only).
    public let precision: Int?
    /// Decimal scale (decimal only).
    public let scale: Int?
    /// A column default; always nil when derived from a manifest.
    public let sqliteDefaultSQL: String?
    /// Whether this is the primary-key column.
    public let isPrimaryKey: Bool

    /// Creates a column description.
    public init(
        fieldID: String, name: String, logicalType: PortableType, nullable: Bool, writable: Bool,
        precision: Int?, scale: Int?, sqliteDefaultSQL: String?, isPrimaryKey: Bool
    ) {
        self.fieldID = fieldID
        self.name = name
        self.logicalType = logicalType
        self.nullable = nullable
        self.writable = writable
        self.precision = precision
        self.scale = scale
        self.sqliteDefaultSQL = sqliteDefaultSQL
        self.isPrimaryKey = isPrimaryKey
    }
}

/// One client-owned index (Swift form: field IDs, not column names).
public struct LocalSchemaIndex: Sendable, Equatable {
    /// Immutable index ID.
    public let indexID: String
    /// Local index name.
    public let name: String
    /// Indexed field IDs in index order.
    public let fieldIDs: [String]
    /// Whether the index enforces uniqueness locally.
    public let unique: Bool

    /// Creates an index description.
    public init(indexID: String, name: String, fieldIDs: [String], unique: Bool) {
        self.indexID = indexID
        self.name = name
        self.fieldIDs = fieldIDs
        self.unique = unique
    }
}

/// SQL identifier helpers shared by DDL, triggers and the application SQL policy.
package enum SQLName {
    /// SQLite folds ASCII letters only when it compares identifiers, as POSIX lowercasing does.
    package static func normalized(_ name: String) -> String {
        String(decoding: name.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// A single-quoted SQL string literal with embedded quotes doubled (for identifiers baked into trigger text).
    package static func literal(_ text: String) -> String {
        "'" + text.replacing("'", with: "''") + "'"
    }

    /// Names the application may never create, drop or write directly.
    package static func isReserved(_ name: String) -> Bool {
        let key = normalized(name)
        return key.hasPrefix("_synchro_") || key == "grdb_migrations" || key == "_grdb_migrations"
    }

    /// The client's own indexes, created by the migration steps (`spec/client-store.md` §4): a server may not
    /// name a synced index like one of them.
    package static let internalIndexNames: Set<String> = [
        "idx_synchro_mutation_values_field", "idx_synchro_pending_changes_batch",
        "idx_synchro_pending_changes_dependency", "idx_synchro_pending_changes_normalized",
        "idx_synchro_pending_changes_row_order", "idx_synchro_pending_changes_state_order",
        "idx_synchro_pending_protocol_row_order", "idx_synchro_rejected_mutations_record",
        "idx_synchro_scope_rows_record",
    ]

    /// Whether a server-provided table or index name is the client's: a reserved name, SQLite's own `sqlite_`
    /// namespace, or one of the client's internal indexes.
    package static func isClientOwned(_ name: String) -> Bool {
        let key = normalized(name)
        return isReserved(name) || key.hasPrefix("sqlite_") || internalIndexNames.contains(key)
    }

    /// SQLite's own catalog tables.
    package static func isCatalog(_ name: String) -> Bool {
        switch normalized(name) {
        case "sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema": true
        default: false
        }
    }
}
