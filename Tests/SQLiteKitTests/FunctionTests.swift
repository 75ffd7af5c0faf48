import SQLiteKit
import Testing

private struct CaptureRefused: Error, CustomStringConvertible {
    var description: String { "capture refused" }
}

private final class Token {}

@Suite("Custom SQL functions")
struct FunctionTests {
    @Test("a Swift function is callable from SQL and passes every value type through unchanged")
    func echoEveryValueType() throws {
        try withDatabase { db, _ in
            try db.createFunction(name: "echo", argumentCount: 1, deterministic: true) { arguments in
                arguments[0]
            }
            let echo = try db.prepare("SELECT echo(?), typeof(echo(?1))")
            for value in SQLiteValueTests.values {
                try echo.bind([value])
                #expect(try echo.step())
                #expect(try echo.value(at: 0) == value)
                #expect(!echo.isNull(at: 1))
            }
        }
    }

    @Test("argument counts are enforced by SQLite and -1 accepts any number")
    func argumentCounts() throws {
        try withDatabase { db, _ in
            try db.createFunction(name: "count_args", argumentCount: -1) { arguments in
                .integer(Int64(arguments.count))
            }
            try db.createFunction(name: "two", argumentCount: 2) { arguments in
                arguments[1]
            }
            #expect(try db.scalar("SELECT count_args()") == .integer(0))
            #expect(try db.scalar("SELECT count_args(1, 'a', NULL, x'00')") == .integer(4))
            #expect(try db.scalar("SELECT two(1, 'b')") == .text("b"))
            let error = try #require(throws: SQLiteError.self) { try db.prepare("SELECT two(1)") }
            #expect(error.message == "wrong number of arguments to function two()")
        }
    }

    @Test("an innocuous function runs inside a trigger even with trusted_schema OFF; another one does not")
    func functionFromTrigger() throws {
        try withDatabase { db, _ in
            try db.execute("PRAGMA trusted_schema = OFF")
            var calls = 0
            try db.createFunction(name: "stamp", argumentCount: 1, innocuous: true) { arguments in
                calls += 1
                guard case .text(let body) = arguments[0] else {
                    return .null
                }
                return .text("captured:" + body)
            }
            try db.createFunction(name: "unsafe_stamp", argumentCount: 1) { arguments in
                arguments[0]
            }
            try db.execute("""
                CREATE TABLE notes(body);
                CREATE TABLE log(entry);
                CREATE TRIGGER capture AFTER INSERT ON notes BEGIN
                    INSERT INTO log(entry) VALUES (stamp(NEW.body));
                END;
                CREATE TABLE others(body);
                CREATE TRIGGER unsafe_capture AFTER INSERT ON others BEGIN
                    INSERT INTO log(entry) VALUES (unsafe_stamp(NEW.body));
                END;
                """)
            try db.run("INSERT INTO notes(body) VALUES (?)", ["n\u{00E9}"])
            #expect(calls == 1)
            #expect(try db.scalar("SELECT entry FROM log") == .text("captured:n\u{00E9}"))
            let error = try #require(throws: SQLiteError.self) { try db.run("INSERT INTO others(body) VALUES (1)") }
            #expect(error.message == "unsafe use of unsafe_stamp()")
        }
    }

    @Test("a deterministic function may be used in an index expression; a non-deterministic one may not")
    func deterministicFlag() throws {
        try withDatabase { db, _ in
            try db.createFunction(name: "fold", argumentCount: 1, deterministic: true) { arguments in
                .text((arguments[0].textValue ?? "").lowercased())
            }
            try db.createFunction(name: "roll", argumentCount: 1) { arguments in arguments[0] }
            try db.execute("CREATE TABLE t(name); CREATE INDEX t_fold ON t(fold(name));")
            try db.run("INSERT INTO t(name) VALUES ('ABC')")
            #expect(try db.scalar("SELECT count(*) FROM t WHERE fold(name) = 'abc'") == .integer(1))
            let error = try #require(throws: SQLiteError.self) {
                try db.execute("CREATE INDEX t_roll ON t(roll(name))")
            }
            #expect(error.message.contains("non-deterministic"))
        }
    }

    @Test("an error thrown by the function fails the statement with its description and, for SQLiteError, code")
    func throwingFunction() throws {
        try withDatabase { db, _ in
            try db.createFunction(name: "refuse", argumentCount: 0) { _ in throw CaptureRefused() }
            try db.createFunction(name: "busy", argumentCount: 0) { _ in
                throw SQLiteError(reason: .sqlite, code: .constraintFunction, message: "custom rule broken")
            }
            let refused = try #require(throws: SQLiteError.self) { try db.scalar("SELECT refuse()") }
            #expect(refused.code == .error)
            #expect(refused.message == "refuse: capture refused")
            let custom = try #require(throws: SQLiteError.self) { try db.scalar("SELECT busy()") }
            #expect(custom.code == .constraintFunction)
            #expect(custom.message == "custom rule broken")
        }
    }

    @Test("text arguments that are not valid UTF-8 fail the call instead of being repaired")
    func invalidUTF8Argument() throws {
        try withDatabase { db, _ in
            try db.createFunction(name: "echo", argumentCount: 1) { $0[0] }
            let error = try #require(throws: SQLiteError.self) { try db.scalar("SELECT echo(CAST(x'FF' AS TEXT))") }
            #expect(error.message == "echo: argument 1 is text that is not valid UTF-8")
        }
    }

    @Test("the function's closure is released when the function is redefined and when the connection closes")
    func closureReleased() throws {
        try withDatabase { db, _ in
            weak var first: Token?
            weak var second: Token?
            do {
                let token = Token()
                first = token
                try db.createFunction(name: "held", argumentCount: 0) { _ in withExtendedLifetime(token) { .null } }
            }
            #expect(first != nil)
            do {
                let token = Token()
                second = token
                try db.createFunction(name: "held", argumentCount: 0) { _ in withExtendedLifetime(token) { .null } }
            }
            #expect(first == nil)
            #expect(second != nil)
            db.close()
            #expect(second == nil)
        }
    }
}
