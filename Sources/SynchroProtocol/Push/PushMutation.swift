/// The three push operations (`spec/wire-protocol.md` §4); `upsert`, `create` and others are invalid.
public enum PushOperation: String, Sendable, Hashable, CaseIterable {
    case insert
    case update
    case delete

    /// Matches the wire string by exact scalars (Swift `==` would accept canonically equivalent text).
    init?(wireText text: String) {
        guard let match = Self.allCases.first(where: { text.exactlyEquals($0.rawValue) }) else { return nil }
        self = match
    }
}

/// One validated push mutation (`spec/wire-protocol.md` §4.2, `spec/integrity.md` §3.4).
///
/// Values are kept exactly as submitted (numbers as their literal, member order as received) because
/// the fingerprint covers them verbatim; `columns` distinguishes absent (`nil`) from present-empty.
/// A value of this type always satisfies every per-mutation rule, including the 65,536-octet limit.
public struct PushMutation: Sendable, Hashable, CustomStringConvertible {
    /// Canonical lowercase UUID, unique per scoped client for its lifetime.
    public let mutationID: String
    /// The logical table ID (wire `table`, vector `table_id`).
    public let table: String
    /// The field ID of the table's one primary-key field.
    public let pkFieldID: String
    /// The key value exactly as sent; never `null`.
    public let pkValue: JSONValue
    /// The (possibly historical) manifest the intent was captured under.
    public let authoredSchema: SchemaReference
    /// `insert`, `update` or `delete`, which fixes the presence of `base_version` and `columns`.
    public let operation: PushOperation
    /// The opaque server version the intent was authored from; nil exactly for an insert.
    public let baseVersion: String?
    /// Diagnostic client timestamp, `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
    public let clientVersion: String
    /// Authored columns in submitted order; nil when absent (delete), empty for a key-only insert.
    public let columns: [JSONMember]?
    /// N: RFC 8785 octets of the normalized mutation, the measure of the 65,536-octet limit.
    public let normalizedMutationOctets: Int

    /// Validates and builds a mutation, as a client does before sealing it into a batch.
    public init(
        mutationID: String, table: String, pkFieldID: String, pkValue: JSONValue,
        authoredSchema: SchemaReference, operation: PushOperation, baseVersion: String?,
        clientVersion: String, columns: [JSONMember]?
    ) throws(PushValidationError) {
        try self.init(
            mutationID: mutationID, table: table, pkFieldID: pkFieldID, pkValue: pkValue,
            authoredSchema: authoredSchema, operation: operation, baseVersion: baseVersion,
            clientVersion: clientVersion, columns: columns, index: nil)
    }

    init(
        mutationID: String, table: String, pkFieldID: String, pkValue: JSONValue,
        authoredSchema: SchemaReference, operation: PushOperation, baseVersion: String?,
        clientVersion: String, columns: [JSONMember]?, index: Int?
    ) throws(PushValidationError) {
        try Self.check(mutationID: mutationID, index)
        try Self.check(table: table, index)
        try Self.check(pkFieldID: pkFieldID, pkValue: pkValue, index)
        try Self.check(clientVersion: clientVersion, index)
        try Self.checkPresence(operation, baseVersion: baseVersion, hasColumns: columns != nil, index)
        if let columns { try Self.check(columns: columns, operation: operation, index) }

        let normalized = PushFingerprint.normalizedMutation(
            mutationID: mutationID, table: table, pkFieldID: pkFieldID, pkValue: pkValue,
            authoredSchema: authoredSchema, operation: operation, baseVersion: baseVersion,
            clientVersion: clientVersion, columns: columns)
        let octets: Int
        do {
            octets = try CanonicalJSON.encode(normalized).count
        } catch {
            throw .valueNotIJSON(mutationIndex: index)
        }
        guard octets <= PushLimits.maxNormalizedMutationOctets else {
            throw .normalizedMutationTooLarge(octets: octets, mutationIndex: index)
        }

        self.mutationID = mutationID
        self.table = table
        self.pkFieldID = pkFieldID
        self.pkValue = pkValue
        self.authoredSchema = authoredSchema
        self.operation = operation
        self.baseVersion = baseVersion
        self.clientVersion = clientVersion
        self.columns = columns
        self.normalizedMutationOctets = octets
    }

