import SynchroProtocol

/// A mutation that passed every check of `spec/wire-protocol.md` §4.3: what the row-state step needs.
struct EvaluatedMutation {
    let mutation: PushMutation
    /// The table in the current manifest.
    let table: ManifestTable
    let identity: RowIdentity
    /// The owner field of the per-user table: a row owned by another user is invisible to the caller.
    let ownerFieldID: String
    /// For an insert, the complete new row (authored values, nulls, server-set timestamps).
    let insertRow: JSONValue?
}

/// The result of field evaluation: ready for the row-state matrix, or a terminal outcome.
enum FieldEvaluation {
    case accepted(EvaluatedMutation)
    case rejected(PushOutcome)
}

/// Field evaluation of one mutation before any row is read (`spec/wire-protocol.md` §4.3), in the
/// classification order `schema_incompatible`, `table_not_synced`, `policy_rejected`,
/// `validation_failed`. Every submitted field is inspected; none is dropped.
///
/// Write policy of the reference server: tables of shared scopes are read-only for users; in a
/// per-user table the owner field of a new or changed row must name the authenticated user.
struct PushFieldEvaluator {
    let current: SchemaManifest
    let dataset: Dataset
    let user: String
    let history: ManifestHistory
    /// The request instant in canonical form, for server-set lifecycle timestamps.
    let timestamp: String

    func evaluate(_ mutation: PushMutation) throws -> FieldEvaluation {
        let authoredFieldIDs = mutation.columns?.map(\.key) ?? []
        // An authored schema the server never published cannot be interpreted at all, so none of
        // its fields is representable.
        guard try history.manifest(mutation.authoredSchema) != nil else {
            return .rejected(try .schemaIncompatible(mutation, current: current.reference, fieldIDs: authoredFieldIDs))
        }
        guard let table = current.table(id: mutation.table) else {
            if try history.everDeclared(table: mutation.table) {
                return .rejected(try .schemaIncompatible(
                    mutation, current: current.reference, fieldIDs: authoredFieldIDs))
            }
            return .rejected(try terminal(mutation, .tableNotSynced, "table is not synced"))
        }
        let unrepresentable = authoredFieldIDs.filter { table.field(id: $0) == nil }
        guard unrepresentable.isEmpty else {
            return .rejected(try .schemaIncompatible(mutation, current: current.reference, fieldIDs: unrepresentable))
        }

        guard let ownerFieldID = ownerField(of: table) else {
            return .rejected(try terminal(mutation, .policyRejected, "table is read-only for users"))
        }
        if let denial = policyDenial(mutation, ownerFieldID: ownerFieldID) {
            return .rejected(try terminal(mutation, .policyRejected, denial))
        }

        if let failure = invalidColumn(mutation, table: table) {
            return .rejected(try terminal(mutation, .validationFailed, failure))
        }
        let identity: RowIdentity
        do {
            identity = try RowIdentity(table: table, primaryKey: mutation.pkValue)
        } catch {
            // Structural validation already checked the key against the current manifest.
            return .rejected(try terminal(mutation, .validationFailed, "invalid key"))
        }
        var insertRow: JSONValue?
        if mutation.operation == .insert {
            switch completeRow(mutation, table: table) {
            case .success(let row): insertRow = row
            case .failure(let missing):
                return .rejected(try terminal(mutation, .validationFailed, "field \(missing.fieldID) requires a value"))
            }
        }
        return .accepted(EvaluatedMutation(
            mutation: mutation, table: table, identity: identity, ownerFieldID: ownerFieldID, insertRow: insertRow))
    }

    private func terminal(_ mutation: PushMutation, _ code: PushTerminalCode, _ message: String) throws -> PushOutcome {
        try .terminal(mutation, schema: current.reference, code: code, message: message)
    }

    /// The owner field when the table belongs to a per-user scope family; nil for shared tables.
    private func ownerField(of table: ManifestTable) -> String? {
        for scope in dataset.perUserScopes {
            if let fieldID = scope.ownerFieldID(forTable: table.tableID) { return fieldID }
        }
        return nil
    }

