import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The migration plan of a connect schema action over an installed schema (`spec/client-store.md` §4.13, §10):
/// the operations, in the order they run, that take the synced tables from the source local schema to the
/// target. The plan is derived from the two local schemas alone, so the same inputs always give the same plan
/// (and plan hash): a resumed migration re-derives it and requires equality with the journal's.
///
/// A compatible plan (`replace`, `rebuild_local`) applies every change the server can publish as Class 2 or 3
/// (`spec/wire-protocol.md` §12.2): new tables, new columns (nullable locally whatever the manifest says, as the
/// manifest carries no default: `spec/client-store.md` §5.3), `nullable false → true` (a table rebuild), indexes
/// added or dropped, and metadata-only changes (writability, composition, relation). It refuses what no compatible
/// transition contains (a removed synced table or column, a renamed table or column, a changed type or key,
/// tightened nullability) with ``SchemaApplicationError/incompatibleChange(table:rule:)``, so a contract breach never
/// silently reshapes local data. A reset plan (`schema_reset`) drops every synced table and recreates the target's. Local-only tables are
/// never touched.
struct SchemaMigrationPlan: Equatable {
    /// `migration_plan_version`.
    static let version: Int64 = 1

    /// One step (`spec/client-store.md` §4.13 plan kinds; `drop_index` removes an index the target no longer
    /// declares).
    enum Operation: Equatable {
        case dropTable(name: String)
        case clearSyncedMaterialization
        case createTable(tableID: String)
        case dropIndex(name: String)
        case createIndex(tableID: String, indexID: String)
        case relaxNullability(tableID: String, fieldIDs: [String])
        case addColumn(tableID: String, fieldID: String)
        case reinstallCapture
        case activateManifest
        case applyScopeState

        var json: JSONValue {
            func object(_ kind: String, _ members: [JSONMember] = []) -> JSONValue {
                .object(JSONObject([JSONMember("kind", .string(kind))] + members))
            }
            return switch self {
            case .dropTable(let name): object("drop_table", [JSONMember("table", .string(name))])
            case .clearSyncedMaterialization: object("clear_synced_materialization")
            case .createTable(let id): object("create_table", [JSONMember("table_id", .string(id))])
            case .dropIndex(let name): object("drop_index", [JSONMember("index", .string(name))])
            case .createIndex(let table, let index):
                object("create_index", [JSONMember("table_id", .string(table)), JSONMember("index_id", .string(index))])
            case .relaxNullability(let table, let fields):
                object("relax_nullability", [
                    JSONMember("table_id", .string(table)), JSONMember("field_ids", .array(fields.map(JSONValue.string))),
                ])
            case .addColumn(let table, let field):
                object("add_column", [JSONMember("table_id", .string(table)), JSONMember("field_id", .string(field))])
            case .reinstallCapture: object("reinstall_capture")
            case .activateManifest: object("activate_manifest")
            case .applyScopeState: object("apply_scope_state")
            }
        }
    }

    let source: SchemaReference?
    let target: SchemaReference
    let isReset: Bool
    let operations: [Operation]

    /// The sorted-key plan JSON stored in `migration_plan_json`.
    var canonicalJSON: String {
        let json = JSONValue.object(JSONObject([
            JSONMember("plan_version", .number(JSONNumber(Self.version))),
            JSONMember("source", source.map(Self.referenceJSON) ?? .null),
            JSONMember("target", Self.referenceJSON(target)),
            JSONMember("schema_reset", .bool(isReset)),
            JSONMember("operations", .array(operations.map(\.json))),
        ]))
        // Identifiers and integers only: the canonical form always exists.
        return (try? CanonicalJSON.string(json)) ?? ""
    }

    /// `migration_plan_hash`: lowercase hex SHA-256 of the domain, 0x00 and the sorted-key plan JSON.
    var hash: String {
        Hex.encode(SHA256.hash(Array("synchro:v3:client-migration-plan:v1".utf8) + [0] + Array(canonicalJSON.utf8)))
    }