    /// C: the number of authored columns (0 when `columns` is absent).
    public var authoredColumnCount: Int { columns?.count ?? 0 }

    /// The mutation object in the requested input shape, members in wire order.
    public func json(shape: PushShape) -> JSONValue {
        var members = [
            JSONMember("mutation_id", .string(mutationID)),
            JSONMember(shape.tableMember, .string(table)),
            JSONMember("pk", pkJSON(shape: shape)),
            JSONMember("authored_schema", authoredSchema.json),
            JSONMember(shape.operationMember, .string(operation.rawValue)),
        ]
        if let baseVersion { members.append(JSONMember("base_version", .string(baseVersion))) }
        members.append(JSONMember("client_version", .string(clientVersion)))
        if let columns { members.append(JSONMember("columns", Self.columnsJSON(columns, shape: shape))) }
        return .object(JSONObject(members))
    }

    /// The wire object (`spec/wire-protocol.md` §4.2) a client sends.
    public var wireJSON: JSONValue { json(shape: .wire) }

    /// Names the operation, table and mutation ID only: never key or column values.
    public var description: String {
        "PushMutation(\(operation.rawValue) on \(table), id \(mutationID), \(authoredColumnCount) columns)"
    }

    private func pkJSON(shape: PushShape) -> JSONValue {
        switch shape {
        case .wire:
            .object(JSONObject([JSONMember(pkFieldID, pkValue)]))
        case .conformanceVector:
            .object(JSONObject([JSONMember("field_id", .string(pkFieldID)), JSONMember("value", pkValue)]))
        }
    }

    private static func columnsJSON(_ columns: [JSONMember], shape: PushShape) -> JSONValue {
        switch shape {
        case .wire:
            .object(JSONObject(columns))
        case .conformanceVector:
            .array(columns.map {
                .object(JSONObject([JSONMember("field_id", .string($0.key)), JSONMember("value", $0.value)]))
            })
        }
    }
}

// MARK: - Rules shared by the parser and the memberwise initializer

extension PushMutation {
    static func check(mutationID: String, _ index: Int?) throws(PushValidationError) {
        guard WireFormats.isCanonicalUUID(mutationID) else { throw .invalidMutationID(mutationIndex: index) }
    }

    static func check(table: String, _ index: Int?) throws(PushValidationError) {
        guard table.isCleanPushIdentity else { throw .invalidTable(mutationIndex: index) }
    }

    static func check(pkFieldID: String, pkValue: JSONValue, _ index: Int?) throws(PushValidationError) {
        guard pkFieldID.isCleanPushIdentity else { throw .invalidPrimaryKey(mutationIndex: index) }
        guard !pkValue.isNull else { throw .nullPrimaryKey(mutationIndex: index) }
    }

    static func check(clientVersion: String, _ index: Int?) throws(PushValidationError) {
        guard WireFormats.isTimestamp(clientVersion) else { throw .invalidClientVersion(mutationIndex: index) }
    }

    /// The presence matrix of `spec/wire-protocol.md` §4.2 for already-typed members.
    static func checkPresence(
        _ operation: PushOperation, baseVersion: String?, hasColumns: Bool, _ index: Int?
    ) throws(PushValidationError) {
        switch operation {
        case .insert:
            guard baseVersion == nil else { throw .baseVersionForbidden(mutationIndex: index) }
            guard hasColumns else { throw .missingColumns(mutationIndex: index) }
        case .update, .delete:
            guard let baseVersion else { throw .missingBaseVersion(mutationIndex: index) }
            guard !baseVersion.isEmpty else { throw .invalidBaseVersion(mutationIndex: index) }
            if operation == .update {
                guard hasColumns else { throw .missingColumns(mutationIndex: index) }
            } else {
                guard !hasColumns else { throw .columnsForbidden(mutationIndex: index) }
            }
        }
    }

