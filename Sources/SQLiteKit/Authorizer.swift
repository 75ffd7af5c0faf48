import CSQLite

/// What SQLite asks permission for while it compiles a statement (the `sqlite3_set_authorizer` action codes),
/// with the names SQLite passes for that action.
///
/// The authorizer runs when a statement is prepared (and re-prepared after a schema change), never per row.
/// Statements compiled as part of a trigger report the trigger through `AuthorizationRequest.accessor`.
public enum AuthorizerAction: Sendable, Hashable {
    /// `CREATE [TEMP] INDEX index ON table`.
    case createIndex(index: String, table: String, temporary: Bool)
    /// `CREATE [TEMP] TABLE table`.
    case createTable(table: String, temporary: Bool)
    /// `CREATE [TEMP] TRIGGER trigger ON table`.
    case createTrigger(trigger: String, table: String, temporary: Bool)
    /// `CREATE [TEMP] VIEW view`.
    case createView(view: String, temporary: Bool)
    /// `CREATE VIRTUAL TABLE table USING module`.
    case createVirtualTable(table: String, module: String)
    /// `DROP [TEMP] INDEX index` on `table`.
    case dropIndex(index: String, table: String, temporary: Bool)
    /// `DROP [TEMP] TABLE table`.
    case dropTable(table: String, temporary: Bool)
    /// `DROP [TEMP] TRIGGER trigger` on `table`.
    case dropTrigger(trigger: String, table: String, temporary: Bool)
    /// `DROP [TEMP] VIEW view`.
    case dropView(view: String, temporary: Bool)
    /// `DROP TABLE` of a virtual table using `module`.
    case dropVirtualTable(table: String, module: String)
    /// `ALTER TABLE database.table …`.
    case alterTable(database: String, table: String)
    /// An INSERT into `table`.
    case insert(table: String)
    /// An UPDATE of `column` of `table` (one request per assigned column).
    case update(table: String, column: String)
    /// A DELETE from `table`.
    case delete(table: String)
    /// A read of `column` of `table` (`.ignore` makes the column read as NULL).
    case read(table: String, column: String)
    /// A SELECT statement or subquery.
    case select
    /// `BEGIN`, `COMMIT`/`END` or `ROLLBACK`: `operation` is "BEGIN", "COMMIT" or "ROLLBACK".
    case transaction(operation: String)
    /// `SAVEPOINT name`, `RELEASE name` or `ROLLBACK TO name`: `operation` is "BEGIN", "RELEASE" or "ROLLBACK".
    case savepoint(operation: String, name: String)
    /// `PRAGMA name` or `PRAGMA name = argument` / `PRAGMA name(argument)`.
    case pragma(name: String, argument: String?)
    /// `ATTACH file AS …`.
    case attach(file: String)
    /// `DETACH database`.
    case detach(database: String)
    /// A call of the SQL function `name`.
    case function(name: String)
    /// `REINDEX index`.
    case reindex(index: String)
    /// `ANALYZE table`.
    case analyze(table: String)
    /// A recursive common table expression.
    case recursive
    /// An action code this enum does not name, with SQLite's two arguments.
    case other(code: Int32, first: String?, second: String?)
}

/// One authorizer callback: the action, the database it concerns, and the trigger or view that caused it.
public struct AuthorizationRequest: Sendable, Hashable {
    /// What SQLite asks permission for.
    public let action: AuthorizerAction
    /// The database name ("main", "temp", or an attached name), when SQLite gives one.
    public let database: String?
    /// The innermost trigger or view responsible for the access, or nil for the top-level statement.
    public let accessor: String?

    /// Creates a request (SQLite creates them; tests of authorizer policies may too).
    public init(action: AuthorizerAction, database: String?, accessor: String?) {
        self.action = action
        self.database = database
        self.accessor = accessor
    }
}

/// An authorizer's answer.
public enum AuthorizerDecision: Sendable, Hashable {
    /// Let the action proceed.
    case allow
    /// Fail the whole statement with `SQLITE_AUTH` when it is prepared.
    case deny
    /// Skip the action silently: a column read yields NULL and most other actions compile to nothing
    /// (SQLite documents the exact effect per action).
    case ignore
}

/// The closure type installed with `Connection.setAuthorizer`.
public typealias Authorizer = (AuthorizationRequest) -> AuthorizerDecision

final class AuthorizerBox {
    let authorizer: Authorizer

    init(_ authorizer: @escaping Authorizer) {
        self.authorizer = authorizer
    }
}

