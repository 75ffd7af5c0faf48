import SynchroProtocol

/// One scope declaration of `dataset.json`: which tables' rows belong to which scope IDs.
///
/// Scope IDs are server-issued and opaque to clients (`spec/wire-protocol.md` §2.4); the
/// reference server derives them from these declarations. Only shared scopes can be portable,
/// because a portable seed never contains user-scoped data (`spec/integrity.md` §7.1).
public enum ScopeDeclaration: Sendable {
    /// One scope, assigned to every user, holding every row of its tables.
    case shared(SharedScope)
    /// One scope per user (`user:{user}`), holding the rows whose owner field names that user.
    case perUser(PerUserScope)

    /// The tables this declaration covers, in ascending UTF-8 order.
    public var tableIDs: [String] {
        switch self {
        case .shared(let scope): scope.tableIDs
        case .perUser(let scope): scope.ownerFields.map(\.tableID)
        }
    }

    /// The scope IDs this declaration puts a complete row of `tableID` into: the shared scope for
    /// its tables, the owner's scope for a per-user table whose owner field holds a string, and
    /// nothing for a table the declaration does not cover.
    public func scopes(forTable tableID: String, row: JSONValue) -> [String] {
        switch self {
        case .shared(let scope):
            return scope.covers(tableID) ? [scope.id] : []
        case .perUser(let scope):
            guard let fieldID = scope.ownerFieldID(forTable: tableID),
                  case .string(let owner)? = row.objectValue?[fieldID]
            else { return [] }
            return [scope.scopeID(forUser: owner)]
        }
    }
}

/// A scope every user is assigned, such as a product catalog.
public struct SharedScope: Sendable {
    /// The scope ID, exactly as issued on the wire.
    public let id: String
    /// Whether portable seeds carry this scope (`spec/integrity.md` §7.1).
    public let portable: Bool
    /// The tables whose every row belongs to the scope, in ascending UTF-8 order.
    public let tableIDs: [String]

    /// True when every row of `tableID` belongs to this scope.
    public func covers(_ tableID: String) -> Bool {
        tableIDs.contains { $0.exactlyEquals(tableID) }
    }
}

/// A family of private scopes, one per user, named by a pattern such as `user:{user}`.
public struct PerUserScope: Sendable {
    /// The pattern as declared; `{user}` occurs exactly once.
    public let idPattern: String
    /// For each covered table, the field naming the row's owner, in ascending UTF-8 order of table ID.
    public let ownerFields: [OwnerField]

    /// The text before and after `{user}` in ``idPattern``.
    let prefix: String
    let suffix: String

    /// The scope ID of `user`'s private scope: the pattern with `{user}` replaced.
    public func scopeID(forUser user: String) -> String {
        prefix + user + suffix
    }

    /// The owner field of `tableID`, nil when this declaration does not cover the table.
    public func ownerFieldID(forTable tableID: String) -> String? {
        ownerFields.first { $0.tableID.exactlyEquals(tableID) }?.fieldID
    }
}

/// The field of a per-user table whose value is the ID of the user owning the row.
public struct OwnerField: Sendable {
    /// The per-user table.
    public let tableID: String
    /// A non-null `string` field of that table.
    public let fieldID: String
}
