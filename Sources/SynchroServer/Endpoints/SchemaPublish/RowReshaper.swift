import SynchroProtocol

/// Rewrites stored rows of the current manifest into the field set of its successor: a complete row
/// has exactly the fields of the governing manifest (`spec/wire-protocol.md` §2.6), so every row
/// served after activation must be re-rendered, not only re-digested.
///
/// Per field of the successor table: a kept field keeps its value; a new field gets its declared
/// default or null; a retyped or tightened field (Class 4 only) keeps a value that is still valid
/// and otherwise gets its default, or null when allowed. Removed fields are dropped. Keys never
/// change (key changes are refused), so row identities stay the same.
struct RowReshaper {
    /// Where one field of a successor row comes from.
    enum Source {
        /// The stored value, valid as it is.
        case keep
        /// The stored value when still valid, else the fallback (or null when allowed).
        case convert(fallback: JSONValue?)
        /// A field the stored row lacks.
        case fill(JSONValue)
    }

    /// The plan of one table present in both manifests.
    struct TablePlan {
        let table: ManifestTable
        let sources: [Source]
        /// Same field IDs and every value kept: the stored row octets stay valid as they are.
        let keepsRows: Bool
    }

    /// A stored value that fits neither the new field nor a fallback: the publication is refused.
    struct Unconvertible: Error {
        let tableID: String
        let fieldID: String
    }

    private let plans: [ExactKey: TablePlan]

    init(from current: SchemaManifest, to proposed: SchemaManifest, defaults: FieldDefaults) {
        var plans: [ExactKey: TablePlan] = [:]
        for old in current.tables {
            guard let new = proposed.table(id: old.tableID) else { continue }
            var sources: [Source] = []
            var keepsRows = old.fields.count == new.fields.count
            for field in new.fields {
                let fallback = defaults.value(table: new.tableID, field: field.fieldID)
                guard let previous = old.field(id: field.fieldID) else {
                    sources.append(.fill(fallback ?? .null))
                    keepsRows = false
                    continue
                }
                if FieldDefaults.changesValueRules(previous, field) {
                    sources.append(.convert(fallback: fallback))
                    keepsRows = false
                } else {
                    sources.append(.keep)
                }
            }
            plans[ExactKey(old.tableID)] = TablePlan(table: new, sources: sources, keepsRows: keepsRows)
        }
        self.plans = plans
    }

    /// The plan of `tableID`; nil for a table the successor removed.
    func plan(for tableID: String) -> TablePlan? {
        plans[ExactKey(tableID)]
    }

    /// The successor form of one stored row of `plan`'s table.
    func reshape(_ row: JSONValue, plan: TablePlan) throws -> JSONValue {
        if plan.keepsRows { return row }
        guard case .object(let stored) = row else { throw SyncIntegrityViolation() }
        var members: [JSONMember] = []
        members.reserveCapacity(plan.sources.count)
        for (field, source) in zip(plan.table.fields, plan.sources) {
            let value: JSONValue
            switch source {
            case .keep:
                guard let kept = stored[field.fieldID] else { throw SyncIntegrityViolation() }
                value = kept
            case .fill(let filled):
                value = filled
            case .convert(let fallback):
                guard let old = stored[field.fieldID] else { throw SyncIntegrityViolation() }
                if (try? PortableValue.validate(old, spec: field.spec)) != nil {
                    value = old
                } else if let fallback {
                    value = fallback
                } else if field.nullable {
                    value = .null
                } else {
                    throw Unconvertible(tableID: plan.table.tableID, fieldID: field.fieldID)
                }
            }
            members.append(JSONMember(field.fieldID, value))
        }
        return .object(JSONObject(members))
    }
}
