import SQLiteKit
import Testing

@Suite("SQLiteValue round trips")
struct SQLiteValueTests {
    static let nfc = "\u{00E9}t\u{00E9}"
    static let nfd = "e\u{0301}te\u{0301}"

    static let values: [SQLiteValue] = [
        .null,
        .integer(0), .integer(-1), .integer(Int64.min), .integer(Int64.max),
        .real(0.5), .real(-1.0e308), .real(Double.leastNonzeroMagnitude), .real(Double.greatestFiniteMagnitude),
        .real(.infinity), .real(-.infinity),
        .text(""), .text("plain ascii"), .text("h\u{00E9}llo \u{4E16}\u{754C} \u{1F389}"), .text(nfc), .text(nfd),
        .text(String(repeating: "x", count: 100_000)),
        .blob([]), .blob([0]), .blob([0, 0, 1, 0, 255, 0]), .blob(Array(0...255)),
    ]

    @Test("every value stored in an untyped column reads back identical, in the same storage class")
    func everyValueRoundTrips() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v)")
            let insert = try db.prepare("INSERT INTO t(id, v) VALUES (?, ?)")
            for (id, value) in Self.values.enumerated() {
                try insert.run([.integer(Int64(id)), value])
            }
            let stored = try db.rows("SELECT v, typeof(v) FROM t ORDER BY id")
            #expect(stored.count == Self.values.count)
            for (row, expected) in zip(stored, Self.values) {
                #expect(row[0] == expected)
                let storageClass: String = switch expected {
                case .null: "null"
                case .integer: "integer"
                case .real: "real"
                case .text: "text"
                case .blob: "blob"
                }
                #expect(row[1] == .text(storageClass))
            }
        }
    }

    @Test("NFC and NFD spellings stay distinct in the database and in SQLiteValue, though Swift's == equates them")
    func normalizationFormsStayDistinct() throws {
        #expect(Self.nfc == Self.nfd, "precondition: Swift String equality is canonical equivalence")
        #expect(SQLiteValue.text(Self.nfc) != SQLiteValue.text(Self.nfd))
        #expect(Set([SQLiteValue.text(Self.nfc), .text(Self.nfd)]).count == 2)
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(v TEXT)")
            try db.run("INSERT INTO t(v) VALUES (?), (?)", [.text(Self.nfc), .text(Self.nfd)])
            let matches = try db.scalar("SELECT count(*) FROM t WHERE v = ?", [.text(Self.nfc)])
            #expect(matches == .integer(1))
            let statement = try db.prepare("SELECT v, hex(v) FROM t ORDER BY rowid")
            let rows = try statement.query { row in (row.textBytes(at: 0), try row.text(at: 1)) }
            #expect(rows.map(\.0) == [Array(Self.nfc.utf8), Array(Self.nfd.utf8)])
            #expect(rows.map(\.1) == ["C3A974C3A9", "65CC817465CC81"])
        }
    }

    @Test("empty text and an empty blob are stored as empty values, not NULL")
    func emptyValuesAreNotNull() throws {
        try withDatabase { db, _ in
            let types = try db.prepare("SELECT typeof(?1), length(?1), typeof(?2), length(?2)")
            try types.bind("", at: 1)
            try types.bind([UInt8](), at: 2)
            #expect(try types.step())
            #expect(try types.values() == [.text("text"), .integer(0), .text("blob"), .integer(0)])
        }
    }

    @Test("-0.0 keeps its sign in an untyped column, loses it in a REAL column, and NaN is stored as NULL")
    func negativeZeroAndNaN() throws {
        try withDatabase { db, _ in
            try db.execute("CREATE TABLE t(untyped, r REAL)")
            try db.prepare("INSERT INTO t(untyped, r) VALUES (?1, ?1)").run(-0.0)
            try db.prepare("INSERT INTO t(untyped, r) VALUES (?1, ?1)").run(Double.nan)
            let statement = try db.prepare("SELECT untyped, r FROM t ORDER BY rowid")
            #expect(try statement.step())
            #expect(statement.double(at: 0).sign == .minus)
            #expect(statement.double(at: 1).sign == .plus)
            #expect(try statement.step())
            #expect(try statement.values() == [.null, .null])
        }
    }

    @Test("text that is not valid UTF-8 is reported as a typed error, never repaired; its bytes stay readable")
    func invalidUTF8IsNotRepaired() throws {
        try withDatabase { db, _ in
            let statement = try db.prepare("SELECT CAST(x'C328FF' AS TEXT)")
            #expect(try statement.step())
            #expect(statement.textBytes(at: 0) == [0xC3, 0x28, 0xFF])
            let error = try #require(throws: SQLiteError.self) { try statement.text(at: 0) }
            #expect(error.reason == .invalidUTF8Text(column: 0))
            #expect(throws: SQLiteError.self) { try statement.value(at: 0) }
        }
    }

    @Test("typed reads follow SQLite's conversions and NULL is told apart only by isNull and value(at:)")
    func typedReadsOfNull() throws {
        try withDatabase { db, _ in
            let statement = try db.prepare("SELECT NULL, '42', 7")
            #expect(try statement.step())
            #expect(statement.isNull(at: 0))
            #expect(statement.int64(at: 0) == 0)
            #expect(try statement.text(at: 0) == "")
            #expect(statement.blob(at: 0) == [])
            #expect(try statement.value(at: 0) == .null)
            #expect(statement.int64(at: 1) == 42)
            #expect(try statement.value(at: 1) == .text("42"))
            #expect(try statement.text(at: 2) == "7")
            #expect(!statement.isNull(at: 2))
        }
    }

    @Test("Swift values bind through the parameter pack without SQLiteValue: Int, Bool, String, Double, Optional")
    func bindableSwiftValues() throws {
        try withDatabase { db, _ in
            let statement = try db.prepare("SELECT ?, ?, ?, ?, ?, ?, ?")
            let missing: String? = nil
            let present: Int64? = 9
            try statement.bind(1, true, "t\u{00E9}xt", 2.5, missing, present, Int32(-3))
            #expect(try statement.step())
            #expect(try statement.values() == [1, 1, "t\u{00E9}xt", 2.5, .null, 9, -3])
        }
    }

    @Test("literals build values and accessors return only the matching storage class")
    func literalsAndAccessors() {
        let values: [SQLiteValue] = [.null, 1, 1.5, "a", true]
        #expect(values == [.null, .integer(1), .real(1.5), .text("a"), .integer(1)])
        #expect(SQLiteValue.integer(3).integerValue == 3)
        #expect(SQLiteValue.integer(3).realValue == nil)
        #expect(SQLiteValue.text("3").integerValue == nil)
        #expect(SQLiteValue.blob([1]).blobValue == [1])
        #expect(SQLiteValue.null.isNull)
        #expect(SQLiteValue.real(-0.0) == .real(0.0))
        #expect(SQLiteValue.real(.nan) != .real(.nan))
    }
}
