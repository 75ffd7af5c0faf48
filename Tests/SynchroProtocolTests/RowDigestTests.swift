import SynchroProtocol
import Testing

@Suite("Row identity and row digest (integrity §4.3–§4.5, §8.3)")
struct RowDigestTests {
    private static let r1Row = #"""
        {"fld_task_id":"task-001","fld_task_title":"Buy milk \u2615","fld_task_done":false,
         "fld_task_points":5,"fld_task_cost":"3.5","fld_task_meta":"{\"tags\":[\"home\"]}",
         "fld_task_updated":"2026-01-02T03:04:05.000006Z"}
        """#
    private static let r2Row = #"""
        {"fld_counter_id":42,"fld_counter_ratio":-1.5e-7,"fld_counter_day":"2026-03-01","fld_counter_at":null}
        """#
    private static let r3Row = #"{"fld_blob_id":"-12345678901234","fld_blob_data":"3q2-7w"}"#
    /// `VEC-ROW-DIGEST-FULL-ROW-001` (wire-protocol §2.10.4).
    private static let fullRow = #"""
        {"fld_time": "23:59:59.999999", "fld_text": "e\u0301", "fld_json": "{\"a\":1,\"z\":[true,null]}",
         "fld_int": -2147483648, "fld_id": "row-α", "fld_i64": "9007199254740991", "fld_float": 0.1,
         "fld_dec": "12.34", "fld_dt": "2024-02-29T12:34:56.123456Z", "fld_date": "2024-02-29",
         "fld_bytes": "AP8", "fld_bool": true}
        """#

    private func manifestV3() throws -> SchemaManifest {
        try IntegrityFixtures.manifest(IntegrityFixtures.manifestV3)
    }

    private func vectorManifest() throws -> SchemaManifest {
        try IntegrityFixtures.manifest(IntegrityFixtures.sortedHashManifest)
    }

    private func digest(
        _ manifest: SchemaManifest, _ table: String, _ pk: String, _ row: String, _ version: String
    ) throws -> RowDigest {
        try RowDigest.compute(
            manifest: manifest, tableID: table, primaryKey: IntegrityFixtures.json(pk),
            row: IntegrityFixtures.json(row), serverVersion: version)
    }

    private func rejection(
        _ manifest: SchemaManifest, _ table: String, _ pk: JSONValue, _ row: JSONValue, _ version: String
    ) -> RowDigestError? {
        do throws(RowDigestError) {
            _ = try RowDigest.compute(
                manifest: manifest, tableID: table, primaryKey: pk, row: row, serverVersion: version)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Worked examples

    @Test("R1 reproduces the identity, the 281-octet body and the digest of integrity §8.3")
    func r1() throws {
        let result = try digest(try manifestV3(), "tbl_tasks", #""task-001""#, Self.r1Row, "v-101")
        #expect(result.identity.hex == "73796e6368726f3a76333a726f772d6964656e746974793a7631000000000000000009"
            + "74626c5f7461736b73000000000000000b666c645f7461736b5f6964010100000000000000087461736b2d303031")
        let body = IntegrityFixtures.octets("""
            00000007 000000000000000d666c645f7461736b5f636f7374 04010000000000000003332e35
            000000000000000d666c645f7461736b5f646f6e65 060100 000000000000000b666c645f7461736b5f6964
            010100000000000000087461736b2d303031 000000000000000d666c645f7461736b5f6d657461
            0a0100000000000000117b2274616773223a5b22686f6d65225d7d 000000000000000f666c645f7461736b5f706f696e7473
            020100000005 000000000000000e666c645f7461736b5f7469746c65 0101000000000000000c427579206d696c6b20e29895
            0000000000000010666c645f7461736b5f75706461746564
            0701000000000000001b323032362d30312d30325430333a30343a30352e3030303030365a
            """)
        #expect(result.body == body)
        #expect(result.body.count == 281)
        #expect(result.preimage.count == 448)
        #expect(result.hex == "315e138202f6817530f9dc40f210d57c506910712442777515a88178729fb090")
    }

    @Test("R2 reproduces the whole 295-octet preimage and the digest of integrity §8.3")
    func r2() throws {
        let result = try digest(try manifestV3(), "tbl_counters", "42", Self.r2Row, "v-202")
        let preimage = IntegrityFixtures.octets("""
            73796e6368726f3a76333a726f772d6469676573743a763100
            a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729
            000000000000004b
            73796e6368726f3a76333a726f772d6964656e746974793a763100000000000000000c74626c5f636f756e74657273
            000000000000000e666c645f636f756e7465725f696402010000002a
            0000000000000086
            00000004
            000000000000000e666c645f636f756e7465725f6174 0900
            000000000000000f666c645f636f756e7465725f646179 0801000000000000000a323032362d30332d3031
            000000000000000e666c645f636f756e7465725f6964 02010000002a
            0000000000000011666c645f636f756e7465725f726174696f 0501be8421f5f40d8376
            0000000000000005762d323032
            """)
        #expect(result.preimage == preimage)
        #expect(result.preimage.count == 295)
        #expect(result.hex == "15b705dd42a6471a35fd138d1d673be9004d38f751df1cd12b818e5cca1f4314")
        #expect(result.digest == SHA256.hash(preimage))
    }

    @Test("R3 reproduces the identity, sizes and digest of integrity §8.3 (int64 key, non-ASCII version)")
    func r3() throws {
        let result = try digest(try manifestV3(), "tbl_blobs", #""-12345678901234""#, Self.r3Row, "opaque/\u{3A9}-303")
        #expect(result.identity.hex == "73796e6368726f3a76333a726f772d6964656e746974793a76310000000000000000"
            + "0974626c5f626c6f6273000000000000000b666c645f626c6f625f69640301fffff4c58c31d00e")
        #expect(result.body.count == 68)
        #expect(result.preimage.count == 235)
        #expect(result.hex == "ccce5ff7df0235cdcec3874b4073ed2a874e9a38a1df52f0fda19e1f6c3d74c3")
    }

    @Test("VEC-ROW-DIGEST-FULL-ROW-001 of wire §2.10.4 is reproduced (all eleven types)")
    func fullRowVector() throws {
        let result = try digest(try vectorManifest(), "tbl_records", #""row-α""#, Self.fullRow, "server-version-001")
        #expect(result.identity.hex == "73796e6368726f3a76333a726f772d6964656e746974793a763100000000000000000b"
            + "74626c5f7265636f7264730000000000000006666c645f696401010000000000000006726f772dceb1")
        #expect(result.hex == "bed4f60fde120d654081554f43b1a2a561a654f2ef11a8d05f2efea522a5a1e1")
        #expect(result.checksum.hex == result.hex)
    }

    @Test("the identity of the wire §7.5.2 example key n-1 is reproduced")
    func notesIdentity() throws {
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.notesManifest)
        let identity = try RowIdentity(manifest: manifest, tableID: "tbl_notes", primaryKey: .string("n-1"))
        #expect(identity.hex == "73796e6368726f3a76333a726f772d6964656e746974793a763100000000000000000974626c5f6e6f"
            + "746573000000000000000c666c645f6e6f7465735f6964010100000000000000036e2d31")
        #expect(RowIdentity.isStructurallyValid(identity.bytes))
    }

    @Test("length prefixes keep (tbl_a, fld_bc) and (tbl_af, ld_bc) apart")
    func lengthCollision() throws {
        let manifest = try vectorManifest()
        let a = try RowIdentity(manifest: manifest, tableID: "tbl_a", primaryKey: .string("x"))
        let b = try RowIdentity(manifest: manifest, tableID: "tbl_af", primaryKey: .string("x"))
        #expect(a != b)
        #expect(a.hex == "73796e6368726f3a76333a726f772d6964656e746974793a763100000000000000000574626c5f61000000"
            + "0000000006666c645f62630101000000000000000178")
    }

    @Test("a row's members may arrive in any order")
    func memberOrderIsIrrelevant() throws {
        let manifest = try manifestV3()
        let row = try #require(try IntegrityFixtures.json(Self.r1Row).objectValue)
        let reversed = JSONValue.object(JSONObject(row.members.reversed()))
        let result = try RowDigest.compute(
            manifest: manifest, tableID: "tbl_tasks", primaryKey: .string("task-001"), row: reversed,
            serverVersion: "v-101")
        #expect(result.hex == "315e138202f6817530f9dc40f210d57c506910712442777515a88178729fb090")
    }

    @Test("one digester reused across tables and failures gives the same digests")
    func digesterReuse() throws {
        let manifest = try manifestV3()
        var digester = RowDigester(manifest: manifest)
        let r1 = try digester.digest(
            tableID: "tbl_tasks", primaryKey: .string("task-001"), row: IntegrityFixtures.json(Self.r1Row),
            serverVersion: "v-101")
        #expect(throws: RowDigestError.emptyServerVersion) {
            try digester.digest(
                tableID: "tbl_counters", primaryKey: IntegrityFixtures.json("42"),
                row: IntegrityFixtures.json(Self.r2Row), serverVersion: "")
        }
        let r2 = try digester.digest(
            tableID: "tbl_counters", primaryKey: IntegrityFixtures.json("42"), row: IntegrityFixtures.json(Self.r2Row),
            serverVersion: "v-202")
        let r3 = try digester.compute(
            tableID: "tbl_blobs", primaryKey: .string("-12345678901234"), row: IntegrityFixtures.json(Self.r3Row),
            serverVersion: "opaque/\u{3A9}-303")
        #expect(Hex.encode(r1.digest) == "315e138202f6817530f9dc40f210d57c506910712442777515a88178729fb090")
        #expect(Hex.encode(r2.digest) == "15b705dd42a6471a35fd138d1d673be9004d38f751df1cd12b818e5cca1f4314")
        #expect(r3.hex == "ccce5ff7df0235cdcec3874b4073ed2a874e9a38a1df52f0fda19e1f6c3d74c3")
        #expect(r1.identity.bytes.starts(with: Array("synchro:v3:row-identity:v1".utf8) + [0]))
    }

    @Test("a reused digester handles rows whose member order changes from row to row")
    func digesterMemberOrderChanges() throws {
        var digester = RowDigester(manifest: try manifestV3())
        let members = try #require(try IntegrityFixtures.json(Self.r1Row).objectValue).members
        func digest(_ row: [JSONMember]) throws(RowDigestError) -> String {
            let result = try digester.digest(
                tableID: "tbl_tasks", primaryKey: .string("task-001"), row: .object(JSONObject(row)),
                serverVersion: "v-101")
            return Hex.encode(result.digest)
        }
        let orders = [members, members.reversed(), Array(members.dropFirst(3) + members.prefix(3)), members]
        for order in orders {
            #expect(try digest(order) == "315e138202f6817530f9dc40f210d57c506910712442777515a88178729fb090")
        }
        var doubled = members
        doubled[1] = doubled[0]
        #expect(throws: RowDigestError.duplicateField(fieldID: members[0].key)) { try digest(doubled) }
        var unknown = members
        unknown[2] = JSONMember("fld_other", .null)
        #expect(throws: RowDigestError.unknownField(fieldID: "fld_other")) { try digest(unknown) }
        #expect(throws: RowDigestError.missingField(fieldID: "fld_task_updated")) {
            try digest(Array(members.dropLast()))
        }
        #expect(try digest(members) == "315e138202f6817530f9dc40f210d57c506910712442777515a88178729fb090")
    }

    // MARK: Rejections

    @Test("each row rule is enforced before hashing", arguments: [
        ("tbl_missing", #""row-α""#, fullRow, "v", RowDigestError.unknownTable(tableID: "tbl_missing")),
        ("tbl_records", "null", fullRow, "v", .invalidPrimaryKey(.nullNotAllowed)),
        ("tbl_records", "7", fullRow, "v", .invalidPrimaryKey(.typeMismatch(expected: .string, found: "number"))),
        ("tbl_records", #""row-α""#, "[]", "v", .rowNotAnObject),
        ("tbl_records", #""row-α""#, fullRow.replacing(#", "fld_bool": true}"#, with: "}"), "v",
         .missingField(fieldID: "fld_bool")),
        ("tbl_records", #""row-α""#, fullRow.replacing(#""fld_bool": true}"#, with: #""fld_bool": true, "fld_x": 1}"#),
         "v", .unknownField(fieldID: "fld_x")),
        ("tbl_records", #""row-α""#, fullRow.replacing(#""fld_id": "row-α""#, with: #""fld_id": "other""#), "v",
         .primaryKeyMismatch),
        ("tbl_records", #""row-α""#, fullRow.replacing(#""fld_id": "row-α""#, with: #""fld_id": null"#), "v",
         .invalidValue(fieldID: "fld_id", .nullNotAllowed)),
        ("tbl_records", #""row-α""#, fullRow, "", .emptyServerVersion),
        ("tbl_records", #""row-α""#, fullRow.replacing(#""fld_int": -2147483648"#, with: #""fld_int": 1.0"#), "v",
         .invalidValue(fieldID: "fld_int", .intNotCanonical)),
        ("tbl_records", #""row-α""#, fullRow.replacing(#""fld_dec": "12.34""#, with: #""fld_dec": "12.345""#), "v",
         .invalidValue(fieldID: "fld_dec", .decimalScaleExceeded)),
        ("tbl_records", #""row-α""#, fullRow.replacing(#""fld_float": 0.1"#, with: #""fld_float": null"#), "v",
         .invalidValue(fieldID: "fld_float", .nullNotAllowed)),
        ("tbl_numbers", #""1""#, #"{"fld_number_id":1}"#, "v",
         .invalidPrimaryKey(.typeMismatch(expected: .int, found: "string"))),
        ("tbl_numbers", "1", #"{"fld_number_id":2}"#, "v", .primaryKeyMismatch),
    ] as [(String, String, String, String, RowDigestError)])
    func rules(table: String, pk: String, row: String, version: String, expected: RowDigestError) throws {
        let manifest = try vectorManifest()
        let error = rejection(manifest, table, try IntegrityFixtures.json(pk), try IntegrityFixtures.json(row), version)
        #expect(error == expected)
    }

    @Test("a key that is canonically equivalent but not identical does not match")
    func nfcKeyDoesNotMatchNFD() throws {
        let manifest = try vectorManifest()
        let row = #"{"fld_bc":"\u00e9"}"#
        #expect(rejection(manifest, "tbl_a", .string("e\u{301}"), try IntegrityFixtures.json(row), "v")
            == .primaryKeyMismatch)
        let same = try digest(manifest, "tbl_a", #""\u00e9""#, row, "v")
        #expect(same.digest.count == 32)
    }

    @Test("a row naming a field twice is rejected")
    func duplicateField() throws {
        let manifest = try vectorManifest()
        let doubled = JSONValue.object(JSONObject([
            JSONMember("fld_number_id", .number(JSONNumber(1))), JSONMember("fld_number_id", .number(JSONNumber(1))),
        ]))
        #expect(rejection(manifest, "tbl_numbers", .number(JSONNumber(1)), doubled, "v")
            == .duplicateField(fieldID: "fld_number_id"))
    }

    @Test("identity encoding rejects a null or mistyped key")
    func identityRejections() throws {
        let manifest = try vectorManifest()
        #expect(throws: RowDigestError.invalidPrimaryKey(.nullNotAllowed)) {
            try RowIdentity(manifest: manifest, tableID: "tbl_records", primaryKey: .null)
        }
        #expect(throws: RowDigestError.invalidPrimaryKey(.typeMismatch(expected: .int, found: "string"))) {
            try RowIdentity(manifest: manifest, tableID: "tbl_numbers", primaryKey: .string("1"))
        }
        #expect(throws: RowDigestError.invalidPrimaryKey(.int64NotCanonical)) {
            try RowIdentity(manifest: manifest, tableID: "tbl_longs", primaryKey: .string("01"))
        }
        #expect(throws: RowDigestError.unknownTable(tableID: "tbl_nope")) {
            try RowIdentity(manifest: manifest, tableID: "tbl_nope", primaryKey: .string("x"))
        }
    }

    @Test("int and int64 key bounds encode as two's complement", arguments: [
        ("tbl_numbers", "2147483647", "0d666c645f6e756d6265725f696402017fffffff"),
        ("tbl_numbers", "-2147483648", "0d666c645f6e756d6265725f6964020180000000"),
        ("tbl_longs", #""9223372036854775807""#, "0b666c645f6c6f6e675f696403017fffffffffffffff"),
        ("tbl_longs", #""-9223372036854775808""#, "0b666c645f6c6f6e675f696403018000000000000000"),
        ("tbl_records", #""""#, "06666c645f696401010000000000000000"),
    ])
    func keyBounds(table: String, pk: String, tailHex: String) throws {
        let manifest = try vectorManifest()
        let identity = try RowIdentity(manifest: manifest, tableID: table, primaryKey: IntegrityFixtures.json(pk))
        var head = OctetWriter(domain: "synchro:v3:row-identity:v1")
        head.appendText(table)
        #expect(identity.hex == Hex.encode(head.bytes) + "00000000000000" + tailHex)
    }

    @Test("row digest errors never show row values")
    func errorsAreValueFree() throws {
        let manifest = try vectorManifest()
        let row = Self.fullRow.replacing(#""fld_dec": "12.34""#, with: #""fld_dec": "98765.4""#)
        let rowJSON = try IntegrityFixtures.json(row)
        let error = try #require(rejection(manifest, "tbl_records", .string("row-α"), rowJSON, "v"))
        #expect(error.rule == "invalid_value")
        #expect(error.valueRule == "decimal_precision_exceeded")
        #expect(!error.description.contains("98765"))
        #expect(error.description.contains("fld_dec"))
    }
}
