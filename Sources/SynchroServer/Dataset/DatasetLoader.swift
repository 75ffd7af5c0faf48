import SynchroProtocol

/// The validation steps of `Dataset.init`, in the order `docs/datasets.md` lists the rules:
/// the manifest, then the scope declarations, then the generation plan of every table.
struct DatasetLoader {
    /// What `dataset.json` contributes to a ``Dataset``.
    struct Loaded {
        let name: String
        let declarations: [ScopeDeclaration]
        let seed: UInt64
        let users: [String]
        let plans: [TablePlan]
    }

    let manifest: SchemaManifest

    // MARK: manifest.json

    /// The validated manifest and its served JSON, with `schema_hash` computed when omitted.
    static func manifest(_ bytes: [UInt8]) throws(DatasetError) -> (SchemaManifest, JSONValue) {
        let file = DatasetError.manifestFile
        let json: JSONValue
        do throws(JSONParseError) {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw DatasetError(.malformedJSON, file: file, at: Self.position(of: error))
        }
        let served: JSONValue
        do throws(ManifestError) {
            served = try withSchemaHash(json)
            return (try SchemaManifest(json: served), served)
        } catch {
            if case .hashMismatch = error {
                throw DatasetError(.schemaHashMismatch, file: file, at: "schema_hash", manifestError: error)
            }
            throw DatasetError(.invalidManifest, file: file, at: "", manifestError: error)
        }
    }

    /// Where a parse failed and why, as the parser reports it (an offset and a rule, never text).
    static func position(of error: JSONParseError) -> String {
        "byte \(error.offset) (\(error.rule.rawValue))"
    }

    /// `json` with a computed `schema_hash` after `schema_version` when the member is absent.
    private static func withSchemaHash(_ json: JSONValue) throws(ManifestError) -> JSONValue {
        guard case .object(let object) = json, object["schema_hash"] == nil else { return json }
        let hash = JSONMember("schema_hash", .string(try SchemaManifest.computeHash(json: json)))
        var members: [JSONMember] = []
        for member in object.members {
            members.append(member)
            if member.key.exactlyEquals("schema_version") { members.append(hash) }
        }
        if members.count == object.count { members.append(hash) }
        return .object(JSONObject(members))
    }

    // MARK: dataset.json

    func load(_ bytes: [UInt8]) throws(DatasetError) -> Loaded {
        let json: JSONValue
        do throws(JSONParseError) {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw .dataset(.malformedJSON, Self.position(of: error))
        }
        let top = try DatasetJSONReader(json, at: "", required: ["name", "scopes", "generate"])
        let name = try top.string("name")!
        let declarations = try ScopeDeclarationParser(manifest: manifest).parse(try top.array("scopes")!)
        let generate = try DatasetJSONReader(
            top.value("generate")!, at: "generate", required: ["seed", "tables"], optional: ["users"])
        let seed = try generate.integer("seed", in: 0...Int64.max)!
        let hasPerUserTables = declarations.contains { declaration in
            if case .perUser = declaration { return true }
            return false
        }
        let users = try Self.users(generate, required: hasPerUserTables)
        let planner = TablePlanner(manifest: manifest, seed: UInt64(seed))
        let plans = try planner.plans(try generate.objectMember("tables")!, declarations: declarations)
        return Loaded(name: name, declarations: declarations, seed: UInt64(seed), users: users, plans: plans)
    }

    private static func users(_ generate: DatasetJSONReader, required: Bool) throws(DatasetError) -> [String] {
        let location = generate.path("users")
        guard let values = try generate.array("users") else {
            if required { throw .dataset(.invalidUsers, location) }
            return []
        }
        var users: [String] = []
        for value in values {
            guard case .string(let user) = value else { throw .dataset(.memberType, location) }
            users.append(user)
        }
        guard !required || !users.isEmpty, validUsers(users) else { throw .dataset(.invalidUsers, location) }
        return users
    }

    /// Nonempty, valid identifiers (they become owner values and scope IDs), no repeats.
    static func validUsers(_ users: [String]) -> Bool {
        for (i, user) in users.enumerated() {
            guard isValidIdentifier(user) else { return false }
            guard !users[..<i].contains(where: { $0.exactlyEquals(user) }) else { return false }
        }
        return true
    }

    /// A nonempty string that is a valid `string` value (no Unicode noncharacter), so it can travel
    /// in any protocol JSON: users, scope IDs and patterns.
    static func isValidIdentifier(_ text: String) -> Bool {
        guard !text.isEmpty, let spec = try? FieldSpec(type: .string, nullable: false) else { return false }
        return FieldGeneratorParser.isValid(.string(text), spec: spec)
    }
}

/// Parses and cross-checks the `scopes` array of `dataset.json`.
struct ScopeDeclarationParser {
    let manifest: SchemaManifest

    func parse(_ values: [JSONValue]) throws(DatasetError) -> [ScopeDeclaration] {
        var declarations: [ScopeDeclaration] = []
        for (i, value) in values.enumerated() {
            let location = "scopes[\(i)]"
            guard case .object(let object) = value else { throw .dataset(.notAnObject, location) }
            if object["id_pattern"] != nil && object["id"] == nil {
                declarations.append(.perUser(try perUser(value, at: location)))
            } else {
                declarations.append(.shared(try shared(value, at: location)))
            }
        }
        try checkIDs(declarations)
        try checkCoverage(declarations)
        return declarations
    }

