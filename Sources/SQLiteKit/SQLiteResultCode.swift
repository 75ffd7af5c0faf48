import CSQLite

/// An SQLite result code, primary (`SQLITE_CONSTRAINT`) or extended (`SQLITE_CONSTRAINT_UNIQUE`).
///
/// Connections enable extended result codes, so errors carry the extended code; `primary` recovers the
/// primary one for coarse dispatch (busy, constraint, read-only…).
public struct SQLiteResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric code as SQLite defines it.
    public let rawValue: Int32

    /// Wraps a numeric SQLite result code.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The primary code: the low eight bits of an extended code.
    public var primary: SQLiteResultCode {
        SQLiteResultCode(rawValue: rawValue & 0xFF)
    }

    /// Whether this is an extended code rather than a primary one.
    public var isExtended: Bool {
        rawValue != rawValue & 0xFF
    }

    /// The C macro name (`SQLITE_CONSTRAINT_UNIQUE`), so logs name the code the way SQLite documents it.
    public var name: String {
        if let known = Self.knownName(rawValue) {
            return known
        }
        if isExtended, let primaryName = Self.knownName(rawValue & 0xFF) {
            return "\(primaryName)_\(rawValue >> 8)"
        }
        return "SQLITE_\(rawValue)"
    }

    /// The macro name followed by the number, e.g. `SQLITE_BUSY_SNAPSHOT (517)`.
    public var description: String {
        "\(name) (\(rawValue))"
    }
}

extension SQLiteResultCode {
    /// `SQLITE_OK`: success.
    public static let ok = SQLiteResultCode(rawValue: SQLITE_OK)
    /// `SQLITE_ERROR`: generic error (syntax errors, missing tables or columns…).
    public static let error = SQLiteResultCode(rawValue: SQLITE_ERROR)
    /// `SQLITE_PERM`: access permission denied.
    public static let permission = SQLiteResultCode(rawValue: SQLITE_PERM)
    /// `SQLITE_ABORT`: the operation was aborted.
    public static let abort = SQLiteResultCode(rawValue: SQLITE_ABORT)
    /// `SQLITE_BUSY`: another connection holds a conflicting lock.
    public static let busy = SQLiteResultCode(rawValue: SQLITE_BUSY)
    /// `SQLITE_LOCKED`: a conflict inside the same connection or shared cache.
    public static let locked = SQLiteResultCode(rawValue: SQLITE_LOCKED)
    /// `SQLITE_NOMEM`: an allocation failed.
    public static let noMemory = SQLiteResultCode(rawValue: SQLITE_NOMEM)
    /// `SQLITE_READONLY`: a write to a read-only database.
    public static let readOnly = SQLiteResultCode(rawValue: SQLITE_READONLY)
    /// `SQLITE_INTERRUPT`: stopped by `sqlite3_interrupt`.
    public static let interrupt = SQLiteResultCode(rawValue: SQLITE_INTERRUPT)
    /// `SQLITE_IOERR`: the operating system reported an I/O error.
    public static let ioError = SQLiteResultCode(rawValue: SQLITE_IOERR)
    /// `SQLITE_CORRUPT`: the database image is malformed.
    public static let corrupt = SQLiteResultCode(rawValue: SQLITE_CORRUPT)
    /// `SQLITE_FULL`: the disk or database is full.
    public static let full = SQLiteResultCode(rawValue: SQLITE_FULL)
    /// `SQLITE_CANTOPEN`: the database file cannot be opened.
    public static let cannotOpen = SQLiteResultCode(rawValue: SQLITE_CANTOPEN)
    /// `SQLITE_SCHEMA`: the schema changed.
    public static let schema = SQLiteResultCode(rawValue: SQLITE_SCHEMA)
    /// `SQLITE_TOOBIG`: a string or blob exceeds the size limit.
    public static let tooBig = SQLiteResultCode(rawValue: SQLITE_TOOBIG)
    /// `SQLITE_CONSTRAINT`: a constraint was violated.
    public static let constraint = SQLiteResultCode(rawValue: SQLITE_CONSTRAINT)
    /// `SQLITE_MISMATCH`: a data type mismatch.
    public static let mismatch = SQLiteResultCode(rawValue: SQLITE_MISMATCH)
    /// `SQLITE_MISUSE`: the API was used incorrectly.
    public static let misuse = SQLiteResultCode(rawValue: SQLITE_MISUSE)
    /// `SQLITE_AUTH`: the authorizer denied the statement.
    public static let authorization = SQLiteResultCode(rawValue: SQLITE_AUTH)
    /// `SQLITE_RANGE`: a parameter index is out of range.
    public static let range = SQLiteResultCode(rawValue: SQLITE_RANGE)
    /// `SQLITE_NOTADB`: the file is not a database.
    public static let notADatabase = SQLiteResultCode(rawValue: SQLITE_NOTADB)
    /// `SQLITE_ROW`: a row is available.
    public static let row = SQLiteResultCode(rawValue: SQLITE_ROW)
    /// `SQLITE_DONE`: the statement finished.
    public static let done = SQLiteResultCode(rawValue: SQLITE_DONE)

