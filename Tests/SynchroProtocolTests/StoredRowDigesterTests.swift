import SynchroProtocol
import Testing

@Suite("Row digests from stored SQLite values (StoredRowDigester)")
struct StoredRowDigesterTests {
    /// A value as a client store keeps it, in its storage class.
    enum Stored: CustomStringConvertible {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case invalidText([UInt8])
        case blob([UInt8])

        func write(into value: inout StoredValueWriter) {
            switch self {
            case .null: value.null()
            case .integer(let integer): value.integer(integer)
            case .real(let real): value.real(real)
            case .text(let text):
                var text = text
                text.withUTF8 { value.text($0) }
            case .invalidText(let octets): octets.withUnsafeBufferPointer { value.text($0) }
            case .blob(let octets): octets.withUnsafeBytes { value.blob($0) }
            }
        }

        var description: String {
            switch self {
            case .null: "NULL"
            case .integer(let integer): "INTEGER \(integer)"
            case .real(let real): "REAL \(real)"
            case .text(let text): "TEXT \(text.debugDescription)"
            case .invalidText(let octets): "TEXT \(octets)"
            case .blob(let octets): "BLOB \(octets)"
            }
        }
    }

    /// `VEC-ROW-DIGEST-FULL-ROW-001` (wire §2.10.4) as a client stores it, one column per field in declaration
    /// order (not field-ID order).
    static let fullRowColumns = [
        "fld_time", "fld_text", "fld_json", "fld_int", "fld_id", "fld_i64", "fld_float", "fld_dec", "fld_dt",
        "fld_date", "fld_bytes", "fld_bool",
    ]
    static let fullRowValues: [Stored] = [
        .text("23:59:59.999999"), .text("e\u{0301}"), .text(#"{"a":1,"z":[true,null]}"#), .integer(-2_147_483_648),
        .text("row-α"), .integer(9_007_199_254_740_991), .real(0.1), .text("12.34"),
        .text("2024-02-29T12:34:56.123456Z"), .text("2024-02-29"), .blob([0x00, 0xFF]), .integer(1),
    ]
    /// The same row as wire JSON.
    static let fullRowJSON = #"""
        {"fld_time": "23:59:59.999999", "fld_text": "e\u0301", "fld_json": "{\"a\":1,\"z\":[true,null]}",
         "fld_int": -2147483648, "fld_id": "row-α", "fld_i64": "9007199254740991", "fld_float": 0.1,
         "fld_dec": "12.34", "fld_dt": "2024-02-29T12:34:56.123456Z", "fld_date": "2024-02-29",
         "fld_bytes": "AP8", "fld_bool": true}
        """#

    private func manifest() throws -> SchemaManifest {
        try IntegrityFixtures.manifest(IntegrityFixtures.sortedHashManifest)
    }

    private func storedDigest(
        _ manifest: SchemaManifest, _ values: [Stored], version: String = "server-version-001"
    ) throws -> (identity: RowIdentity, digest: [UInt8])? {
        var digester = StoredRowDigester(manifest: manifest)
        let layout = try digester.layout(tableID: "tbl_records", columnFieldIDs: Self.fullRowColumns)
        var version = version
        return version.withUTF8 { serverVersion in
            digester.digest(layout, serverVersion: serverVersion) { column, value in
                values[column].write(into: &value)
            }
        }
    }

    @Test("the stored form of VEC-ROW-DIGEST-FULL-ROW-001 digests to the vector's identity and digest")
    func fullRowVector() throws {
        let manifest = try manifest()
        let expected = try RowDigest.compute(
            manifest: manifest, tableID: "tbl_records", primaryKey: .string("row-α"),
            row: IntegrityFixtures.json(Self.fullRowJSON), serverVersion: "server-version-001")
        let stored = try #require(try storedDigest(manifest, Self.fullRowValues))
        #expect(stored.identity == expected.identity)
        #expect(Hex.encode(stored.digest) == "bed4f60fde120d654081554f43b1a2a561a654f2ef11a8d05f2efea522a5a1e1")
        #expect(stored.digest == expected.digest)
    }

    @Test("nullable fields stored as NULL, an integer float and a REAL float digest like their wire values")
    func nullsAndFloats() throws {
        let manifest = try manifest()
        var values = Self.fullRowValues
        values[1] = .null
        values[6] = .integer(3)
        var row = try IntegrityFixtures.json(Self.fullRowJSON).objectValue!.members
        row[row.firstIndex { $0.key == "fld_text" }!] = JSONMember("fld_text", .null)
        row[row.firstIndex { $0.key == "fld_float" }!] = JSONMember("fld_float", .number(JSONNumber(3)))
        let expected = try RowDigest.compute(
            manifest: manifest, tableID: "tbl_records", primaryKey: .string("row-α"),
            row: .object(JSONObject(row)), serverVersion: "v")
        #expect(try storedDigest(manifest, values, version: "v")?.digest == expected.digest)
    }

    /// Every stored value this path does not vouch for, at the position of a field of the full row.
    static let declined: [(field: Int, value: Stored)] = [
        (3, .integer(Int64(Int32.max) + 1)),  // int out of range
        (3, .real(1)),  // int stored as REAL
        (3, .text("1")),  // int stored as TEXT
        (5, .text("9007199254740991")),  // int64 stored as TEXT
        (11, .integer(2)),  // boolean neither 0 nor 1
        (6, .real(-0.0)),  // float -0.0 renders as 0: left to the full check
        (6, .real(.infinity)),
        (6, .text("0.1")),
        (10, .text("AP8")),  // bytes stored as TEXT
        (1, .blob([0x41])),  // string stored as a BLOB
        (1, .text("\u{FFFE}")),  // a noncharacter
        (1, .invalidText([0x61, 0xC3])),  // truncated UTF-8
        (1, .invalidText([0xED, 0xA0, 0x80])),  // an encoded surrogate
        (7, .text("12.340")),  // decimal not canonical
        (7, .text("12345.6")),  // decimal beyond precision 6, scale 2
        (8, .text("2024-02-30T12:34:56.123456Z")),
        (9, .text("2024-2-29")),
        (0, .text("24:00:00.000000")),
        (2, .text(#"{"z":1,"a":2}"#)),  // json not canonical
        (4, .null),  // the key
        (4, .integer(7)),  // a string key stored as INTEGER
        (0, .null),  // a non-nullable field
    ]

    @Test("a value in another storage class or outside its canonical form is left to the wire path")
    func declinedValues() throws {
        let manifest = try manifest()
        for (field, value) in Self.declined {
            var values = Self.fullRowValues
            values[field] = value
            #expect(try storedDigest(manifest, values) == nil, "\(Self.fullRowColumns[field]): \(value)")
        }
        #expect(try storedDigest(manifest, Self.fullRowValues, version: "") == nil)
    }

    @Test("a field given no value or two values is declined")
    func valueCount() throws {
        let manifest = try manifest()
        var digester = StoredRowDigester(manifest: manifest)
        let layout = try digester.layout(tableID: "tbl_records", columnFieldIDs: Self.fullRowColumns)
        var version = "v"
        let none = version.withUTF8 { serverVersion in
            digester.digest(layout, serverVersion: serverVersion) { column, value in
                if column != 8 { Self.fullRowValues[column].write(into: &value) }
            }
        }
        #expect(none == nil)
        let twice = version.withUTF8 { serverVersion in
            digester.digest(layout, serverVersion: serverVersion) { column, value in
                Self.fullRowValues[column].write(into: &value)
                if column == 8 { value.null() }
            }
        }
        #expect(twice == nil)
        #expect(try storedDigest(manifest, Self.fullRowValues) != nil, "the digester is reusable after declining")
    }

    @Test("a layout names every field of a known table exactly once")
    func layouts() throws {
        let digester = StoredRowDigester(manifest: try manifest())
        let columns = Self.fullRowColumns
        #expect(throws: RowDigestError.unknownTable(tableID: "tbl_missing")) {
            try digester.layout(tableID: "tbl_missing", columnFieldIDs: columns)
        }
        #expect(throws: RowDigestError.unknownField(fieldID: "fld_x")) {
            try digester.layout(tableID: "tbl_records", columnFieldIDs: columns + ["fld_x"])
        }
        #expect(throws: RowDigestError.duplicateField(fieldID: "fld_id")) {
            try digester.layout(tableID: "tbl_records", columnFieldIDs: columns + ["fld_id"])
        }
        #expect(throws: RowDigestError.missingField(fieldID: "fld_bool")) {
            try digester.layout(tableID: "tbl_records", columnFieldIDs: Array(columns.dropLast()))
        }
    }
}