    private static func referenceJSON(_ reference: SchemaReference) -> JSONValue {
        .object(JSONObject([
            JSONMember("version", .number(JSONNumber(reference.version))), JSONMember("hash", .string(reference.hash)),
        ]))
    }

    // MARK: Derivation

    /// The plan from `source` (the active local schema) to `target`; throws
    /// ``SchemaApplicationError/incompatibleChange(table:rule:)`` for a change no compatible transition contains.
    static func derive(
        from source: [LocalSchemaTable], sourceReference: SchemaReference?, to target: ClientManifest, reset: Bool
    ) throws(ClientStoreError) -> SchemaMigrationPlan {
        var operations: [Operation] = []
        let targetTables = target.localSchema.sorted { $0.tableID.utf8.lexicographicallyPrecedes($1.tableID.utf8) }
        if reset {
            let sourceTables = source.sorted { $0.tableID.utf8.lexicographicallyPrecedes($1.tableID.utf8) }
            operations += sourceTables.reversed().map { .dropTable(name: $0.tableName) }
            operations.append(.clearSyncedMaterialization)
            for table in targetTables {
                operations.append(.createTable(tableID: table.tableID))
                operations += table.indexes.map { .createIndex(tableID: table.tableID, indexID: $0.indexID) }
            }
        } else {
            let targetIDs = Set(targetTables.map(\.tableID))
            if let removed = source.first(where: { !targetIDs.contains($0.tableID) }) {
                throw .schemaApplication(.incompatibleChange(table: removed.tableName, rule: "table_removed"))
            }
            for table in targetTables {
                operations += try additiveOperations(table, previous: source.first { $0.tableID == table.tableID })
            }
        }
        operations += [.reinstallCapture, .activateManifest, .applyScopeState]
        return SchemaMigrationPlan(
            source: sourceReference, target: target.reference, isReset: reset, operations: operations)
    }

    /// Per table (`spec/client-store.md` §4.13 order): `relax_nullability`, then new columns in target field order,
    /// then dropped indexes (only ones the source schema declared, so an application's own index is never
    /// touched), then new indexes. A column that changes only `writable` needs no DDL: the capture triggers are
    /// reinstalled from the target for every table.
    private static func additiveOperations(
        _ table: LocalSchemaTable, previous: LocalSchemaTable?
    ) throws(ClientStoreError) -> [Operation] {
        guard let previous else {
            return [.createTable(tableID: table.tableID)]
                + table.indexes.map { .createIndex(tableID: table.tableID, indexID: $0.indexID) }
        }
        func refuse(_ rule: String) -> ClientStoreError {
            .schemaApplication(.incompatibleChange(table: table.tableName, rule: rule))
        }
        guard SQLName.normalized(previous.tableName) == SQLName.normalized(table.tableName) else {
            throw refuse("table_renamed")
        }
        var relaxed: [String] = []
        var added: [Operation] = []
        for column in table.columns {
            guard let old = previous.column(fieldID: column.fieldID) else {
                guard !column.isPrimaryKey else { throw refuse("key_changed") }
                added.append(.addColumn(tableID: table.tableID, fieldID: column.fieldID))
                continue
            }
            guard SQLName.normalized(old.name) == SQLName.normalized(column.name) else { throw refuse("field_renamed") }
            guard old.logicalType == column.logicalType else { throw refuse("field_type_changed") }
            guard old.isPrimaryKey == column.isPrimaryKey else { throw refuse("key_changed") }
            let wasNullable = old.nullable || old.isPrimaryKey, isNullable = column.nullable || column.isPrimaryKey
            guard wasNullable || !isNullable else {
                relaxed.append(column.fieldID)
                continue
            }
            guard wasNullable == isNullable else { throw refuse("nullability_tightened") }
        }
        guard previous.columns.allSatisfy({ table.column(fieldID: $0.fieldID) != nil }) else {
            throw refuse("field_removed")
        }
        var operations: [Operation] = relaxed.isEmpty ? [] : [.relaxNullability(tableID: table.tableID, fieldIDs: relaxed)]
        operations += added
        for index in previous.indexes where !table.indexes.contains(index) {
            operations.append(.dropIndex(name: index.name))
        }
        for index in table.indexes where !previous.indexes.contains(index) {
            operations.append(.createIndex(tableID: table.tableID, indexID: index.indexID))
        }
        return operations
    }
}

