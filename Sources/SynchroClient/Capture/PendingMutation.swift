import SynchroProtocol
import SynchroStore

/// One ledger entry with its authored values, as read from `_synchro_pending_changes` and
/// `_synchro_mutation_values` (`spec/client-store.md` §4.4, §4.5): the unit that normalization, sealing,
/// reconciliation and inspection work on.
public struct PendingMutation: Sendable, Equatable {
    /// The protocol bindings of a current entry; a legacy import has none.
    public struct Binding: Sendable, Equatable {
        /// Logical table ID.
        public let tableID: String
        /// Primary-key field ID.
        public let primaryKeyFieldID: String
        /// Primary-key type: `string`, `int` or `int64`.
        public let primaryKeyType: PortableType
        /// The schema active at capture.
        public let authoredSchema: SchemaReference
    }

    /// Durable capture order.
    public let localOrder: Int64
    /// Lowercase canonical UUID, fixed at capture.
    public let mutationID: String
    /// Copy of the mutation ID for application captures, normalized rows and legacy imports.
    public let captureUUID: String?
    /// Protocol bindings; nil exactly for a legacy import.
    public let binding: Binding?
    /// Local table name at capture.
    public let tableName: String
    /// The primary key as text (`CAST(pk AS TEXT)`).
    public let recordID: String
    /// insert, update or delete.
    public let operation: PushOperation
    /// The server version the intent was authored against; nil for inserts and for dependents of an
    /// unresolved predecessor.
    public let baseVersion: String?
    /// Capture timestamp.
    public let clientVersion: String
    /// Lifecycle state.
    public let state: MutationLifecycleState
    /// How the entry came to exist.
    public let sourceKind: MutationSourceKind
    /// The latest unresolved earlier entry of the same logical row at capture time.
    public let dependencyMutationID: String?
    /// For superseded or cancelled entries: the normalized successor or cancellation ID.
    public let normalizedMutationID: String?
    /// The batch it is sealed into.
    public let sealedBatchID: String?
    /// Its position inside that batch.
    public let sealedOrdinal: Int64?
    /// The atomic write group (nil = ungrouped).
    public let atomicGroupID: String?
    /// Exact accepted outcome JSON once the server accepted it.
    public let acceptedJSON: String?
    /// Exact rejection JSON once the server rejected it.
    public let rejectedJSON: String?
    /// Authored fields ordered by field ID octets; empty for deletes and key-only inserts.
    public let fields: [StoredFieldValue]

    /// The logical row identity (table ID, key field, key type, record ID); nil for a legacy import.
    var rowIdentity: RowKey? {
        binding.map { RowKey(tableID: $0.tableID, fieldID: $0.primaryKeyFieldID, type: $0.primaryKeyType,
                             recordID: recordID) }
    }

    /// A logical row identity compared by exact octets.
    struct RowKey: Hashable {
        let tableID: [UInt8]
        let fieldID: [UInt8]
        let type: PortableType
        let recordID: [UInt8]

        init(tableID: String, fieldID: String, type: PortableType, recordID: String) {
            self.tableID = Array(tableID.utf8)
            self.fieldID = Array(fieldID.utf8)
            self.type = type
            self.recordID = Array(recordID.utf8)
        }
    }

    /// The primary-key wire value: a JSON number for `int`, a decimal string for `int64`, the text otherwise.
    var primaryKeyWireValue: JSONValue? {
        guard let binding else { return nil }
        switch binding.primaryKeyType {
        case .int: return JSONNumber(literal: recordID).map(JSONValue.number)
        default: return .string(recordID)
        }
    }

    /// The protocol mutation this entry sends (`spec/integrity.md` §3), after the presence matrix and the
    /// stored value shapes are checked. With `unknownBasePlaceholder`, an update or delete whose base version
    /// is not known yet is measured with that placeholder (the atomic and seal-time worst case).
    public func pushMutation(unknownBasePlaceholder: String? = nil) throws(LedgerIntegrityFailure) -> PushMutation {
        guard let binding, let pkValue = primaryKeyWireValue else { throw .partialBindings(mutationID: mutationID) }
        var columns: [JSONMember]?
        if operation != .delete {
            var members: [JSONMember] = []
            for field in fields {
                guard let value = field.wireValue() else {
                    throw .storedValueShape(mutationID: mutationID, fieldID: field.fieldID)
                }
                members.append(JSONMember(field.fieldID, value))
            }
            columns = members
        }
        let base = operation == .insert ? nil : (baseVersion ?? unknownBasePlaceholder)
        do {
            return try PushMutation(
                mutationID: mutationID, table: binding.tableID, pkFieldID: binding.primaryKeyFieldID,
                pkValue: pkValue, authoredSchema: binding.authoredSchema, operation: operation, baseVersion: base,
                clientVersion: clientVersion, columns: columns)
        } catch .valueNotIJSON {
            throw .valueNotIJSON(mutationID: mutationID)
        } catch {
            throw .notAProtocolMutation(mutationID: mutationID, rule: error.rule)
        }
    }
}
