import SynchroProtocol
import Testing

@Suite("Schema manifest validation and hash (wire-protocol §7, integrity §4.2)")
struct SchemaManifestTests {
    private static let zeros = String(repeating: "0", count: 64)

    /// The manifest's JSON with top-level member `name` replaced.
    private func replacingMember(_ value: JSONValue, _ name: String, with replacement: JSONValue) -> JSONValue {
        guard case .object(let object) = value else { return value }
        return .object(JSONObject(object.members.map {
            $0.key.exactlyEquals(name) ? JSONMember(name, replacement) : $0
        }))
    }

    /// The first table object of a manifest JSON value.
    private func firstTable(_ value: JSONValue) throws -> JSONValue {
        let tables = try #require(value.objectValue?["tables"]?.arrayValue)
        return try #require(tables.first)
    }

    private func rejection(_ json: JSONValue) -> ManifestError? {
        do throws(ManifestError) {
            _ = try SchemaManifest(json: json)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Worked examples

    @Test("the integrity §8.1 manifest hashes to a55546d5… over a sorted 2,278-octet body")
    func integrityExample() throws {
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.manifestV3)
        #expect(manifest.schemaHash == IntegrityFixtures.manifestV3Hash)
        #expect(manifest.canonicalBody.count == 2_278)
        let prefix = #"{"compatibility_floor":2,"parent_schema":{"hash":"#
            + #""5f1d8e0c2b7a4963a1e0d9c8b7a6f5e4d3c2b1a09f8e7d6c5b4a392817161514","version":2},"#
            + #""schema_version":3,"tables":[{"composition":"single_scope","fields":[{"field_id":"fld_blob_data","#
        #expect(manifest.canonicalBody.starts(with: Array(prefix.utf8)))
        #expect(manifest.tables.map(\.tableID) == ["tbl_blobs", "tbl_counters", "tbl_tasks"])
        let tasks = try #require(manifest.table(id: "tbl_tasks"))
        #expect(tasks.fields.map(\.fieldID) == [
            "fld_task_cost", "fld_task_done", "fld_task_id", "fld_task_meta", "fld_task_points", "fld_task_title",
            "fld_task_updated",
        ])
        #expect(tasks.primaryKeyField.fieldID == "fld_task_id")
        #expect(tasks.composition == .multiScope)
        #expect(tasks.lifecycle.updatedAtFieldID == "fld_task_updated")
        #expect(tasks.field(id: "fld_task_cost")?.spec == (try FieldSpec(
            type: .decimal, nullable: true, precision: 10, scale: 2)))
        #expect(manifest.parentSchema == (try SchemaReference(
            version: 2, hash: "5f1d8e0c2b7a4963a1e0d9c8b7a6f5e4d3c2b1a09f8e7d6c5b4a392817161514")))
        #expect(manifest.transitionClass == .class2)
        #expect(manifest.compatibilityFloor == 2)
        #expect(manifest.schemaHashOctets == IntegrityFixtures.octets(IntegrityFixtures.manifestV3Hash))
    }

    @Test("the wire §7.5.1 canonical body is reproduced octet for octet (1,404 octets, hash 6562ef76…)")
    func wireExampleCanonicalBody() throws {
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.notesManifest)
        #expect(manifest.canonicalBody == Array(IntegrityFixtures.notesCanonicalBody.utf8))
        #expect(manifest.canonicalBody.count == 1_404)
        #expect(manifest.hashPreimage == Array("synchro:v3:schema-manifest:v1".utf8) + [0] + manifest.canonicalBody)
        #expect(Hex.encode(SHA256.hash(manifest.hashPreimage)) == IntegrityFixtures.notesHash)
        #expect(manifest.schemaHash == IntegrityFixtures.notesHash)
        #expect(SchemaManifest.computeHash(canonicalBody: Array(IntegrityFixtures.notesCanonicalBody.utf8))
            == IntegrityFixtures.notesHash)
        #expect(manifest.reference == (try SchemaReference(version: 2, hash: IntegrityFixtures.notesHash)))
        let notes = try #require(manifest.table(id: "tbl_notes"))
        #expect(notes.lifecycle.createdAtFieldID == nil)
        #expect(notes.lifecycle.deletedAtFieldID == "fld_notes_deleted_at")
        #expect(notes.indexes.map(\.fieldIDs) == [["fld_notes_owner", "fld_notes_updated_at"]])
        #expect(notes.indexes.first?.unique == false)
    }

    @Test("the unsorted VEC-MANIFEST-SORTED-HASH-001 manifest (wire §7.5.3) hashes to a97280b7…")
    func unsortedManifestHash() throws {
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.sortedHashManifest)
        #expect(manifest.schemaHash == IntegrityFixtures.sortedHashManifestHash)
        #expect(manifest.tables.map(\.tableID) == ["tbl_a", "tbl_af", "tbl_longs", "tbl_numbers", "tbl_records"])
        #expect(manifest.table(id: "tbl_records")?.fields.map(\.fieldID) == [
            "fld_bool", "fld_bytes", "fld_date", "fld_dec", "fld_dt", "fld_float", "fld_i64", "fld_id", "fld_int",
            "fld_json", "fld_text", "fld_time",
        ])
        #expect(manifest.transitionClass == .initial)
        #expect(manifest.parentSchema == nil)
    }

    @Test("reordering tables and fields on the wire changes neither the body nor the hash")
    func wireOrderIsIrrelevant() throws {
        let json = try IntegrityFixtures.json(IntegrityFixtures.manifestV3)
        let tables = try #require(json.objectValue?["tables"]?.arrayValue)
        let shuffled: [JSONValue] = tables.reversed().map { table in
            guard case .object(let object) = table else { return table }
            return .object(JSONObject(object.members.reversed().map { member in
                guard member.key == "fields", case .array(let fields) = member.value else { return member }
                return JSONMember(member.key, .array(fields.reversed()))
            }))
        }
        let manifest = try SchemaManifest(json: replacingMember(json, "tables", with: .array(shuffled)))
        #expect(manifest.schemaHash == IntegrityFixtures.manifestV3Hash)
        #expect(manifest == (try IntegrityFixtures.manifest(IntegrityFixtures.manifestV3)))
    }

    // MARK: Hash reporting

    @Test("a wrong declared hash is reported next to the recomputed one")
    func hashCheckReportsMismatch() throws {
        let text = IntegrityFixtures.notesManifest.replacing(IntegrityFixtures.notesHash, with: Self.zeros)
        let json = try IntegrityFixtures.json(text)
        #expect(throws: ManifestError.hashMismatch(declared: Self.zeros, computed: IntegrityFixtures.notesHash)) {
            try SchemaManifest(json: json)
        }
        let check = try SchemaManifest.check(json: json)
        #expect(check.declaredHash == Self.zeros)
        #expect(check.computedHash == IntegrityFixtures.notesHash)
        #expect(!check.matches)
        #expect(check.validationError?.rule == "hash_mismatch")
        #expect(try SchemaManifest.computeHash(json: json) == IntegrityFixtures.notesHash)
    }

    @Test("a valid manifest's check matches and has no validation error")
    func hashCheckOfValidManifest() throws {
        let check = try SchemaManifest.check(json: IntegrityFixtures.json(IntegrityFixtures.manifestV3))
        #expect(check.matches && check.isValid)
        #expect(check.computedHash == IntegrityFixtures.manifestV3Hash)
        #expect(check.canonicalBody.count == 2_278)
    }

    @Test("a hash is still computed for a manifest that breaks another rule")
    func hashCheckOfOtherwiseInvalidManifest() throws {
        let text = IntegrityFixtures.notesManifest.replacing(
            #""name": "id", "type": "string", "nullable": false, "writable": false"#,
            with: #""name": "id", "type": "string", "nullable": false, "writable": true"#)
        let check = try SchemaManifest.check(json: IntegrityFixtures.json(text))
        #expect(check.validationError == .primaryKeyWritable(tableID: "tbl_notes"))
        #expect(Hex.isLowercaseHex(check.computedHash, octets: 32))
        #expect(check.computedHash != IntegrityFixtures.notesHash)
        #expect(!check.matches)
    }

    @Test("changing any hashed member without updating the hash is a mismatch", arguments: [
        (#""name": "notes","#, #""name": "notes2","#),
        (#""relation_id": "rel_notes","#, #""relation_id": "rel_notes_2","#),
        (#""unique": false"#, #""unique": true"#),
        (#""precision": 10"#, #""precision": 11"#),
        (#""name": "color""#, #""name": "colour""#),
    ])
    func hashedMembers(find: String, replacement: String) throws {
        #expect(IntegrityFixtures.notesManifest.contains(find))
        let text = IntegrityFixtures.notesManifest.replacing(find, with: replacement)
        #expect(rejection(try IntegrityFixtures.json(text))?.rule == "hash_mismatch")
    }

    // MARK: Rejections by text edit of the wire §3.8 manifest

    @Test("each manifest rule is enforced", arguments: [
        (#""compatibility_floor": 1,"#, "",
         ManifestError.missingMember(path: "manifest", member: "compatibility_floor")),
        (#""compatibility_floor": 1,"#, #""compatibility_floor": 1, "generated_at": "2026-01-01T00:00:00.000000Z","#,
         .unknownMember(path: "manifest", member: "generated_at")),
        (#""schema_version": 2,"#, #""schema_version": 0,"#, .invalidSchemaVersion),
        (#""schema_version": 2,"#, #""schema_version": 2.0,"#, .invalidSchemaVersion),
        (#""schema_version": 2,"#, #""schema_version": -0,"#, .invalidSchemaVersion),
        (#""schema_version": 2,"#, #""schema_version": 9007199254740992,"#, .invalidSchemaVersion),
        (#""schema_version": 2,"#, #""schema_version": "2","#, .memberType(path: "manifest", member: "schema_version")),
        (#""schema_hash": "6562ef76e180"#, #""schema_hash": "6562EF76E180"#, .invalidSchemaHash),
        (#""transition_class": "class_2","#, #""transition_class": "class_1","#, .unknownTransitionClass),
        (#""transition_class": "class_2","#, #""transition_class": "Class_2","#, .unknownTransitionClass),
        (#""transition_class": "class_2","#, #""transition_class": "initial","#, .transitionParentMismatch),
        (#""parent_schema": {"version": 1, "hash": "34b4fb511eaed7cf05589898e3fae5246623387112f6bc"#
            + #"ebe2afdf07ef18382c"},"#, #""parent_schema": null,"#, .transitionParentMismatch),
        (#""parent_schema": {"version": 1, "hash": "#, #""parent_schema": {"version": 1, "hush": "#,
         .invalidParentSchema(.missingMember("hash"))),
        (#""compatibility_floor": 1,"#, #""compatibility_floor": 3,"#, .invalidCompatibilityFloor),
        (#""compatibility_floor": 1,"#, #""compatibility_floor": 0,"#, .invalidCompatibilityFloor),
        (#""composition": "multi_scope","#, #""composition": "multi","#, .unknownComposition(tableID: "tbl_notes")),
        (#""composition": "multi_scope","#, "", .missingMember(path: "manifest.tables[0]", member: "composition")),
        (#""table_id": "tbl_notes","#, #""table_id": "","#,
         .emptyString(path: "manifest.tables[0]", member: "table_id")),
        (#""relation_id": "rel_notes","#, #""relation_id": 7,"#,
         .memberType(path: "manifest.tables[0]", member: "relation_id")),
        (#""name": "id", "type": "string", "nullable": false, "writable": false"#,
         #""name": "id", "type": "string", "nullable": false, "writable": true"#,
         .primaryKeyWritable(tableID: "tbl_notes")),
        (#""name": "id", "type": "string", "nullable": false, "writable": false"#,
         #""name": "id", "type": "string", "nullable": true, "writable": false"#,
         .primaryKeyNullable(tableID: "tbl_notes")),
        (#""name": "id", "type": "string", "nullable": false, "writable": false"#,
         #""name": "id", "type": "float", "nullable": false, "writable": false"#,
         .primaryKeyType(tableID: "tbl_notes")),
        (#""primary_key_field_id": "fld_notes_id","#, #""primary_key_field_id": "fld_notes_nope","#,
         .primaryKeyFieldMissing(tableID: "tbl_notes")),
        (#""name": "deleted_at", "type": "datetime", "nullable": true, "writable": false"#,
         #""name": "deleted_at", "type": "string", "nullable": true, "writable": false"#,
         .lifecycleFieldNotDatetime(tableID: "tbl_notes", member: "deleted_at_field_id")),
        (#""name": "deleted_at", "type": "datetime", "nullable": true, "writable": false"#,
         #""name": "deleted_at", "type": "datetime", "nullable": true, "writable": true"#,
         .lifecycleFieldWritable(tableID: "tbl_notes", member: "deleted_at_field_id")),
        (#""deleted_at_field_id": "fld_notes_deleted_at""#, #""deleted_at_field_id": "fld_gone""#,
         .lifecycleFieldMissing(tableID: "tbl_notes", member: "deleted_at_field_id")),
        (#""deleted_at_field_id": "fld_notes_deleted_at""#, #""deleted_at_field_id": 5"#,
         .memberType(path: "manifest.tables[0].lifecycle", member: "deleted_at_field_id")),
        (#""created_at_field_id": null, "#, "",
         .missingMember(path: "manifest.tables[0].lifecycle", member: "created_at_field_id")),
        (#""precision": 10, "scale": 2}"#, #""scale": 2}"#,
         .decimalPrecisionScaleMissing(tableID: "tbl_notes", fieldID: "fld_notes_score")),
        (#""precision": 10, "scale": 2}"#, #""precision": 0, "scale": 0}"#,
         .precisionOutOfRange(tableID: "tbl_notes", fieldID: "fld_notes_score")),
        (#""precision": 10, "scale": 2}"#, #""precision": 10.5, "scale": 2}"#,
         .precisionOutOfRange(tableID: "tbl_notes", fieldID: "fld_notes_score")),
        (#""precision": 10, "scale": 2}"#, #""precision": 10, "scale": 11}"#,
         .scaleOutOfRange(tableID: "tbl_notes", fieldID: "fld_notes_score")),
        (#""precision": 10, "scale": 2}"#, #""precision": 10, "scale": -1}"#,
         .scaleOutOfRange(tableID: "tbl_notes", fieldID: "fld_notes_score")),
        (#""type": "int", "nullable": true, "writable": true}"#,
         #""type": "int", "nullable": true, "writable": true, "precision": 3, "scale": 0}"#,
         .precisionScaleOnNonDecimal(tableID: "tbl_notes", fieldID: "fld_notes_color")),
        (#""type": "int", "nullable": true, "writable": true}"#,
         #""type": "integer", "nullable": true, "writable": true}"#,
         .unknownType(tableID: "tbl_notes", fieldID: "fld_notes_color")),
        (#""type": "int", "nullable": true, "writable": true}"#,
         #""type": "int", "nullable": "true", "writable": true}"#,
         .memberType(path: "manifest.tables[0].fields[1]", member: "nullable")),
        (#""type": "int", "nullable": true, "writable": true}"#,
         #""type": "int", "nullable": true, "writable": true, "default": 0}"#,
         .unknownMember(path: "manifest.tables[0].fields[1]", member: "default")),
        (#"{"field_id": "fld_notes_color", "name": "color", "type": "int", "nullable": true, "writable": true},"#,
         #"{"field_id": "fld_notes_color", "name": "color", "type": "int", "nullable": true, "writable": true},"#
            + #"{"field_id": "fld_notes_color", "name": "hue", "type": "int", "nullable": true, "writable": true},"#,
         .duplicateField(tableID: "tbl_notes", fieldID: "fld_notes_color")),
        (#""field_ids": ["fld_notes_owner", "fld_notes_updated_at"]"#, #""field_ids": []"#,
         .indexWithoutFields(tableID: "tbl_notes", indexID: "idx_notes_owner")),
        (#""field_ids": ["fld_notes_owner", "fld_notes_updated_at"]"#, #""field_ids": ["fld_notes_owner", "fld_x"]"#,
         .indexUnknownField(tableID: "tbl_notes", indexID: "idx_notes_owner", fieldID: "fld_x")),
        (#""unique": false}"#, #""unique": "no"}"#,
         .memberType(path: "manifest.tables[0].indexes[0]", member: "unique")),
        (#""indexes": [{"index_id": "idx_notes_owner", "name": "idx_notes_owner", "#,
         #""indexes": [{"index_id": "idx_notes_owner", "name": "again", "field_ids": ["fld_notes_id"], "#
            + #""unique": true}, "#
            + #"{"index_id": "idx_notes_owner", "name": "idx_notes_owner", "#,
         .duplicateIndex(tableID: "tbl_notes", indexID: "idx_notes_owner")),
        (#""name": "notes","#, #""name": "no\uFDD0tes","#, .noncharacter),
    ] as [(String, String, ManifestError)])
    func rules(find: String, replacement: String, expected: ManifestError) throws {
        #expect(IntegrityFixtures.notesManifest.contains(find))
        let text = IntegrityFixtures.notesManifest.replacing(find, with: replacement)
        #expect(rejection(try IntegrityFixtures.json(text)) == expected)
    }

    // MARK: Rejections built programmatically

    @Test("an empty table list is rejected")
    func noTables() throws {
        let json = try IntegrityFixtures.json(IntegrityFixtures.notesManifest)
        #expect(rejection(replacingMember(json, "tables", with: .array([]))) == .noTables)
        #expect(rejection(replacingMember(json, "tables", with: .object(JSONObject([]))))
            == .memberType(path: "manifest", member: "tables"))
    }

    @Test("a table listed twice is rejected")
    func duplicateTable() throws {
        let json = try IntegrityFixtures.json(IntegrityFixtures.notesManifest)
        let table = try firstTable(json)
        #expect(rejection(replacingMember(json, "tables", with: .array([table, table])))
            == .duplicateTable(tableID: "tbl_notes"))
    }

    @Test("a table without fields is rejected")
    func noFields() throws {
        let json = try IntegrityFixtures.json(IntegrityFixtures.notesManifest)
        let table = replacingMember(try firstTable(json), "fields", with: .array([]))
        #expect(rejection(replacingMember(json, "tables", with: .array([table]))) == .noFields(tableID: "tbl_notes"))
    }

    @Test("a member repeated in a hand-built object is rejected")
    func duplicateMember() throws {
        let json = try IntegrityFixtures.json(IntegrityFixtures.notesManifest)
        let object = try #require(json.objectValue)
        let repeated = JSONMember("schema_version", .number(JSONNumber(2)))
        let doubled = JSONValue.object(JSONObject(object.members + [repeated]))
        #expect(rejection(doubled) == .duplicateMember(path: "manifest", member: "schema_version"))
        #expect(rejection(.array([])) == .notAnObject(path: "manifest"))
    }

    @Test("octets that are not strict JSON are rejected as malformed")
    func malformedOctets() {
        #expect(throws: ManifestError.malformedJSON(JSONParseError(.unexpectedEnd, at: 1))) {
            try SchemaManifest(bytes: Array("{".utf8))
        }
        let duplicate = Array(#"{"schema_version":1,"schema_version":1}"#.utf8)
        do throws(ManifestError) {
            _ = try SchemaManifest(bytes: duplicate)
            Issue.record("a duplicate member was accepted")
        } catch {
            #expect(error.rule == "malformed_json")
        }
    }

    @Test("IDs are compared by exact octets: NFC and NFD spellings are different fields and tables")
    func exactIdentifiers() throws {
        let nfc = "fld_\u{E9}"
        let nfd = "fld_e\u{301}"
        let fields = """
            {"field_id": "\(nfc)", "name": "a", "type": "string", "nullable": true, "writable": true},
            {"field_id": "\(nfd)", "name": "b", "type": "string", "nullable": true, "writable": true},
            """
        var text = IntegrityFixtures.notesManifest.replacing(#""fields": ["#, with: #""fields": ["# + fields)
        text = text.replacing(#""table_id": "tbl_notes","#, with: "\"table_id\": \"tbl_\u{E9}\",")
        let computed = try SchemaManifest.computeHash(json: IntegrityFixtures.json(text))
        let manifest = try IntegrityFixtures.manifest(text.replacing(IntegrityFixtures.notesHash, with: computed))
        #expect(manifest.table(id: "tbl_\u{E9}") != nil)
        #expect(manifest.table(id: "tbl_e\u{301}") == nil)
        let table = try #require(manifest.table(id: "tbl_\u{E9}"))
        #expect(table.fields.count == 10)
        #expect(table.field(id: nfc)?.name == "a")
        #expect(table.field(id: nfd)?.name == "b")
    }

    @Test("manifest rule names are distinct")
    func ruleNames() {
        let samples: [ManifestError] = [
            .malformedJSON(JSONParseError(.unexpectedEnd, at: 0)), .notAnObject(path: ""),
            .missingMember(path: "", member: ""), .unknownMember(path: "", member: ""),
            .duplicateMember(path: "", member: ""), .memberType(path: "", member: ""),
            .emptyString(path: "", member: ""), .invalidSchemaVersion, .invalidSchemaHash,
            .invalidParentSchema(.notAnObject), .unknownTransitionClass, .transitionParentMismatch,
            .invalidCompatibilityFloor, .noTables, .duplicateTable(tableID: ""), .unknownComposition(tableID: ""),
            .noFields(tableID: ""), .duplicateField(tableID: "", fieldID: ""), .unknownType(tableID: "", fieldID: ""),
            .decimalPrecisionScaleMissing(tableID: "", fieldID: ""),
            .precisionScaleOnNonDecimal(tableID: "", fieldID: ""),
            .precisionOutOfRange(tableID: "", fieldID: ""), .scaleOutOfRange(tableID: "", fieldID: ""),
            .primaryKeyFieldMissing(tableID: ""), .primaryKeyType(tableID: ""), .primaryKeyNullable(tableID: ""),
            .primaryKeyWritable(tableID: ""), .lifecycleFieldMissing(tableID: "", member: ""),
            .lifecycleFieldNotDatetime(tableID: "", member: ""), .lifecycleFieldWritable(tableID: "", member: ""),
            .duplicateIndex(tableID: "", indexID: ""), .indexWithoutFields(tableID: "", indexID: ""),
            .indexUnknownField(tableID: "", indexID: "", fieldID: ""), .noncharacter,
            .hashMismatch(declared: "", computed: ""),
        ]
        #expect(Set(samples.map(\.rule)).count == samples.count)
    }
}