/// Runs a plan inside the caller's schema-migration transaction (capture suppressed, foreign keys off).
struct SchemaMigrationExecutor {
    let connection: Connection
    let source: [LocalSchemaTable]
    let target: ClientManifest
    /// `activate_manifest`.
    let activate: (Connection) throws -> Void
    /// `apply_scope_state`: cursor replacements, affected scopes, and the connect's assignment when present.
    let applyScopeState: (Connection) throws -> Void

    func run(_ plan: SchemaMigrationPlan) throws {
        try validatePhysicalSource(plan)
        // Protected rows (unresolved intent, or a retained terminal rejection: `spec/client-store.md` §9) survive
        // a reset: copied out before the drop, restored before the capture triggers come back (§10).
        let kept = plan.isReset ? try protectedRows() : []
        for operation in plan.operations {
            if operation == .reinstallCapture { try restore(kept) }
            try execute(operation)
        }
        try validatePhysicalTarget()
    }

    private func targetTable(_ id: String) throws -> LocalSchemaTable {
        guard let table = target.localSchema.first(where: { $0.tableID == id }) else {
            throw ClientStoreError.invalidLocalSchema(reason: "the plan names a table the target lacks")
        }
        return table
    }

    private func execute(_ operation: SchemaMigrationPlan.Operation) throws {
        switch operation {
        case .dropTable(let name):
            try connection.execute("DROP TABLE IF EXISTS \(SQLiteIdentifier.quote(name))")
        case .clearSyncedMaterialization:
            for table in [
                "_synchro_scope_rows", "_synchro_row_versions", "_synchro_rebuild_page_receipts",
                "_synchro_rebuild_attempts", "_synchro_backoff",
            ] {
                try connection.execute("DELETE FROM \(table)")
            }
            try connection.execute("""
                UPDATE _synchro_scopes SET cursor = NULL, checksum = NULL, local_checksum = '',
                    generation = generation + 1
                """)
        case .createTable(let id):
            try connection.execute(SyncedTableDDL.createTable(try targetTable(id)))
        case .dropIndex(let name):
            // Only an index the manifests own: one of that name that is not theirs stays (issue #19).
            for table in source {
                for index in table.indexes where index.name == name {
                    try ManifestIndexOwnership.drop(index, of: table, connection: connection)
                }
            }
        case .createIndex(let tableID, let indexID):
            let table = try targetTable(tableID)
            if let index = table.indexes.first(where: { $0.indexID == indexID }) {
                try ManifestIndexOwnership.create(index, on: table, connection: connection)
            }
        case .addColumn(let tableID, let fieldID):
            let table = try targetTable(tableID)
            guard let column = table.column(fieldID: fieldID) else {
                throw ClientStoreError.invalidLocalSchema(reason: "the plan names a field the target lacks")
            }
            // Nullable whatever the manifest says: existing rows have no value until a rebuild or pull rewrites
            // them, and a manifest carries no default (`spec/client-store.md` §5.3).
            var definition = "\(SQLiteIdentifier.quote(column.name)) \(SyncedTableDDL.declaredType(column.logicalType))"
            if let defaultSQL = column.sqliteDefaultSQL, !defaultSQL.isEmpty {
                definition += " DEFAULT \(defaultSQL)"
            }
            try connection.execute("ALTER TABLE \(SQLiteIdentifier.quote(table.tableName)) ADD COLUMN \(definition)")
        case .relaxNullability(let tableID, let fieldIDs):
            let table = try targetTable(tableID)
            let names = try fieldIDs.map { fieldID in
                guard let column = table.column(fieldID: fieldID) else {
                    throw ClientStoreError.invalidLocalSchema(reason: "the plan names a field the target lacks")
                }
                return column.name
            }
            try SyncedTableRebuild.relaxNullability(
                table: table.tableName, tableID: tableID, relaxing: names, on: connection)
        case .reinstallCapture:
            try CaptureTriggerInstaller.install(target.localSchema, on: connection)
        case .activateManifest:
            try activate(connection)
        case .applyScopeState:
            try applyScopeState(connection)
        }
    }

