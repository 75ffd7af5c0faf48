import SynchroProtocol

/// Generates the rows of a ``Dataset``: deterministic, lazy and random-access.
///
/// Every value is a pure function of the dataset seed, the table ID, the row's position (and
/// owner, for per-user tables) and the field ID, drawn from a SplitMix64 stream derived from
/// exactly those. So a table's rows do not depend on which other tables were generated or in
/// what order, row *i* is the same whatever `--rows` says about later rows, and a user's rows do
/// not depend on which other users exist. Rows are built on access, one at a time.
public struct DatasetGenerator: Sendable {
    /// The dataset whose rows are generated.
    public let dataset: Dataset

    /// A generator for `dataset`.
    public init(dataset: Dataset) {
        self.dataset = dataset
    }

    /// The number of rows of `tableID`: its `rows` (replaced by `rowsOverride` when the table is
    /// `rows_overridable`), or `rows_per_user` times the number of users (`users`, by default the
    /// dataset's). `rowsOverride` must lie in `0...maxRowCount` (callers validate user input).
    public func rowCount(
        for tableID: String, rowsOverride: Int? = nil, users: [String]? = nil
    ) throws(DatasetError) -> Int {
        let plan = try self.plan(tableID)
        return Int(plan.count(rowsOverride: Self.checked(rowsOverride), users: try self.users(users)))
    }

    /// The rows of `tableID` under the same options as ``rowCount(for:rowsOverride:users:)``.
    ///
    /// Throws when the options push a value out of its type's range (a sequence past the `int`
    /// range, datetimes past year 9999) or leave a non-nullable reference without targets.
    public func rows(
        for tableID: String, rowsOverride: Int? = nil, users: [String]? = nil
    ) throws(DatasetError) -> GeneratedRows {
        let plan = try self.plan(tableID)
        let users = try self.users(users)
        let rowsOverride = Self.checked(rowsOverride)
        let indexCount = plan.indexCount(rowsOverride: rowsOverride, users: users)
        var references: [ResolvedReference?] = []
        for (field, generator) in zip(plan.table.fields, plan.generators) {
            let location = "generate.tables.\(plan.tableID).fields.\(field.fieldID)"
            try Self.check(generator, count: indexCount, at: location)
            references.append(try reference(generator, field: field, rowsOverride: rowsOverride, users: users))
        }
        return GeneratedRows(
            plan: plan, references: references, users: users,
            count: Int(plan.count(rowsOverride: rowsOverride, users: users)))
    }

    private func plan(_ tableID: String) throws(DatasetError) -> TablePlan {
        guard let plan = dataset.plan(for: tableID) else {
            throw .dataset(.unknownTable, "generate.tables.\(tableID)")
        }
        return plan
    }

    private func users(_ users: [String]?) throws(DatasetError) -> [String] {
        guard let users else { return dataset.users }
        guard DatasetLoader.validUsers(users) else { throw .dataset(.invalidUsers, "generate.users") }
        return users
    }

    /// The largest row count a dataset or `rowsOverride` may ask for (10^12): beyond any use of
    /// the reference server, and far enough from overflow for every index computation.
    public static let maxRowCount = Int(TablePlanner.maxRows)

    private static func checked(_ rowsOverride: Int?) -> Int? {
        precondition((0...maxRowCount).contains(rowsOverride ?? 0), "a row count must lie in 0...maxRowCount")
        return rowsOverride
    }

    /// Range checks that depend on how many row indices the run uses.
    private static func check(_ generator: FieldGenerator, count: Int64, at location: String) throws(DatasetError) {
        switch generator.kind {
        case .sequence(let format):
            guard format.fits(count: count) else { throw .dataset(.sequenceOverflow, location) }
        case .datetime(let progression):
            let first = CivilTime.firstDay * CivilTime.microsPerDay
            let last = (CivilTime.lastDay + 1) * CivilTime.microsPerDay - 1
            guard let extent = progression.extent(count: count), extent.lower >= first, extent.upper <= last else {
                throw .dataset(.temporalOutOfRange, location)
            }
        case .date(let progression):
            guard let extent = progression.extent(count: count),
                  extent.lower >= CivilTime.firstDay, extent.upper <= CivilTime.lastDay
            else { throw .dataset(.temporalOutOfRange, location) }
        case .json(let template):
            for placeholder in template.generators { try check(placeholder, count: count, at: location) }
        default:
            return
        }
    }

