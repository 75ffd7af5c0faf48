import SynchroProtocol

/// Builds the ``TablePlan`` of every manifest table from `generate.tables` of `dataset.json`.
struct TablePlanner {
    let manifest: SchemaManifest
    let seed: UInt64

    /// Row counts above this are refused: a trillion rows is beyond any reference-server use, and
    /// the bound keeps `rows_per_user × users` far from overflow.
    static let maxRows: Int64 = 1_000_000_000_000

    /// The base of the default lifecycle datetimes.
    static let lifecycleBase = CivilTime.daysFromCivil(year: 2024, month: 1, day: 1) * CivilTime.microsPerDay

    func plans(_ tables: JSONObject, declarations: [ScopeDeclaration]) throws(DatasetError) -> [TablePlan] {
        for member in tables.members where manifest.table(id: member.key) == nil {
            throw .dataset(.unknownTable, "generate.tables.\(member.key)")
        }
        var plans: [TablePlan] = []
        for table in manifest.tables {
            let location = "generate.tables.\(table.tableID)"
            guard let spec = tables[table.tableID] else { throw .dataset(.tableGeneratorMissing, location) }
            let owner = declarations.lazy.compactMap { declaration -> String? in
                guard case .perUser(let family) = declaration else { return nil }
                return family.ownerFieldID(forTable: table.tableID)
            }.first
            plans.append(try plan(table, spec, ownerFieldID: owner, at: location))
        }
        try checkReferences(plans)
        return plans
    }

    private func plan(
        _ table: ManifestTable, _ spec: JSONValue, ownerFieldID: String?, at location: String
    ) throws(DatasetError) -> TablePlan {
        let reader = try DatasetJSONReader(
            spec, at: location, required: ["fields"], optional: ["rows", "rows_per_user", "rows_overridable"])
        let rowCount = try Self.rowCount(reader, perUser: ownerFieldID != nil)
        guard let fields = try reader.objectMember("fields") else { throw .dataset(.memberType, reader.path("fields")) }
        let fieldsPath = reader.path("fields")
        for member in fields.members where table.field(id: member.key) == nil {
            throw .dataset(.unknownField, "\(fieldsPath).\(member.key)")
        }
        var generators: [FieldGenerator] = []
        for field in table.fields {
            let path = "\(fieldsPath).\(field.fieldID)"
            if let fieldSpec = fields[field.fieldID] {
                let parser = FieldGeneratorParser(field: field, perUser: ownerFieldID != nil, location: path)
                generators.append(try parser.parse(fieldSpec))
            } else if let generator = Self.lifecycleDefault(field, of: table) {
                generators.append(generator)
            } else {
                throw .dataset(.fieldGeneratorMissing, path)
            }
        }
        let plan = TablePlan(table: table, rowCount: rowCount, generators: generators, seed: seed)
        try Self.checkKey(plan, at: "\(fieldsPath).\(table.primaryKeyFieldID)")
        if let ownerFieldID, let index = table.fields.firstIndex(where: { $0.fieldID.exactlyEquals(ownerFieldID) }) {
            guard case .owner = generators[index].kind else {
                throw .dataset(.ownerFieldGenerator, "\(fieldsPath).\(ownerFieldID)")
            }
        }
        return plan
    }

    private static func rowCount(
        _ reader: DatasetJSONReader, perUser: Bool
    ) throws(DatasetError) -> TablePlan.RowCount {
        if perUser {
            guard !reader.has("rows"), !reader.has("rows_overridable"),
                  let rows = try reader.integer("rows_per_user", in: 0...maxRows)
            else { throw .dataset(.rowCountMismatch, reader.location) }
            return .perUser(rowsPerUser: rows)
        }
        guard !reader.has("rows_per_user"), let rows = try reader.integer("rows", in: 0...maxRows) else {
            throw .dataset(.rowCountMismatch, reader.location)
        }
        return .fixed(rows: rows, overridable: try reader.bool("rows_overridable") ?? false)
    }

    /// Lifecycle fields default to datetimes one minute apart from 2024-01-01 (`updated_at` up to a
    /// day later than `created_at`), and `deleted_at` to null when nullable.
    private static func lifecycleDefault(_ field: ManifestField, of table: ManifestTable) -> FieldGenerator? {
        let lifecycle = table.lifecycle
        let id = field.fieldID
        let minute = 60 * CivilTime.microsPerSecond
        if lifecycle.deletedAtFieldID.map(id.exactlyEquals) == true {
            return field.nullable ? FieldGenerator(kind: .null, nullRatio: 0) : nil
        }
        if lifecycle.createdAtFieldID.map(id.exactlyEquals) == true {
            let progression = TemporalProgression(base: lifecycleBase, step: minute, jitter: 0)
            return FieldGenerator(kind: .datetime(progression), nullRatio: 0)
        }
        if lifecycle.updatedAtFieldID.map(id.exactlyEquals) == true {
            let progression = TemporalProgression(base: lifecycleBase, step: minute, jitter: CivilTime.microsPerDay)
            return FieldGenerator(kind: .datetime(progression), nullRatio: 0)
        }
        return nil
    }

    /// Keys are unique by construction: random UUIDs, or a strictly increasing sequence; in a
    /// per-user table the sequence text must also embed the user followed by a non-digit, so two
    /// users' keys can never coincide (`task-{user}-` is fine, `task-{user}` is not).
    private static func checkKey(_ plan: TablePlan, at location: String) throws(DatasetError) {
        switch plan.keyGenerator.kind {
        case .uuid:
            return
        case .sequence(let format):
            guard plan.isPerUser else { return }
            guard case .text(_, let tail?, _) = format.output,
                  tail.utf8.contains(where: { $0 < UInt8(ascii: "0") || $0 > UInt8(ascii: "9") })
            else { throw .dataset(.keyGeneratorNotUnique, location) }
        default:
            throw .dataset(.keyGeneratorNotUnique, location)
        }
    }

    /// A reference targets a shared table keyed by a sequence of the referencing field's type.
    private func checkReferences(_ plans: [TablePlan]) throws(DatasetError) {
        for plan in plans {
            for (field, generator) in zip(plan.table.fields, plan.generators) {
                guard case .reference(let targetID) = generator.kind else { continue }
                let location = "generate.tables.\(plan.tableID).fields.\(field.fieldID)"
                guard let target = plans.first(where: { $0.tableID.exactlyEquals(targetID) }), !target.isPerUser,
                      case .sequence = target.keyGenerator.kind,
                      target.table.primaryKeyField.type == field.type
                else { throw .dataset(.referenceTargetInvalid, location) }
            }
        }
    }
}
