/// A validated, immutable schema manifest (`schema_definition`, `spec/wire-protocol.md` §7) whose
/// declared `schema_hash` equals the hash recomputed from its canonical body (`spec/integrity.md` §4.2).
///
/// Tables are sorted by `table_id`, fields by `field_id` and indexes by `index_id` (unsigned UTF-8
/// octets), whatever order the server listed them in.
public struct SchemaManifest: Sendable {
    /// How this manifest relates to its parent (`spec/wire-protocol.md` §12.2).
    public enum TransitionClass: String, Sendable, CaseIterable {
        case initial
        case class2 = "class_2"
        case class3 = "class_3"
        case class4 = "class_4"

        /// The class spelled exactly `wireName`.
        public init?(wireName: String) {
            guard let match = Self.allCases.first(where: { $0.rawValue.exactlyEquals(wireName) }) else { return nil }
            self = match
        }
    }

    /// `SCHEMA_DOMAIN` without its trailing zero octet (the writer appends it).
    public static let domain = "synchro:v3:schema-manifest:v1"

    /// Positive version number, never reused.
    public let schemaVersion: Int64
    /// The declared (and verified) 64-character lowercase hex hash.
    public let schemaHash: String
    /// The 32 raw octets of ``schemaHash``: `schema_hash_raw` in every row and scope digest.
    public let schemaHashOctets: [UInt8]
    /// The immediate parent, nil exactly for an `initial` manifest.
    public let parentSchema: SchemaReference?
    /// `initial` exactly when ``parentSchema`` is nil.
    public let transitionClass: TransitionClass
    /// Informational lineage floor (the client never decides compatibility from it).
    public let compatibilityFloor: Int64
    /// Every registered table exactly once, sorted by `table_id`.
    public let tables: [ManifestTable]
    /// `RFC8785_UTF8(body)`: the sorted manifest without `schema_hash`, exactly what is hashed.
    public let canonicalBody: [UInt8]

    private let tablePositions: [ExactStringKey: Int]

    /// Validates every manifest rule and checks the declared hash against the recomputed one.
    public init(json: JSONValue) throws(ManifestError) {
        let reader = try ManifestObjectReader(json, path: "manifest", required: [
            "schema_version", "schema_hash", "parent_schema", "transition_class", "compatibility_floor", "tables",
        ])
        schemaVersion = try reader.integer("schema_version", invalid: .invalidSchemaVersion)
        guard schemaVersion >= 1 else { throw .invalidSchemaVersion }
        let declaredHash = try reader.string("schema_hash", nonempty: false)
        guard Hex.isLowercaseHex(declaredHash, octets: 32) else { throw .invalidSchemaHash }
        parentSchema = try Self.parent(reader.value("parent_schema")!)
        guard let transitionClass = TransitionClass(wireName: try reader.string("transition_class", nonempty: false))
        else { throw .unknownTransitionClass }
        guard (transitionClass == .initial) == (parentSchema == nil) else { throw .transitionParentMismatch }
        self.transitionClass = transitionClass
        compatibilityFloor = try reader.integer("compatibility_floor", invalid: .invalidCompatibilityFloor)
        guard compatibilityFloor >= 1 && compatibilityFloor <= schemaVersion else { throw .invalidCompatibilityFloor }
        tables = try Self.tables(try reader.array("tables"))
        tablePositions = Dictionary(uniqueKeysWithValues: tables.enumerated().map { (ExactStringKey($1.tableID), $0) })

        canonicalBody = try Self.canonicalBody(of: json)
        let computed = Self.computeHash(canonicalBody: canonicalBody)
        guard computed.exactlyEquals(declaredHash) else {
            throw .hashMismatch(declared: declaredHash, computed: computed)
        }
        schemaHash = declaredHash
        schemaHashOctets = Hex.decode(declaredHash)!
    }

    /// A manifest rebuilt from the tables a store archived for an earlier schema (`spec/client-store.md` §4.13), for
    /// verifying rows under that schema only: an outcome or replay that names it (`spec/wire-protocol.md` §4.8).
    ///
    /// An archive keeps every table's key, lifecycle and typed fields and the schema's reference, which is all a row
    /// digest depends on (`spec/integrity.md` §4.4–§4.5); it does not keep the lineage members of the body, so the
    /// hash is taken from `reference` (the store archived it from a manifest whose hash it had verified) instead of
    /// being recomputed, and ``canonicalBody`` is the canonical `{schema_version, schema_hash, tables}` that was
    /// read, not a body the server hashed.
    package init(archived reference: SchemaReference, tables values: [JSONValue]) throws(ManifestError) {
        schemaVersion = reference.version
        schemaHash = reference.hash
        schemaHashOctets = Hex.decode(reference.hash)!
        parentSchema = nil
        transitionClass = .initial
        compatibilityFloor = 1
        tables = try Self.tables(values)
        tablePositions = Dictionary(uniqueKeysWithValues: tables.enumerated().map { (ExactStringKey($1.tableID), $0) })
        let read = JSONValue.object(JSONObject([
            JSONMember("schema_version", .number(JSONNumber(reference.version))),
            JSONMember("schema_hash", .string(reference.hash)), JSONMember("tables", .array(values)),
        ]))
        canonicalBody = (try? CanonicalJSON.encode(read)) ?? []
    }

    /// Parses strict JSON octets, then validates as ``init(json:)`` does.
    public init(bytes: [UInt8]) throws(ManifestError) {
        let json: JSONValue
        do throws(JSONParseError) {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw .malformedJSON(error)
        }
        try self.init(json: json)
    }

    /// The `{version, hash}` reference that names this manifest on the wire.
    public var reference: SchemaReference {
        // Both parts were validated on construction, so this cannot fail.
        try! SchemaReference(version: schemaVersion, hash: schemaHash)
    }

    /// The table with exactly this ID, or nil for a table the manifest does not know.
    public func table(id: String) -> ManifestTable? {
        tablePositions[ExactStringKey(id)].map { tables[$0] }
    }

    private static func parent(_ value: JSONValue) throws(ManifestError) -> SchemaReference? {
        if case .null = value { return nil }
        do throws(SchemaReference.Failure) {
            return try SchemaReference(json: value)
        } catch {
            throw .invalidParentSchema(error)
        }
    }

    private static func tables(_ values: [JSONValue]) throws(ManifestError) -> [ManifestTable] {
        guard !values.isEmpty else { throw .noTables }
        var tables: [ManifestTable] = []
        tables.reserveCapacity(values.count)
        for (i, value) in values.enumerated() {
            tables.append(try ManifestParser.table(value, path: "manifest.tables[\(i)]"))
        }
        tables.sort { $0.tableID.utf8Precedes($1.tableID) }
        for i in tables.indices.dropFirst() where tables[i - 1].tableID.exactlyEquals(tables[i].tableID) {
            throw .duplicateTable(tableID: tables[i].tableID)
        }
        return tables
    }
}

extension SchemaManifest: Equatable {
    /// Two manifests are the same when their hashed bodies are the same octets.
    public static func == (lhs: SchemaManifest, rhs: SchemaManifest) -> Bool {
        lhs.canonicalBody == rhs.canonicalBody
    }
}
