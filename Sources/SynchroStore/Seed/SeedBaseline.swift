/// The protocol-3 interchange baseline both upstream device SDKs migrate from (`spec/seed-format.md` §1.1,
/// §2.2): the legacy internal tables as the Swift client's migrations v1 … v8 leave them, recorded in
/// `grdb_migrations`, and `PRAGMA user_version = 6` for the Kotlin client.
public enum SeedBaseline {
    /// `PRAGMA user_version` of a seed (the Kotlin SDK upgrades from 6).
    public static let userVersion: Int64 = 6

    /// The Swift migration identifiers a seed records, exactly these and no others.
    public static let migrationIdentifiers: [String] = [
        "synchro_v1", "synchro_v2_buckets", "synchro_v3_scopes", "synchro_v4_scope_integrity",
        "synchro_v5_rejected_mutations", "synchro_v6_protocol_3", "synchro_v7_pending_local_revision",
        "synchro_v8_sealed_push_batches",
    ]

    /// The internal tables in the order the writer creates them.
    public static let tables: [InternalTable] = [
        InternalTable(
            name: "_synchro_pending_changes",
            columns: [
                .init("record_id", "TEXT", notNull: true, primaryKey: 2),
                .init("table_name", "TEXT", notNull: true, primaryKey: 1),
                .init("operation", "TEXT", notNull: true),
                .init("base_updated_at", "TEXT"),
                .init("client_updated_at", "TEXT", notNull: true),
                .init("local_revision", "INTEGER", notNull: true, defaultSQL: "0"),
            ],
            tableConstraint: "PRIMARY KEY (table_name, record_id)", mustBeEmpty: true),
        InternalTable(
            name: "_synchro_meta",
            columns: [
                .init("key", "TEXT", primaryKey: 1),
                .init("value", "TEXT", notNull: true),
            ]),
        InternalTable(
            name: "grdb_migrations",
            columns: [.init("identifier", "TEXT", notNull: true, primaryKey: 1)]),
        InternalTable(
            name: "_synchro_scopes",
            columns: [
                .init("scope_id", "TEXT", primaryKey: 1),
                .init("cursor", "TEXT"),
                .init("checksum", "TEXT"),
                .init("generation", "INTEGER", notNull: true, defaultSQL: "0"),
                .init("local_checksum", "TEXT", notNull: true, defaultSQL: "''"),
            ]),
        InternalTable(
            name: "_synchro_scope_rows",
            columns: [
                .init("scope_id", "TEXT", notNull: true, primaryKey: 1),
                .init("table_name", "TEXT", notNull: true, primaryKey: 2),
                .init("record_id", "TEXT", notNull: true, primaryKey: 3),
                .init("checksum", "TEXT", notNull: true),
                .init("generation", "INTEGER", notNull: true, defaultSQL: "0"),
            ],
            tableConstraint: "PRIMARY KEY (scope_id, table_name, record_id)",
            indexes: [
                InternalIndex(
                    name: "idx_synchro_scope_rows_record", columns: ["table_name", "record_id"],
                    sql: "CREATE INDEX idx_synchro_scope_rows_record ON _synchro_scope_rows (table_name, record_id)")
            ]),
        InternalTable(
            name: "_synchro_seed_receipts",
            columns: [
                .init("scope_id", "TEXT", primaryKey: 1),
                .init("receipt", "TEXT", notNull: true),
                .init("schema_version", "INTEGER", notNull: true),
                .init("schema_hash", "TEXT", notNull: true),
                .init("cardinality", "INTEGER", notNull: true),
                .init("checksum", "TEXT", notNull: true),
            ]),
        InternalTable(
            name: "_synchro_row_versions",
            columns: [
                .init("table_name", "TEXT", notNull: true, primaryKey: 1),
                .init("record_id", "TEXT", notNull: true, primaryKey: 2),
                .init("server_version", "TEXT", notNull: true),
                .init("row_checksum", "TEXT"),
            ],
            tableConstraint: "PRIMARY KEY (table_name, record_id)"),
        InternalTable(
            name: "_synchro_rebuild_attempts",
            columns: [
                .init("scope_id", "TEXT", primaryKey: 1),
                .init("rebuild_id", "TEXT", notNull: true),
                .init("client_generation", "INTEGER", notNull: true),
                .init("schema_version", "INTEGER", notNull: true),
                .init("schema_hash", "TEXT", notNull: true),
                .init("generation", "INTEGER", notNull: true),
                .init("cursor", "TEXT"),
                .init("page_limit", "INTEGER", notNull: true),
            ],
            mustBeEmpty: true),
        InternalTable(
            name: "_synchro_push_batches",
            columns: [
                .init("batch_id", "TEXT", primaryKey: 1),
                .init("request_json", "TEXT", notNull: true),
                .init("pending_json", "TEXT", notNull: true),
                .init("schema_json", "TEXT", notNull: true),
                .init("state", "TEXT", notNull: true),
                .init("created_at", "TEXT", notNull: true),
                .init("completed_at", "TEXT"),
            ],
            mustBeEmpty: true),
        InternalTable(
            name: "_synchro_rejected_mutations",
            columns: [
                .init("mutation_id", "TEXT", primaryKey: 1),
                .init("table_name", "TEXT", notNull: true),
                .init("record_id", "TEXT", notNull: true),
                .init("status", "TEXT", notNull: true),
                .init("code", "TEXT", notNull: true),
                .init("message", "TEXT"),
                .init("server_row_json", "TEXT"),
                .init("server_version", "TEXT"),
                .init("created_at", "TEXT", notNull: true),
                .init("updated_at", "TEXT", notNull: true),
            ],
            indexes: [
                InternalIndex(
                    name: "idx_synchro_rejected_mutations_record", columns: ["table_name", "record_id"],
                    sql: "CREATE INDEX idx_synchro_rejected_mutations_record "
                        + "ON _synchro_rejected_mutations (table_name, record_id)")
            ],
            mustBeEmpty: true),
    ]

