import SynchroProtocol

/// The client-visible difference between the current manifest and a proposed successor, and the
/// least transition class that describes it (`spec/wire-protocol.md` §12.2).
///
/// The order of §12.2 is applied per change: removing or renaming a table or field, changing a
/// field's type, tightening nullability, removing writability, changing the lifecycle or an
/// existing index is Class 4; a change that gives existing rows other values than null (a new field
/// with a server default or without null), a composition change or a relation reconfiguration
/// needs rematerialization (Class 3); a new nullable field, a new (empty) table, a new or dropped
/// index, `nullable false → true` and `writable false → true` are Class 2. Key changes are refused
/// outright: protocol 3 makes a new key a new table ID, because the row identity contains the key
/// field and type.
struct SchemaTransition {
    /// How much a change demands of clients, ordered so the largest decides.
    enum Requirement: Int, Comparable {
        /// Class 2: clients replace the manifest and keep every row and cursor.
        case compatible = 2
        /// Class 3: historical rows change; the scopes holding them are rebuilt.
        case rematerializing = 3
        /// Class 4: the old contract cannot be served as compatible.
        case incompatible = 4

        static func < (lhs: Requirement, rhs: Requirement) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The `transition_class` that names exactly this requirement.
        var transitionClass: SchemaManifest.TransitionClass {
            switch self {
            case .compatible: .class2
            case .rematerializing: .class3
            case .incompatible: .class4
            }
        }
    }

    /// One client-visible change, named by a rule (`docs/server.md` lists them).
    struct Change: Equatable {
        let requirement: Requirement
        let rule: String
        let tableID: String
        var fieldID: String?

        var json: JSONValue {
            var members = [JSONMember("rule", .string(rule)), JSONMember("table_id", .string(tableID))]
            if let fieldID { members.append(JSONMember("field_id", .string(fieldID))) }
            return .object(JSONObject(members))
        }
    }

    /// Every change, table by table in `table_id` order, fields in `field_id` order.
    private(set) var changes: [Change] = []
    /// Tables whose existing rows get values other than null, or change composition or relation:
    /// every scope that can hold their rows must be declared affected by a Class 3 publication.
    private(set) var rematerializedTableIDs: [String] = []

    /// The least class that covers every change; nil when nothing client-visible changed (Class 1,
    /// which never mints a manifest).
    var required: Requirement? { changes.map(\.requirement).max() }

    /// The first change that needs more than `requirement`, for the error of an under-declared class.
    func firstChange(exceeding requirement: Requirement) -> Change? {
        changes.first { $0.requirement > requirement }
    }

    /// Compares `current` with `proposed`. `defaults` are the declared values of new (or, for
    /// Class 4, retyped) fields for existing rows; they are validated here.
    init(from current: SchemaManifest, to proposed: SchemaManifest, defaults: FieldDefaults)
        throws(SchemaPublicationError)
    {
        for table in current.tables {
            guard let successor = proposed.table(id: table.tableID) else {
                record(.incompatible, "table_removed", table.tableID)
                continue
            }
            try compare(table, successor, defaults: defaults)
        }
        for table in proposed.tables where current.table(id: table.tableID) == nil {
            // A table the dataset's scope declarations do not cover has no rows: adding it is additive.
            record(.compatible, "table_added", table.tableID)
        }
        try defaults.validate(current: current, proposed: proposed)
    }

    private mutating func record(
        _ requirement: Requirement, _ rule: String, _ tableID: String, field fieldID: String? = nil
    ) {
        changes.append(Change(requirement: requirement, rule: rule, tableID: tableID, fieldID: fieldID))
        if requirement == .rematerializing && !rematerializedTableIDs.contains(where: { $0.exactlyEquals(tableID) }) {
            rematerializedTableIDs.append(tableID)
        }
    }

    private mutating func compare(_ old: ManifestTable, _ new: ManifestTable, defaults: FieldDefaults)
        throws(SchemaPublicationError)
    {
        let id = old.tableID
        guard old.primaryKeyFieldID.exactlyEquals(new.primaryKeyFieldID),
              old.primaryKeyField.spec == new.primaryKeyField.spec
        else { throw SchemaPublicationError("key_changed_in_place", table: id) }
        if !old.name.exactlyEquals(new.name) { record(.incompatible, "table_renamed", id) }
        if !Self.sameLifecycle(old.lifecycle, new.lifecycle) { record(.incompatible, "lifecycle_changed", id) }
        if old.composition != new.composition { record(.rematerializing, "composition_changed", id) }
        if !old.relationID.exactlyEquals(new.relationID) { record(.rematerializing, "relation_changed", id) }

        for field in old.fields {
            guard let successor = new.field(id: field.fieldID) else {
                record(.incompatible, "field_removed", id, field: field.fieldID)
                continue
            }
            compare(field, successor, table: id)
        }
        for field in new.fields where old.field(id: field.fieldID) == nil {
            if defaults.value(table: id, field: field.fieldID) != nil {
                record(.rematerializing, "field_added_with_values", id, field: field.fieldID)
            } else if field.nullable {
                record(.compatible, "field_added", id, field: field.fieldID)
            } else {
                // Existing rows need a value that is not null, and no value exists.
                throw SchemaPublicationError("missing_default", table: id, field: field.fieldID)
            }
        }
        compareIndexes(old, new)
    }