    /// Every source table exists with its recorded layout, and no new target table collides with a table the
    /// client does not own (a local-only table is never adopted or altered).
    private func validatePhysicalSource(_ plan: SchemaMigrationPlan) throws {
        for table in source where !(try PhysicalTable.matches(table, on: connection)) {
            throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
        }
        let owned = Set(source.map { SQLName.normalized($0.tableName) })
        for table in target.localSchema where !owned.contains(SQLName.normalized(table.tableName)) {
            if try !connection.columns(of: table.tableName).isEmpty {
                throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
            }
        }
    }

    private func validatePhysicalTarget() throws {
        for table in target.localSchema where !(try PhysicalTable.matches(table, on: connection)) {
            throw ClientStoreError.schemaApplication(.tableConflict(table.tableName))
        }
    }

    /// The protected local rows of every source table (`spec/client-store.md` §9), as column name → value.
    private func protectedRows() throws -> [(table: String, columns: [String], values: [SQLiteValue])] {
        var rows: [(table: String, columns: [String], values: [SQLiteValue])] = []
        for table in source {
            guard let key = table.primaryKeyColumn else { continue }
            let columns = table.columns.map(\.name)
            let selected = try connection.rows("""
                SELECT \(columns.map(SQLiteIdentifier.quote).joined(separator: ", "))
                FROM \(SQLiteIdentifier.quote(table.tableName))
                WHERE CAST(\(SQLiteIdentifier.quote(key.name)) AS TEXT) IN (\(LocalRows.protectedRecordIDsSQL))
                """, [.text(table.tableName), .text(table.tableName)])
            rows += selected.map { (table.tableName, columns, $0) }
        }
        return rows
    }

    /// Puts protected rows back where the target still has their table, with the columns it still has.
    private func restore(_ rows: [(table: String, columns: [String], values: [SQLiteValue])]) throws {
        for row in rows {
            guard let table = target.localSchema.first(where: {
                SQLName.normalized($0.tableName) == SQLName.normalized(row.table)
            }) else { continue }
            let kept = zip(row.columns, row.values).filter { table.column(named: $0.0) != nil }
            try connection.run("""
                INSERT OR IGNORE INTO \(SQLiteIdentifier.quote(table.tableName))
                    (\(kept.map { SQLiteIdentifier.quote($0.0) }.joined(separator: ", ")))
                VALUES (\(Array(repeating: "?", count: kept.count).joined(separator: ", ")))
                """, kept.map(\.1))
        }
    }
}

/// The physical layout check of a synced table: every declared column exists with its declared type and key
/// role, a column the schema declares nullable is not `NOT NULL` in the file, and nothing else exists. Position
/// is not compared, nor `NOT NULL` on a column the schema declares non-nullable (a migration appends columns
/// nullable at the end: `spec/client-store.md` §5.3).
enum PhysicalTable {
    static func matches(_ table: LocalSchemaTable, on connection: Connection) throws -> Bool {
        let physical = try connection.columns(of: table.tableName)
        guard physical.count == table.columns.count else { return false }
        let byName = Dictionary(physical.map { (SQLName.normalized($0.name), $0) }) { first, _ in first }
        return table.columns.allSatisfy { column in
            guard let info = byName[SQLName.normalized(column.name)] else { return false }
            return info.declaredType == SyncedTableDDL.declaredType(column.logicalType)
                && info.isPrimaryKey == column.isPrimaryKey
                && (!info.isNotNull || !column.nullable || column.isPrimaryKey)
        }
    }
}