    /// Binds a `reference` to its target's key sequence and row count under the same options.
    private func reference(
        _ generator: FieldGenerator, field: ManifestField, rowsOverride: Int?, users: [String]
    ) throws(DatasetError) -> ResolvedReference? {
        guard case .reference(let targetID) = generator.kind,
              let target = dataset.plan(for: targetID), case .sequence(let keys) = target.keyGenerator.kind
        else { return nil }
        let count = target.count(rowsOverride: rowsOverride, users: users)
        let location = "generate.tables.\(target.tableID).fields.\(target.table.primaryKeyFieldID)"
        guard keys.fits(count: count) else { throw .dataset(.sequenceOverflow, location) }
        guard count > 0 || field.nullable else {
            throw .dataset(.referenceTargetEmpty, "generate.tables.\(targetID)")
        }
        return ResolvedReference(keys: keys, count: count)
    }

    /// Generates the first, second and last row of every table with the default options and
    /// validates each value against its field: the load-time proof that the dataset is servable.
    func trialRun() throws(DatasetError) {
        for plan in dataset.plans {
            let rows = try self.rows(for: plan.tableID)
            for index in Set([0, 1, rows.count - 1]) where rows.indices.contains(index) {
                guard case .object(let row) = rows[index].row else { continue }
                for (field, member) in zip(plan.table.fields, row.members) {
                    guard FieldGeneratorParser.isValid(member.value, spec: field.spec) else {
                        throw .dataset(
                            .generatedValueInvalid, "generate.tables.\(plan.tableID).fields.\(field.fieldID)")
                    }
                }
            }
        }
    }
}

/// The rows of one table: a lazy random-access collection that builds row *i* when asked for it,
/// so a million rows can be streamed in constant memory.
public struct GeneratedRows: RandomAccessCollection, Sendable {
    /// The key value (the value of the wire `pk` object's one member) and the complete row: every
    /// manifest field exactly once, in ascending `field_id` order.
    public typealias Element = (pk: JSONValue, row: JSONValue)
    public typealias Index = Int
    public typealias Indices = Range<Int>

    let plan: TablePlan
    let references: [ResolvedReference?]
    let users: [String]
    /// `derive(tableState, salt(user))` for each user of a per-user table.
    let userStates: [UInt64]
    let rowsPerUser: Int

    /// Always 0.
    public let startIndex = 0
    /// The number of rows.
    public let endIndex: Int

    init(plan: TablePlan, references: [ResolvedReference?], users: [String], count: Int) {
        self.plan = plan
        self.references = references
        self.users = users
        self.endIndex = count
        if case .perUser(let rowsPerUser) = plan.rowCount {
            self.rowsPerUser = Int(rowsPerUser)
            self.userStates = users.map { SplitMix64.derive(plan.tableState, SplitMix64.salt($0)) }
        } else {
            self.rowsPerUser = 0
            self.userStates = []
        }
    }

    /// The table the rows belong to.
    public var tableID: String { plan.tableID }

    /// The user a per-user row was generated for (its owner field's value), nil for shared tables.
    public func owner(at position: Int) -> String? {
        precondition(indices.contains(position), "row index out of range")
        return plan.isPerUser ? users[position / rowsPerUser] : nil
    }

    /// Builds row `position`: O(fields) time and memory, independent of every other row.
    public subscript(position: Int) -> Element {
        precondition(indices.contains(position), "row index out of range")
        let state: UInt64, rowPosition: RowPosition
        if plan.isPerUser {
            let user = position / rowsPerUser, local = position % rowsPerUser
            state = SplitMix64.derive(userStates[user], UInt64(local))
            rowPosition = RowPosition(index: Int64(local), user: users[user])
        } else {
            state = SplitMix64.derive(plan.tableState, UInt64(position))
            rowPosition = RowPosition(index: Int64(position), user: nil)
        }
        var members: [JSONMember] = []
        members.reserveCapacity(plan.generators.count)
        for i in plan.generators.indices {
            var random = SplitMix64(state: SplitMix64.derive(state, plan.fieldSalts[i]))
            let value = plan.generators[i].value(at: rowPosition, reference: references[i], random: &random)
            members.append(JSONMember(plan.fieldIDs[i], value))
        }
        return (members[plan.keyPosition].value, .object(JSONObject(members)))
    }
}