    static func check(
        columns: [JSONMember], operation: PushOperation, _ index: Int?
    ) throws(PushValidationError) {
        if operation == .update && columns.isEmpty { throw .emptyUpdateColumns(mutationIndex: index) }
        // Byte arrays, not Strings, so that canonically equivalent field IDs stay distinct.
        var seen = Set<[UInt8]>(minimumCapacity: columns.count)
        for column in columns {
            guard column.key.isCleanPushIdentity else { throw .invalidFieldID(mutationIndex: index) }
            guard seen.insert(Array(column.key.utf8)).inserted else { throw .duplicateColumn(mutationIndex: index) }
        }
        guard columns.count <= PushLimits.maxAuthoredColumns else {
            throw .tooManyColumns(count: columns.count, mutationIndex: index)
        }
    }
}

// MARK: - Parsing

extension PushMutation {
    /// Parses and validates one mutation object in either input shape (a lone vector
    /// `mutation_json`, or a mutation built elsewhere); errors carry no mutation index.
    public static func parse(json: JSONValue, shape: PushShape) throws(PushValidationError) -> PushMutation {
        try parse(json: json, shape: shape, index: nil)
    }

    /// Parses the octets of one mutation object strictly (duplicate members, lone surrogates and
    /// invalid UTF-8 rejected) and validates it.
    public static func parse(bytes: [UInt8], shape: PushShape) throws(PushValidationError) -> PushMutation {
        let json: JSONValue
        do {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw PushValidationError(error)
        }
        return try parse(json: json, shape: shape)
    }

    static func parse(json: JSONValue, shape: PushShape, index: Int?) throws(PushValidationError) -> PushMutation {
        guard case .object(let object) = json else { throw .mutationNotObject(mutationIndex: index) }
        let reader = PushMemberReader(object: object)
        if let missing = reader.firstMissing(shape.requiredMutationMembers) {
            throw .missingMember(missing, mutationIndex: index)
        }
        guard !reader.hasUnknownMember(allowed: shape.allowedMutationMembers) else {
            throw .unknownMember(mutationIndex: index)
        }

        guard let mutationID = reader["mutation_id"]?.stringValue else {
            throw .invalidMutationID(mutationIndex: index)
        }
        try check(mutationID: mutationID, index)
        guard let table = reader[shape.tableMember]?.stringValue else { throw .invalidTable(mutationIndex: index) }
        try check(table: table, index)
        let (pkFieldID, pkValue) = try parsePrimaryKey(reader["pk"], shape: shape, index)
        try check(pkFieldID: pkFieldID, pkValue: pkValue, index)
        let authoredSchema = try parseSchemaReference(reader["authored_schema"], member: "authored_schema", index)
        guard let opText = reader[shape.operationMember]?.stringValue, let operation = PushOperation(wireText: opText)
        else { throw .invalidOperation(mutationIndex: index) }
        guard let clientVersion = reader["client_version"]?.stringValue else {
            throw .invalidClientVersion(mutationIndex: index)
        }
        try check(clientVersion: clientVersion, index)
        let baseVersion = try parseBaseVersion(reader["base_version"], operation: operation, index)
        let columns = try parseColumns(reader["columns"], operation: operation, shape: shape, index)

        return try PushMutation(
            mutationID: mutationID, table: table, pkFieldID: pkFieldID, pkValue: pkValue,
            authoredSchema: authoredSchema, operation: operation, baseVersion: baseVersion,
            clientVersion: clientVersion, columns: columns, index: index)
    }

