/// One synced table of a validated manifest (`spec/wire-protocol.md` §7.2), with its fields and
/// indexes in ascending UTF-8 order of their IDs, as the row body and the schema hash need them.
public struct ManifestTable: Sendable {
    /// How many scope provenance edges a row of the table may have.
    public enum Composition: String, Sendable, CaseIterable {
        case singleScope = "single_scope"
        case multiScope = "multi_scope"

        /// The composition spelled exactly `wireName`.
        public init?(wireName: String) {
            guard let match = Self.allCases.first(where: { $0.rawValue.exactlyEquals(wireName) }) else { return nil }
            self = match
        }
    }

    /// The optional server-maintained timestamp fields; each names a non-writable datetime field.
    public struct Lifecycle: Sendable {
        /// The field holding the creation time, if the table has one.
        public let createdAtFieldID: String?
        /// The field holding the last update time, if the table has one.
        public let updatedAtFieldID: String?
        /// The field holding the soft-delete time, if the table has one.
        public let deletedAtFieldID: String?
    }

    /// Immutable logical ID: the wire `table` value and part of every row identity.
    public var tableID: String { storage.tableID }
    /// Immutable server relation ID (informational for clients).
    public var relationID: String { storage.relationID }
    /// Local table name, for DDL only; never an identity.
    public var name: String { storage.name }
    /// Whether a row may belong to one scope or to several.
    public var composition: Composition { storage.composition }
    /// The one key field, listed in ``fields``.
    public var primaryKeyFieldID: String { storage.primaryKeyFieldID }
    /// Server-maintained timestamp fields.
    public var lifecycle: Lifecycle { storage.lifecycle }
    /// Every synced field exactly once, sorted by `field_id` (unsigned UTF-8 octets).
    public var fields: [ManifestField] { storage.fields }
    /// The complete client-owned index set, sorted by `index_id`.
    public var indexes: [ManifestIndex] { storage.indexes }

    /// Position of each field in ``fields``, so a wide row is matched in one pass.
    var fieldPositions: [ExactStringKey: Int] { storage.fieldPositions }
    /// Position of the primary key in ``fields``.
    var primaryKeyPosition: Int { storage.primaryKeyPosition }
    /// `ROW_ID_DOMAIN || text(table_id) || text(pk_field_id)`: the constant start of every identity.
    var identityPrefix: [UInt8] { storage.identityPrefix }

    /// One immutable allocation behind the value, so handing a table to the row digest per row
    /// costs one reference count instead of one per member.
    private let storage: Storage

    private final class Storage: Sendable {
        let tableID: String
        let relationID: String
        let name: String
        let composition: Composition
        let primaryKeyFieldID: String
        let lifecycle: Lifecycle
        let fields: [ManifestField]
        let indexes: [ManifestIndex]
        let fieldPositions: [ExactStringKey: Int]
        let primaryKeyPosition: Int
        let identityPrefix: [UInt8]

        init(
            tableID: String, relationID: String, name: String, composition: Composition,
            primaryKeyFieldID: String, lifecycle: Lifecycle, fields: [ManifestField], indexes: [ManifestIndex]
        ) {
            self.tableID = tableID
            self.relationID = relationID
            self.name = name
            self.composition = composition
            self.primaryKeyFieldID = primaryKeyFieldID
            self.lifecycle = lifecycle
            self.fields = fields
            self.indexes = indexes
            var positions: [ExactStringKey: Int] = [:]
            positions.reserveCapacity(fields.count)
            for (i, field) in fields.enumerated() { positions[ExactStringKey(field.fieldID)] = i }
            self.fieldPositions = positions
            self.primaryKeyPosition = positions[ExactStringKey(primaryKeyFieldID)] ?? 0
            var prefix = OctetWriter(domain: RowIdentity.domain, capacity: 64)
            prefix.appendText(tableID)
            prefix.appendText(primaryKeyFieldID)
            self.identityPrefix = prefix.bytes
        }
    }

    init(
        tableID: String, relationID: String, name: String, composition: Composition,
        primaryKeyFieldID: String, lifecycle: Lifecycle, fields: [ManifestField], indexes: [ManifestIndex]
    ) {
        storage = Storage(
            tableID: tableID, relationID: relationID, name: name, composition: composition,
            primaryKeyFieldID: primaryKeyFieldID, lifecycle: lifecycle, fields: fields, indexes: indexes)
    }

    /// The field with exactly this ID, or nil.
    public func field(id: String) -> ManifestField? {
        fieldPositions[ExactStringKey(id)].map { fields[$0] }
    }

    /// The primary-key field (type `string`, `int` or `int64`, not nullable, not writable).
    public var primaryKeyField: ManifestField { fields[primaryKeyPosition] }
}

/// One synced field: its immutable ID, local column name, value spec and writability.
public struct ManifestField: Sendable {
    /// Immutable ID: the member name in rows, `pk` and `columns`.
    public let fieldID: String
    /// Local column name, for DDL only; never an identity.
    public let name: String
    /// Type, nullability and decimal precision/scale: everything value validation needs.
    public let spec: FieldSpec
    /// Whether pushes may author the field (keys, versions and lifecycle fields never are).
    public let writable: Bool
    /// `text(field_id)`, precomputed because every row body repeats it.
    let textPrefix: [UInt8]

    init(fieldID: String, name: String, spec: FieldSpec, writable: Bool) {
        self.fieldID = fieldID
        self.name = name
        self.spec = spec
        self.writable = writable
        var prefix = OctetWriter(capacity: fieldID.utf8.count + 8)
        prefix.appendText(fieldID)
        self.textPrefix = prefix.bytes
    }

    /// The field's portable type.
    public var type: PortableType { spec.type }
    /// Whether SQL null is allowed.
    public var nullable: Bool { spec.nullable }
}

/// One client-owned index: an ordered, nonempty list of known field IDs.
public struct ManifestIndex: Sendable {
    /// Immutable index ID, unique within the table.
    public let indexID: String
    /// Local index name, for DDL only.
    public let name: String
    /// Indexed fields in their meaningful order (never re-sorted).
    public let fieldIDs: [String]
    /// Whether the index enforces uniqueness locally.
    public let unique: Bool
}