    /// Why the authored owner breaks the policy: an insert must name the caller as owner (there is
    /// no owner default), an update may only keep the caller as owner.
    private func policyDenial(_ mutation: PushMutation, ownerFieldID: String) -> String? {
        let owner = mutation.columns?.first { $0.key.exactlyEquals(ownerFieldID) }?.value
        switch (mutation.operation, owner) {
        case (.insert, nil):
            return "a new row must name its owner"
        case (.insert, let value?), (.update, let value?):
            guard case .string(let text) = value, text.exactlyEquals(user) else {
                return "a row may only be owned by the authenticated user"
            }
            return nil
        default:
            return nil
        }
    }

    /// The first authored column that is not writable or whose value is invalid for its field.
    private func invalidColumn(_ mutation: PushMutation, table: ManifestTable) -> String? {
        for column in mutation.columns ?? [] {
            guard let field = table.field(id: column.key) else { continue }
            guard field.writable else { return "field \(field.fieldID) is not writable" }
            do {
                try PortableValue.validate(column.value, spec: field.spec)
            } catch {
                return "field \(field.fieldID) value is invalid: \(error.rule)"
            }
        }
        return nil
    }

    /// A required field that an insert leaves without a value.
    struct MissingValue: Error {
        let fieldID: String
    }

    /// The complete row an insert creates: the key, the authored values, the server-set creation and
    /// update timestamps, and null for every other nullable field. The reference server has no
    /// other source defaults, so an unauthored non-nullable field is missing.
    private func completeRow(_ mutation: PushMutation, table: ManifestTable) -> Result<JSONValue, MissingValue> {
        let authored = mutation.columns ?? []
        let lifecycle = table.lifecycle
        var members: [JSONMember] = []
        members.reserveCapacity(table.fields.count)
        for field in table.fields {
            let id = field.fieldID
            let value: JSONValue
            if id.exactlyEquals(table.primaryKeyFieldID) {
                value = mutation.pkValue
            } else if let column = authored.first(where: { $0.key.exactlyEquals(id) }) {
                value = column.value
            } else if Self.matches(lifecycle.createdAtFieldID, id) || Self.matches(lifecycle.updatedAtFieldID, id) {
                value = .string(timestamp)
            } else if field.nullable {
                value = .null
            } else {
                return .failure(MissingValue(fieldID: id))
            }
            members.append(JSONMember(id, value))
        }
        return .success(.object(JSONObject(members)))
    }

    static func matches(_ fieldID: String?, _ id: String) -> Bool {
        fieldID?.exactlyEquals(id) ?? false
    }
}

/// The manifests the server has published, parsed on first need: most pushes author under the
/// current manifest and never read another.
final class ManifestHistory {
    private let store: ServerStore
    private let current: SchemaManifest
    private var known: [SchemaReference: SchemaManifest?] = [:]
    private var declaredTables: Set<[UInt8]>?

    init(store: ServerStore, current: SchemaManifest) {
        self.store = store
        self.current = current
    }

    /// The published manifest with exactly this reference, or nil when the server never published it.
    func manifest(_ reference: SchemaReference) throws -> SchemaManifest? {
        if reference == current.reference { return current }
        if let cached = known[reference] { return cached }
        let manifest = try store.manifest(reference)?.0
        known[reference] = manifest
        return manifest
    }

    /// Whether any published manifest ever declared the table.
    func everDeclared(table tableID: String) throws -> Bool {
        if declaredTables == nil {
            var tables = Set<[UInt8]>()
            for row in try store.db.cachedStatement("SELECT manifest FROM manifests").rows() {
                guard let bytes = row[0].blobValue else { continue }
                for table in try SchemaManifest(bytes: bytes).tables { tables.insert(Array(table.tableID.utf8)) }
            }
            declaredTables = tables
        }
        return declaredTables?.contains(Array(tableID.utf8)) ?? false
    }
}