    private mutating func compare(_ old: ManifestField, _ new: ManifestField, table id: String) {
        let field = old.fieldID
        if !old.name.exactlyEquals(new.name) { record(.incompatible, "field_renamed", id, field: field) }
        if old.type != new.type || old.spec.precision != new.spec.precision || old.spec.scale != new.spec.scale {
            record(.incompatible, "field_type_changed", id, field: field)
        }
        if old.nullable && !new.nullable { record(.incompatible, "nullability_tightened", id, field: field) }
        if !old.nullable && new.nullable { record(.compatible, "nullability_relaxed", id, field: field) }
        if old.writable && !new.writable { record(.incompatible, "writability_removed", id, field: field) }
        if !old.writable && new.writable { record(.compatible, "writability_added", id, field: field) }
    }

    /// The index set is client-owned DDL: adding or dropping an index changes no row, but an
    /// index ID whose definition changes is an in-place change of an immutable ID.
    private mutating func compareIndexes(_ old: ManifestTable, _ new: ManifestTable) {
        let id = old.tableID
        for index in old.indexes {
            guard let successor = new.indexes.first(where: { $0.indexID.exactlyEquals(index.indexID) }) else {
                record(.compatible, "index_removed", id)
                continue
            }
            let same = index.name.exactlyEquals(successor.name) && index.unique == successor.unique
                && index.fieldIDs.count == successor.fieldIDs.count
                && zip(index.fieldIDs, successor.fieldIDs).allSatisfy { $0.exactlyEquals($1) }
            if !same { record(.incompatible, "index_changed", id) }
        }
        for index in new.indexes where !old.indexes.contains(where: { $0.indexID.exactlyEquals(index.indexID) }) {
            record(.compatible, "index_added", id)
        }
    }

    private static func sameLifecycle(_ a: ManifestTable.Lifecycle, _ b: ManifestTable.Lifecycle) -> Bool {
        func same(_ x: String?, _ y: String?) -> Bool {
            switch (x, y) {
            case (nil, nil): true
            case (let x?, let y?): x.exactlyEquals(y)
            default: false
            }
        }
        return same(a.createdAtFieldID, b.createdAtFieldID) && same(a.updatedAtFieldID, b.updatedAtFieldID)
            && same(a.deletedAtFieldID, b.deletedAtFieldID)
    }
}

/// The publication's `defaults` member: `{table_id: {field_id: value}}`, the value existing rows
/// get for a field that is new in an existing table, or — under Class 4 — for a retyped or
/// tightened field whose stored value no longer fits.
///
/// A default makes historical rows differ from what a client that only applied the new DDL holds
/// (the manifest carries no defaults), so a new field with a default is a Class 3 change.
struct FieldDefaults {
    private var values: [ExactKey: [ExactKey: JSONValue]] = [:]
    /// `(table, field)` in request order, for validation.
    private var declared: [(table: String, field: String, value: JSONValue)] = []

    init() {}

    /// Reads the member's shape; the values are checked against the proposed manifest later.
    init(json: JSONValue) throws(SchemaPublicationError) {
        guard case .object(let tables) = json else { throw SchemaPublicationError("invalid_defaults") }
        for table in tables.members {
            guard case .object(let fields) = table.value, !fields.members.isEmpty else {
                throw SchemaPublicationError("invalid_defaults", table: table.key)
            }
            for field in fields.members {
                values[ExactKey(table.key), default: [:]][ExactKey(field.key)] = field.value
                declared.append((table.key, field.key, field.value))
            }
        }
    }

    /// The declared value of one field, nil when none was declared.
    func value(table: String, field: String) -> JSONValue? {
        values[ExactKey(table)]?[ExactKey(field)]
    }

    /// Every default names a field of a table present in both manifests that is new or changed its
    /// value rules, and is a valid non-null value of the proposed field.
    func validate(current: SchemaManifest, proposed: SchemaManifest) throws(SchemaPublicationError) {
        for (tableID, fieldID, value) in declared {
            guard let old = current.table(id: tableID), let new = proposed.table(id: tableID),
                  let field = new.field(id: fieldID)
            else { throw SchemaPublicationError("default_for_unknown_field", table: tableID, field: fieldID) }
            if let previous = old.field(id: fieldID), !Self.changesValueRules(previous, field) {
                throw SchemaPublicationError("default_for_existing_field", table: tableID, field: fieldID)
            }
            guard !value.isNull, (try? PortableValue.validate(value, spec: field.spec)) != nil else {
                throw SchemaPublicationError("invalid_default", table: tableID, field: fieldID)
            }
        }
    }

    /// True when a stored value of `old` may be invalid for `new`: another type, precision or scale,
    /// or null no longer allowed.
    static func changesValueRules(_ old: ManifestField, _ new: ManifestField) -> Bool {
        old.type != new.type || old.spec.precision != new.spec.precision || old.spec.scale != new.spec.scale
            || (old.nullable && !new.nullable)
    }
}