extension Connection {
    /// Installs `authorizer` (replacing any previous one), or removes it with nil.
    ///
    /// Installing or removing an authorizer expires prepared statements, so cached statements are re-prepared,
    /// and re-authorized, on their next step. This is the hook used to classify and restrict application SQL.
    public func setAuthorizer(_ authorizer: Authorizer?) throws(SQLiteError) {
        let database = try openHandle()
        guard let authorizer else {
            sqlite3_set_authorizer(database, nil, nil)
            authorizerBox = nil
            return
        }
        let box = AuthorizerBox(authorizer)
        // The connection owns the box; SQLite gets an unretained pointer that stays valid until it is replaced.
        let context = Unmanaged.passUnretained(box).toOpaque()
        let resultCode = sqlite3_set_authorizer(database, { context, code, first, second, database, accessor in
            guard let context else {
                return SQLITE_DENY
            }
            let box = Unmanaged<AuthorizerBox>.fromOpaque(context).takeUnretainedValue()
            let request = AuthorizationRequest(
                action: AuthorizerAction(code: code, first: first.map(String.init(cString:)),
                                         second: second.map(String.init(cString:))),
                database: database.map(String.init(cString:)),
                accessor: accessor.map(String.init(cString:))
            )
            return box.authorizer(request).sqliteCode
        }, context)
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(resultCode: resultCode, database: database)
        }
        authorizerBox = box
    }
}

extension AuthorizerDecision {
    var sqliteCode: Int32 {
        switch self {
        case .allow: SQLITE_OK
        case .deny: SQLITE_DENY
        case .ignore: SQLITE_IGNORE
        }
    }
}

extension AuthorizerAction {
    init(code: Int32, first: String?, second: String?) {
        let name = first ?? ""
        let other = second ?? ""
        switch code {
        case SQLITE_CREATE_INDEX: self = .createIndex(index: name, table: other, temporary: false)
        case SQLITE_CREATE_TABLE: self = .createTable(table: name, temporary: false)
        case SQLITE_CREATE_TEMP_INDEX: self = .createIndex(index: name, table: other, temporary: true)
        case SQLITE_CREATE_TEMP_TABLE: self = .createTable(table: name, temporary: true)
        case SQLITE_CREATE_TEMP_TRIGGER: self = .createTrigger(trigger: name, table: other, temporary: true)
        case SQLITE_CREATE_TEMP_VIEW: self = .createView(view: name, temporary: true)
        case SQLITE_CREATE_TRIGGER: self = .createTrigger(trigger: name, table: other, temporary: false)
        case SQLITE_CREATE_VIEW: self = .createView(view: name, temporary: false)
        case SQLITE_DELETE: self = .delete(table: name)
        case SQLITE_DROP_INDEX: self = .dropIndex(index: name, table: other, temporary: false)
        case SQLITE_DROP_TABLE: self = .dropTable(table: name, temporary: false)
        case SQLITE_DROP_TEMP_INDEX: self = .dropIndex(index: name, table: other, temporary: true)
        case SQLITE_DROP_TEMP_TABLE: self = .dropTable(table: name, temporary: true)
        case SQLITE_DROP_TEMP_TRIGGER: self = .dropTrigger(trigger: name, table: other, temporary: true)
        case SQLITE_DROP_TEMP_VIEW: self = .dropView(view: name, temporary: true)
        case SQLITE_DROP_TRIGGER: self = .dropTrigger(trigger: name, table: other, temporary: false)
        case SQLITE_DROP_VIEW: self = .dropView(view: name, temporary: false)
        case SQLITE_INSERT: self = .insert(table: name)
        case SQLITE_PRAGMA: self = .pragma(name: name, argument: second)
        case SQLITE_READ: self = .read(table: name, column: other)
        case SQLITE_SELECT: self = .select
        case SQLITE_TRANSACTION: self = .transaction(operation: name)
        case SQLITE_UPDATE: self = .update(table: name, column: other)
        case SQLITE_ATTACH: self = .attach(file: name)
        case SQLITE_DETACH: self = .detach(database: name)
        case SQLITE_ALTER_TABLE: self = .alterTable(database: name, table: other)
        case SQLITE_REINDEX: self = .reindex(index: name)
        case SQLITE_ANALYZE: self = .analyze(table: name)
        case SQLITE_CREATE_VTABLE: self = .createVirtualTable(table: name, module: other)
        case SQLITE_DROP_VTABLE: self = .dropVirtualTable(table: name, module: other)
        case SQLITE_FUNCTION: self = .function(name: other)
        case SQLITE_SAVEPOINT: self = .savepoint(operation: name, name: other)
        case SQLITE_RECURSIVE: self = .recursive
        default: self = .other(code: code, first: first, second: second)
        }
    }
}