    /// Words the stored `CREATE TABLE` text of an internal table must not contain (`spec/seed-format.md` §2.2).
    public static let forbiddenWords: [String] = [
        "AS", "ASC", "AUTOINCREMENT", "CHECK", "COLLATE", "CONFLICT", "CONSTRAINT", "DEFERRABLE", "DESC",
        "GENERATED", "ON", "REFERENCES", "STRICT", "STORED", "UNIQUE", "VIRTUAL", "WITHOUT",
    ]

    /// The internal table named exactly `name`.
    public static func table(named name: String) -> InternalTable? {
        tables.first { $0.name == name }
    }
}

/// One internal table of the baseline with the exact shape `PRAGMA table_info` must report.
public struct InternalTable: Sendable {
    /// One column: declared type, NOT NULL, primary-key ordinal (0 = not in the key) and default text.
    public struct Column: Sendable, Equatable {
        public let name: String
        public let declaredType: String
        public let notNull: Bool
        public let primaryKey: Int
        public let defaultSQL: String?

        init(_ name: String, _ declaredType: String, notNull: Bool = false, primaryKey: Int = 0, defaultSQL: String? = nil) {
            self.name = name
            self.declaredType = declaredType
            self.notNull = notNull
            self.primaryKey = primaryKey
            self.defaultSQL = defaultSQL
        }
    }

    public let name: String
    public let columns: [Column]
    /// A composite primary key clause, or nil when one column carries ` PRIMARY KEY`.
    public let tableConstraint: String?
    /// Named indexes besides the primary-key autoindex.
    public let indexes: [InternalIndex]
    /// Whether a seed must hold no row (queues and work tables).
    public let mustBeEmpty: Bool

    init(
        name: String, columns: [Column], tableConstraint: String? = nil, indexes: [InternalIndex] = [],
        mustBeEmpty: Bool = false
    ) {
        self.name = name
        self.columns = columns
        self.tableConstraint = tableConstraint
        self.indexes = indexes
        self.mustBeEmpty = mustBeEmpty
    }

    /// The `CREATE TABLE` statement the writer runs.
    public var createSQL: String {
        var parts = columns.map { column -> String in
            var text = "\(column.name) \(column.declaredType)"
            if column.notNull { text += " NOT NULL" }
            if column.primaryKey == 1 && tableConstraint == nil { text += " PRIMARY KEY" }
            if let value = column.defaultSQL { text += " DEFAULT \(value)" }
            return text
        }
        if let tableConstraint { parts.append(tableConstraint) }
        return "CREATE TABLE \(name) (\(parts.joined(separator: ", ")))"
    }
}

/// One named index of an internal table.
public struct InternalIndex: Sendable, Equatable {
    public let name: String
    public let columns: [String]
    /// The statement the writer runs, which is also the text `sqlite_schema` stores.
    public let sql: String
}
