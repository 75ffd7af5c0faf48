import SQLiteKit
import SynchroProtocol

/// A validated `POST /operator/schema` request: the successor manifest, its declared class checked
/// against the structural difference from the current manifest, its affected scopes and the
/// defaults existing rows get (`spec/wire-protocol.md` §7, §12; `docs/server.md`).
///
/// Body: `{"manifest": <complete manifest with schema_hash>, "affected_scopes": [...], "defaults":
/// {table_id: {field_id: value}}}`. `affected_scopes` is required (nonempty) for `class_3` and
/// forbidden otherwise; `defaults` is optional. Every refusal is a ``SchemaPublicationError``.
struct SchemaPublication {
    let manifest: SchemaManifest
    /// The manifest object as received; stored and served as `schema_definition`.
    let manifestJSON: JSONValue
    /// The declared affected scope entries (scope IDs or per-user patterns), byte order.
    let affectedScopes: [String]
    let defaults: FieldDefaults
    let transition: SchemaTransition

    /// The members of a request body, shape-checked only.
    struct Body {
        let manifestJSON: JSONValue
        let affectedScopes: [JSONValue]?
        let defaults: JSONValue?

        init(_ body: JSONValue) throws(SchemaPublicationError) {
            let reader: ExactObjectReader
            do throws(ExactObjectReader.Violation) {
                reader = try ExactObjectReader(
                    body, path: "", required: ["manifest"], optional: ["affected_scopes", "defaults"])
                manifestJSON = try reader.value("manifest")
                affectedScopes = reader.has("affected_scopes") ? try reader.array("affected_scopes") : nil
            } catch {
                throw SchemaPublicationError(error.rule)
            }
            defaults = reader.object["defaults"]
        }
    }

    /// Parses the manifest (every manifest rule, hash included); refuses an `initial` manifest,
    /// which only a new database may hold.
    static func manifest(of body: Body) throws(SchemaPublicationError) -> SchemaManifest {
        let manifest: SchemaManifest
        do throws(ManifestError) {
            manifest = try SchemaManifest(json: body.manifestJSON)
        } catch {
            throw SchemaPublicationError(error.rule)
        }
        guard manifest.transitionClass != .initial else { throw SchemaPublicationError("initial_not_publishable") }
        return manifest
    }

    /// Every publication rule against the current manifest, the stored lineage and the dataset.
    init(body: Body, manifest: SchemaManifest, current: SchemaManifest, dataset: Dataset, store: ServerStore) throws {
        try Self.checkLineage(manifest, current: current, store: store)
        let declared = manifest.transitionClass
        affectedScopes = try Self.affectedScopes(body.affectedScopes, transitionClass: declared, dataset: dataset)
        if let value = body.defaults {
            defaults = try FieldDefaults(json: value)
        } else {
            defaults = FieldDefaults()
        }
        transition = try SchemaTransition(from: current, to: manifest, defaults: defaults)
        try Self.checkClass(declared, transition: transition)
        try Self.checkScopeRuleFields(manifest, current: current, dataset: dataset)
        try Self.checkRetiredIDs(manifest, current: current, store: store)
        if declared == .class3 {
            try Self.checkCoverage(affectedScopes, transition: transition, dataset: dataset)
        }
        self.manifest = manifest
        manifestJSON = body.manifestJSON
    }

    // MARK: - Rules

    /// The next version, the exact current parent, a new hash, and the floor §7.1 defines: carried
    /// forward by Class 2, reset to the manifest's own version by Class 3 and 4.
    private static func checkLineage(_ manifest: SchemaManifest, current: SchemaManifest, store: ServerStore) throws {
        guard manifest.schemaVersion == current.schemaVersion + 1 else {
            throw SchemaPublicationError("version_not_next")
        }
        guard manifest.parentSchema == current.reference else { throw SchemaPublicationError("parent_not_current") }
        if try store.db.cachedStatement("SELECT 1 FROM manifests WHERE hash = ? OR version = ?")
            .scalar([.text(manifest.schemaHash), .integer(manifest.schemaVersion)]) != nil
        {
            throw SchemaPublicationError("schema_reused")
        }
        let floor = manifest.transitionClass == .class2 ? current.compatibilityFloor : manifest.schemaVersion
        guard manifest.compatibilityFloor == floor else {
            throw SchemaPublicationError("compatibility_floor_inconsistent")
        }
    }