    static func parseSchemaReference(
        _ value: JSONValue?, member: String, _ index: Int?
    ) throws(PushValidationError) -> SchemaReference {
        guard let value, let reference = try? SchemaReference(json: value) else {
            throw .invalidSchemaReference(member: member, mutationIndex: index)
        }
        return reference
    }

    private static func parsePrimaryKey(
        _ value: JSONValue?, shape: PushShape, _ index: Int?
    ) throws(PushValidationError) -> (String, JSONValue) {
        guard case .object(let pk)? = value else { throw .invalidPrimaryKey(mutationIndex: index) }
        switch shape {
        case .wire:
            guard pk.count == 1 else { throw .invalidPrimaryKey(mutationIndex: index) }
            return (pk.members[0].key, pk.members[0].value)
        case .conformanceVector:
            guard let pair = fieldValuePair(pk) else { throw .invalidPrimaryKey(mutationIndex: index) }
            return pair
        }
    }

    /// `null` is never "absent": a present `null` breaks the matrix like any other wrong value.
    private static func parseBaseVersion(
        _ value: JSONValue?, operation: PushOperation, _ index: Int?
    ) throws(PushValidationError) -> String? {
        switch (operation, value) {
        case (.insert, nil): return nil
        case (.insert, _?): throw .baseVersionForbidden(mutationIndex: index)
        case (_, nil): throw .missingBaseVersion(mutationIndex: index)
        case (_, .string(let text)?): return text
        case (_, _?): throw .invalidBaseVersion(mutationIndex: index)
        }
    }

    private static func parseColumns(
        _ value: JSONValue?, operation: PushOperation, shape: PushShape, _ index: Int?
    ) throws(PushValidationError) -> [JSONMember]? {
        guard let value else {
            if operation == .delete { return nil }
            throw .missingColumns(mutationIndex: index)
        }
        guard operation != .delete else { throw .columnsForbidden(mutationIndex: index) }
        switch (shape, value) {
        case (.wire, .object(let object)):
            return object.members
        case (.conformanceVector, .array(let elements)):
            var columns: [JSONMember] = []
            columns.reserveCapacity(elements.count)
            for element in elements {
                guard case .object(let pair) = element, let (fieldID, value) = fieldValuePair(pair) else {
                    throw .invalidColumns(mutationIndex: index)
                }
                columns.append(JSONMember(fieldID, value))
            }
            return columns
        default:
            throw .invalidColumns(mutationIndex: index)
        }
    }

    /// The vector form `{"field_id": "<id>", "value": <any>}`, exactly these two members.
    private static func fieldValuePair(_ object: JSONObject) -> (String, JSONValue)? {
        guard object.count == 2, let fieldID = object["field_id"]?.stringValue, let value = object["value"] else {
            return nil
        }
        return (fieldID, value)
    }
}

// Equality compares strings by exact scalars: Swift's synthesized `==` would make canonically
// equivalent table or field IDs equal, which the protocol treats as different identities.
extension PushMutation {
    public static func == (lhs: PushMutation, rhs: PushMutation) -> Bool {
        lhs.mutationID.exactlyEquals(rhs.mutationID) && lhs.table.exactlyEquals(rhs.table)
            && lhs.pkFieldID.exactlyEquals(rhs.pkFieldID) && lhs.pkValue == rhs.pkValue
            && lhs.authoredSchema == rhs.authoredSchema && lhs.operation == rhs.operation
            && exactlyEqual(lhs.baseVersion, rhs.baseVersion)
            && lhs.clientVersion.exactlyEquals(rhs.clientVersion) && lhs.columns == rhs.columns
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(mutationID.utf8))
        hasher.combine(Array(table.utf8))
        hasher.combine(Array(pkFieldID.utf8))
        hasher.combine(pkValue)
        hasher.combine(operation)
        hasher.combine(baseVersion.map { Array($0.utf8) })
        hasher.combine(columns)
    }

    private static func exactlyEqual(_ lhs: String?, _ rhs: String?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case (let a?, let b?): a.exactlyEquals(b)
        default: false
        }
    }
}