    private func shared(_ value: JSONValue, at location: String) throws(DatasetError) -> SharedScope {
        let reader = try DatasetJSONReader(value, at: location, required: ["id", "portable", "tables"])
        var tableIDs: [String] = []
        let tablesPath = reader.path("tables")
        for (i, element) in try reader.array("tables")!.enumerated() {
            guard case .string(let tableID) = element else { throw .dataset(.memberType, tablesPath) }
            guard manifest.table(id: tableID) != nil else { throw .dataset(.unknownTable, "\(tablesPath)[\(i)]") }
            guard !tableIDs.contains(where: { $0.exactlyEquals(tableID) }) else {
                throw .dataset(.invalidValue, "\(tablesPath)[\(i)]")
            }
            tableIDs.append(tableID)
        }
        guard !tableIDs.isEmpty else { throw .dataset(.invalidValue, tablesPath) }
        let id = try reader.string("id")!
        guard DatasetLoader.isValidIdentifier(id) else { throw .dataset(.invalidValue, reader.path("id")) }
        return SharedScope(
            id: id, portable: try reader.bool("portable")!, tableIDs: tableIDs.sorted { $0.utf8Precedes($1) })
    }

    private func perUser(_ value: JSONValue, at location: String) throws(DatasetError) -> PerUserScope {
        let reader = try DatasetJSONReader(value, at: location, required: ["id_pattern", "tables"])
        let pattern = try reader.string("id_pattern")!
        guard DatasetLoader.isValidIdentifier(pattern) else { throw .dataset(.invalidValue, reader.path("id_pattern")) }
        let parts = pattern.split(separator: "{user}", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw .dataset(.invalidIDPattern, reader.path("id_pattern")) }
        guard let tables = try reader.objectMember("tables"), tables.count > 0 else {
            throw .dataset(.invalidValue, reader.path("tables"))
        }
        var owners: [OwnerField] = []
        for member in tables.members {
            let path = "\(reader.path("tables")).\(member.key)"
            guard let table = manifest.table(id: member.key) else { throw .dataset(.unknownTable, path) }
            guard case .string(let fieldID) = member.value else { throw .dataset(.memberType, path) }
            guard let field = table.field(id: fieldID) else { throw .dataset(.ownerFieldMissing, path) }
            guard field.type == .string, !field.nullable else { throw .dataset(.ownerFieldType, path) }
            owners.append(OwnerField(tableID: member.key, fieldID: fieldID))
        }
        return PerUserScope(
            idPattern: pattern, ownerFields: owners.sorted { $0.tableID.utf8Precedes($1.tableID) },
            prefix: String(parts[0]), suffix: String(parts[1]))
    }

    /// No two declarations may issue the same scope ID, for any user.
    private func checkIDs(_ declarations: [ScopeDeclaration]) throws(DatasetError) {
        for i in declarations.indices {
            for j in 0..<i {
                if let rule = Self.conflict(declarations[i], declarations[j]) {
                    throw .dataset(rule, "scopes[\(i)]")
                }
            }
        }
    }

    private static func conflict(_ a: ScopeDeclaration, _ b: ScopeDeclaration) -> DatasetError.Rule? {
        switch (a, b) {
        case (.shared(let x), .shared(let y)):
            return x.id.exactlyEquals(y.id) ? .duplicateScopeID : nil
        case (.perUser(let x), .perUser(let y)):
            if x.idPattern.exactlyEquals(y.idPattern) { return .duplicateScopeID }
            return overlap(x, y) ? .scopeIDConflict : nil
        case (.shared(let scope), .perUser(let family)), (.perUser(let family), .shared(let scope)):
            return matches(scope.id, family) ? .scopeIDConflict : nil
        }
    }

    /// True when `family` issues `id` for some nonempty user.
    private static func matches(_ id: String, _ family: PerUserScope) -> Bool {
        let octets = Array(id.utf8), prefix = Array(family.prefix.utf8), suffix = Array(family.suffix.utf8)
        return octets.count > prefix.count + suffix.count && octets.starts(with: prefix)
            && octets.reversed().starts(with: suffix.reversed())
    }

    /// True when two families issue a common ID: users are arbitrary, so that happens exactly when
    /// one prefix starts the other and one suffix ends the other.
    private static func overlap(_ a: PerUserScope, _ b: PerUserScope) -> Bool {
        let pa = Array(a.prefix.utf8), pb = Array(b.prefix.utf8)
        let sa = Array(a.suffix.utf8.reversed()), sb = Array(b.suffix.utf8.reversed())
        let prefixes = pa.count <= pb.count ? pb.starts(with: pa) : pa.starts(with: pb)
        let suffixes = sa.count <= sb.count ? sb.starts(with: sa) : sa.starts(with: sb)
        return prefixes && suffixes
    }

    /// Every table is covered, either shared or per-user, and the composition allows its edges.
    private func checkCoverage(_ declarations: [ScopeDeclaration]) throws(DatasetError) {
        for table in manifest.tables {
            var shared = 0, perUser = 0
            for declaration in declarations where declaration.tableIDs.contains(where: {
                $0.exactlyEquals(table.tableID)
            }) {
                if case .shared = declaration { shared += 1 } else { perUser += 1 }
            }
            let location = "scopes (\(table.tableID))"
            guard shared + perUser > 0 else { throw .dataset(.tableNotCovered, location) }
            guard shared == 0 || perUser == 0 else { throw .dataset(.tableSharedAndPerUser, location) }
            guard perUser <= 1 else { throw .dataset(.perUserTableDeclaredTwice, location) }
            guard shared <= 1 || table.composition == .multiScope else {
                throw .dataset(.singleScopeTableInSeveralScopes, location)
            }
        }
    }
}