    /// `affected_scopes`: only for `class_3`, nonempty, distinct, each a scope or per-user pattern
    /// the dataset declares (``AffectedScopes``).
    private static func affectedScopes(
        _ values: [JSONValue]?, transitionClass: SchemaManifest.TransitionClass, dataset: Dataset
    ) throws(SchemaPublicationError) -> [String] {
        guard transitionClass == .class3 else {
            if values != nil { throw SchemaPublicationError("affected_scopes_not_allowed") }
            return []
        }
        guard let values, !values.isEmpty else { throw SchemaPublicationError("affected_scopes_required") }
        var entries: [String] = []
        for value in values {
            guard case .string(let entry) = value, !entry.isEmpty else {
                throw SchemaPublicationError("invalid_affected_scope")
            }
            guard !entries.contains(where: { $0.exactlyEquals(entry) }) else {
                throw SchemaPublicationError("duplicate_affected_scope")
            }
            guard AffectedScopes.isDeclared(entry, by: dataset) else {
                throw SchemaPublicationError("unknown_affected_scope")
            }
            entries.append(entry)
        }
        return entries.byteOrdered()
    }

    /// The declared class must be exactly the least class of the changes, except that Class 3 may
    /// be declared for compatible changes: whether a change needs historical rematerialization is
    /// partly the operator's knowledge (§12.2: "a new field with historical values").
    private static func checkClass(
        _ declared: SchemaManifest.TransitionClass, transition: SchemaTransition
    ) throws(SchemaPublicationError) {
        guard let required = transition.required else { throw SchemaPublicationError("no_client_visible_change") }
        func refuse(_ rule: String, _ change: SchemaTransition.Change?) -> SchemaPublicationError {
            SchemaPublicationError(rule, table: change?.tableID, field: change?.fieldID)
        }
        switch declared {
        case .class2 where required > .compatible:
            throw refuse("class_2_not_compatible", transition.firstChange(exceeding: .compatible))
        case .class3 where required > .rematerializing:
            throw refuse("class_3_incompatible_change", transition.firstChange(exceeding: .rematerializing))
        case .class4 where required < .incompatible:
            throw refuse("class_4_without_incompatible_change", nil)
        default:
            return
        }
    }

    /// The dataset's per-user scope rules read the owner field of their tables: it must keep its
    /// exact type and nullability while the table exists, or rows would lose their scope.
    private static func checkScopeRuleFields(
        _ manifest: SchemaManifest, current: SchemaManifest, dataset: Dataset
    ) throws(SchemaPublicationError) {
        for family in dataset.perUserScopes {
            for owner in family.ownerFields {
                guard let old = current.table(id: owner.tableID)?.field(id: owner.fieldID),
                      let table = manifest.table(id: owner.tableID)
                else { continue }
                guard let new = table.field(id: owner.fieldID), new.spec == old.spec else {
                    throw SchemaPublicationError("scope_rule_field_changed", table: owner.tableID, field: owner.fieldID)
                }
            }
        }
    }

    /// A table or field ID that an earlier manifest declared and a later one retired never comes
    /// back: queued intent authored under the old manifest would be read with the new meaning.
    private static func checkRetiredIDs(
        _ manifest: SchemaManifest, current: SchemaManifest, store: ServerStore
    ) throws {
        var tables = Set<ExactKey>()
        var fields: [ExactKey: Set<ExactKey>] = [:]
        for row in try store.db.cachedStatement("SELECT manifest FROM manifests").rows() {
            guard let bytes = row[0].blobValue else { throw SyncIntegrityViolation() }
            for table in try SchemaManifest(bytes: bytes).tables {
                tables.insert(ExactKey(table.tableID))
                fields[ExactKey(table.tableID), default: []].formUnion(table.fields.map { ExactKey($0.fieldID) })
            }
        }
        for table in manifest.tables {
            guard let present = current.table(id: table.tableID) else {
                if tables.contains(ExactKey(table.tableID)) {
                    throw SchemaPublicationError("retired_id_reused", table: table.tableID)
                }
                continue
            }
            let known = fields[ExactKey(table.tableID)] ?? []
            for field in table.fields where present.field(id: field.fieldID) == nil {
                if known.contains(ExactKey(field.fieldID)) {
                    throw SchemaPublicationError("retired_id_reused", table: table.tableID, field: field.fieldID)
                }
            }
        }
    }

    /// Every scope that can hold rows of a rematerialized table must be declared affected: the
    /// shared scope by its ID, a per-user family by its pattern (any user's scope can hold rows).
    /// Otherwise clients would keep old rows under a replacement cursor and fail their checksums.
    private static func checkCoverage(
        _ entries: [String], transition: SchemaTransition, dataset: Dataset
    ) throws(SchemaPublicationError) {
        func declared(_ entry: String) -> Bool { entries.contains { $0.exactlyEquals(entry) } }
        for tableID in transition.rematerializedTableIDs {
            for shared in dataset.sharedScopes where shared.covers(tableID) && !declared(shared.id) {
                throw SchemaPublicationError("affected_scopes_incomplete", table: tableID)
            }
            for family in dataset.perUserScopes
            where family.ownerFieldID(forTable: tableID) != nil && !declared(family.idPattern) {
                throw SchemaPublicationError("affected_scopes_incomplete", table: tableID)
            }
        }
    }
}