    // Extended codes are macros the Clang importer cannot evaluate, hence the literal values.
    /// `SQLITE_BUSY_SNAPSHOT`: a WAL read transaction cannot be upgraded to a write.
    public static let busySnapshot = SQLiteResultCode(rawValue: 517)
    /// `SQLITE_BUSY_TIMEOUT`: a blocking lock timed out.
    public static let busyTimeout = SQLiteResultCode(rawValue: 773)
    /// `SQLITE_ABORT_ROLLBACK`: a rollback aborted a pending statement.
    public static let abortRollback = SQLiteResultCode(rawValue: 516)
    /// `SQLITE_CONSTRAINT_CHECK`: a CHECK constraint failed.
    public static let constraintCheck = SQLiteResultCode(rawValue: 275)
    /// `SQLITE_CONSTRAINT_FOREIGNKEY`: a foreign key constraint failed.
    public static let constraintForeignKey = SQLiteResultCode(rawValue: 787)
    /// `SQLITE_CONSTRAINT_FUNCTION`: an extension function reported a constraint violation.
    public static let constraintFunction = SQLiteResultCode(rawValue: 1043)
    /// `SQLITE_CONSTRAINT_NOTNULL`: a NOT NULL constraint failed.
    public static let constraintNotNull = SQLiteResultCode(rawValue: 1299)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`: a PRIMARY KEY constraint failed.
    public static let constraintPrimaryKey = SQLiteResultCode(rawValue: 1555)
    /// `SQLITE_CONSTRAINT_TRIGGER`: a trigger raised `RAISE(ABORT|FAIL|ROLLBACK)`.
    public static let constraintTrigger = SQLiteResultCode(rawValue: 1811)
    /// `SQLITE_CONSTRAINT_UNIQUE`: a UNIQUE constraint failed.
    public static let constraintUnique = SQLiteResultCode(rawValue: 2067)
    /// `SQLITE_CONSTRAINT_ROWID`: a rowid is not unique.
    public static let constraintRowID = SQLiteResultCode(rawValue: 2579)
    /// `SQLITE_CONSTRAINT_DATATYPE`: a STRICT table column type was violated.
    public static let constraintDataType = SQLiteResultCode(rawValue: 3091)
    /// `SQLITE_READONLY_DBMOVED`: the database file was moved or unlinked while open.
    public static let readOnlyDatabaseMoved = SQLiteResultCode(rawValue: 1032)
}

extension SQLiteResultCode {
    /// Names of every result code sqlite3.h 3.40 defines (generated from the header).
    private static func knownName(_ code: Int32) -> String? {
        switch code {
        case 0: "SQLITE_OK"
        case 1: "SQLITE_ERROR"
        case 2: "SQLITE_INTERNAL"
        case 3: "SQLITE_PERM"
        case 4: "SQLITE_ABORT"
        case 5: "SQLITE_BUSY"
        case 6: "SQLITE_LOCKED"
        case 7: "SQLITE_NOMEM"
        case 8: "SQLITE_READONLY"
        case 9: "SQLITE_INTERRUPT"
        case 10: "SQLITE_IOERR"
        case 11: "SQLITE_CORRUPT"
        case 12: "SQLITE_NOTFOUND"
        case 13: "SQLITE_FULL"
        case 14: "SQLITE_CANTOPEN"
        case 15: "SQLITE_PROTOCOL"
        case 16: "SQLITE_EMPTY"
        case 17: "SQLITE_SCHEMA"
        case 18: "SQLITE_TOOBIG"
        case 19: "SQLITE_CONSTRAINT"
        case 20: "SQLITE_MISMATCH"
        case 21: "SQLITE_MISUSE"
        case 22: "SQLITE_NOLFS"
        case 23: "SQLITE_AUTH"
        case 24: "SQLITE_FORMAT"
        case 25: "SQLITE_RANGE"
        case 26: "SQLITE_NOTADB"
        case 27: "SQLITE_NOTICE"
        case 28: "SQLITE_WARNING"
        case 100: "SQLITE_ROW"
        case 101: "SQLITE_DONE"
        case 257: "SQLITE_ERROR_MISSING_COLLSEQ"
        case 513: "SQLITE_ERROR_RETRY"
        case 769: "SQLITE_ERROR_SNAPSHOT"
        case 266: "SQLITE_IOERR_READ"
        case 522: "SQLITE_IOERR_SHORT_READ"
        case 778: "SQLITE_IOERR_WRITE"
        case 1034: "SQLITE_IOERR_FSYNC"
        case 1290: "SQLITE_IOERR_DIR_FSYNC"
        case 1546: "SQLITE_IOERR_TRUNCATE"
        case 1802: "SQLITE_IOERR_FSTAT"
        case 2058: "SQLITE_IOERR_UNLOCK"
        case 2314: "SQLITE_IOERR_RDLOCK"
        case 2570: "SQLITE_IOERR_DELETE"
        case 2826: "SQLITE_IOERR_BLOCKED"
        case 3082: "SQLITE_IOERR_NOMEM"
        case 3338: "SQLITE_IOERR_ACCESS"
        case 3594: "SQLITE_IOERR_CHECKRESERVEDLOCK"
        case 3850: "SQLITE_IOERR_LOCK"
        case 4106: "SQLITE_IOERR_CLOSE"
        case 4362: "SQLITE_IOERR_DIR_CLOSE"
        case 4618: "SQLITE_IOERR_SHMOPEN"
        case 4874: "SQLITE_IOERR_SHMSIZE"
        case 5130: "SQLITE_IOERR_SHMLOCK"
        case 5386: "SQLITE_IOERR_SHMMAP"
        case 5642: "SQLITE_IOERR_SEEK"
        case 5898: "SQLITE_IOERR_DELETE_NOENT"
        case 6154: "SQLITE_IOERR_MMAP"
        case 6410: "SQLITE_IOERR_GETTEMPPATH"
        case 6666: "SQLITE_IOERR_CONVPATH"
        case 6922: "SQLITE_IOERR_VNODE"
        case 7178: "SQLITE_IOERR_AUTH"
        case 7434: "SQLITE_IOERR_BEGIN_ATOMIC"
        case 7690: "SQLITE_IOERR_COMMIT_ATOMIC"
        case 7946: "SQLITE_IOERR_ROLLBACK_ATOMIC"
        case 8202: "SQLITE_IOERR_DATA"
        case 8458: "SQLITE_IOERR_CORRUPTFS"
        case 262: "SQLITE_LOCKED_SHAREDCACHE"
        case 518: "SQLITE_LOCKED_VTAB"
        case 261: "SQLITE_BUSY_RECOVERY"
        case 517: "SQLITE_BUSY_SNAPSHOT"
        case 773: "SQLITE_BUSY_TIMEOUT"
        case 270: "SQLITE_CANTOPEN_NOTEMPDIR"
        case 526: "SQLITE_CANTOPEN_ISDIR"
        case 782: "SQLITE_CANTOPEN_FULLPATH"
        case 1038: "SQLITE_CANTOPEN_CONVPATH"
        case 1294: "SQLITE_CANTOPEN_DIRTYWAL"
        case 1550: "SQLITE_CANTOPEN_SYMLINK"
        case 267: "SQLITE_CORRUPT_VTAB"
        case 523: "SQLITE_CORRUPT_SEQUENCE"
        case 779: "SQLITE_CORRUPT_INDEX"
        case 264: "SQLITE_READONLY_RECOVERY"
        case 520: "SQLITE_READONLY_CANTLOCK"
        case 776: "SQLITE_READONLY_ROLLBACK"
        case 1032: "SQLITE_READONLY_DBMOVED"
        case 1288: "SQLITE_READONLY_CANTINIT"
        case 1544: "SQLITE_READONLY_DIRECTORY"
        case 516: "SQLITE_ABORT_ROLLBACK"
        case 275: "SQLITE_CONSTRAINT_CHECK"
        case 531: "SQLITE_CONSTRAINT_COMMITHOOK"
        case 787: "SQLITE_CONSTRAINT_FOREIGNKEY"
        case 1043: "SQLITE_CONSTRAINT_FUNCTION"
        case 1299: "SQLITE_CONSTRAINT_NOTNULL"
        case 1555: "SQLITE_CONSTRAINT_PRIMARYKEY"
        case 1811: "SQLITE_CONSTRAINT_TRIGGER"
        case 2067: "SQLITE_CONSTRAINT_UNIQUE"
        case 2323: "SQLITE_CONSTRAINT_VTAB"
        case 2579: "SQLITE_CONSTRAINT_ROWID"
        case 2835: "SQLITE_CONSTRAINT_PINNED"
        case 3091: "SQLITE_CONSTRAINT_DATATYPE"
        case 283: "SQLITE_NOTICE_RECOVER_WAL"
        case 539: "SQLITE_NOTICE_RECOVER_ROLLBACK"
        case 284: "SQLITE_WARNING_AUTOINDEX"
        case 279: "SQLITE_AUTH_USER"
        case 256: "SQLITE_OK_LOAD_PERMANENTLY"
        case 512: "SQLITE_OK_SYMLINK"
        default: nil
        }
    }
}
