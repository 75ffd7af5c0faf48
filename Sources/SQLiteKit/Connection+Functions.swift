import CSQLite

/// The Swift body of an application-defined SQL function.
public typealias SQLFunction = ([SQLiteValue]) throws -> SQLiteValue

final class FunctionBox {
    let name: String
    let body: SQLFunction

    init(name: String, body: @escaping SQLFunction) {
        self.name = name
        self.body = body
    }
}

extension Connection {
    /// Defines (or redefines) the scalar SQL function `name` taking `argumentCount` arguments (-1: any number).
    ///
    /// `deterministic` lets SQLite use the function in indexes and constraints and factor out repeated calls.
    /// `innocuous` allows it in triggers, views and defaults while `PRAGMA trusted_schema = OFF` (the setting
    /// of the application connection), which capture triggers need. An error thrown by `body` fails the
    /// statement with that error's description as the message (and its code when it is a `SQLiteError`), so
    /// thrown errors must not describe row values either. SQLite keeps `body` until the function is redefined
    /// or the connection is closed.
    public func createFunction(
        name: String, argumentCount: Int, deterministic: Bool = false, innocuous: Bool = false,
        _ body: @escaping SQLFunction
    ) throws(SQLiteError) {
        let database = try openHandle()
        var flags = SQLITE_UTF8
        if deterministic {
            flags |= SQLITE_DETERMINISTIC
        }
        if innocuous {
            flags |= SQLITE_INNOCUOUS
        }
        // SQLite owns this retain and releases it through the destructor below, also when registration fails.
        let context = Unmanaged.passRetained(FunctionBox(name: name, body: body)).toOpaque()
        let resultCode = sqlite3_create_function_v2(
            database, name, Int32(clamping: argumentCount), flags, context,
            { context, count, arguments in
                guard let context else {
                    return
                }
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
                box.call(context: context, count: Int(count), arguments: arguments)
            },
            nil, nil,
            { context in
                if let context {
                    Unmanaged<FunctionBox>.fromOpaque(context).release()
                }
            }
        )
        if resultCode != SQLITE_OK {
            throw SQLiteError(resultCode: resultCode, database: database)
        }
    }
}

extension FunctionBox {
    func call(context: OpaquePointer, count: Int, arguments: UnsafeMutablePointer<OpaquePointer?>?) {
        var values: [SQLiteValue] = []
        values.reserveCapacity(count)
        for index in 0..<count {
            guard let argument = arguments?[index], let value = SQLiteValue(functionArgument: argument) else {
                sqlite3_result_error(context, "\(name): argument \(index + 1) is text that is not valid UTF-8", -1)
                return
            }
            values.append(value)
        }
        do {
            try body(values).setResult(of: context)
        } catch let error as SQLiteError {
            sqlite3_result_error(context, error.message, -1)
            sqlite3_result_error_code(context, error.code.rawValue)
        } catch {
            sqlite3_result_error(context, "\(name): \(error)", -1)
        }
    }
}

extension SQLiteValue {
    /// The value of a function argument; nil for text that is not valid UTF-8.
    init?(functionArgument argument: OpaquePointer) {
        switch sqlite3_value_type(argument) {
        case SQLITE_INTEGER:
            self = .integer(sqlite3_value_int64(argument))
        case SQLITE_FLOAT:
            self = .real(sqlite3_value_double(argument))
        case SQLITE_TEXT:
            let base = sqlite3_value_text(argument)
            let count = Int(sqlite3_value_bytes(argument))
            guard let text = String(validating: UnsafeBufferPointer(start: count > 0 ? base : nil, count: count),
                                    as: UTF8.self) else {
                return nil
            }
            self = .text(text)
        case SQLITE_BLOB:
            let base = sqlite3_value_blob(argument)
            let count = Int(sqlite3_value_bytes(argument))
            self = .blob(base.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? [])
        default:
            self = .null
        }
    }

    func setResult(of context: OpaquePointer) {
        switch self {
        case .null:
            sqlite3_result_null(context)
        case .integer(let value):
            sqlite3_result_int64(context, value)
        case .real(let value):
            sqlite3_result_double(context, value)
        case .text(var value):
            value.withUTF8 { bytes in
                let encoding = UInt8(SQLITE_UTF8)
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    sqlite3_result_text64(context, "", 0, sqliteTransient, encoding)
                    return
                }
                let characters = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
                sqlite3_result_text64(context, characters, sqlite3_uint64(bytes.count), sqliteTransient, encoding)
            }
        case .blob(let bytes):
            bytes.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, raw.count > 0 else {
                    sqlite3_result_zeroblob(context, 0)
                    return
                }
                sqlite3_result_blob64(context, base, sqlite3_uint64(raw.count), sqliteTransient)
            }
        }
    }
}
