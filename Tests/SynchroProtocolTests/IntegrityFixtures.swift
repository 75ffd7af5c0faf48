import SynchroProtocol

/// Inputs quoted from `spec/integrity.md` §8 and `spec/wire-protocol.md` §2.10.4 and §7, shared by
/// the value, manifest, row and scope digest tests.
enum IntegrityFixtures {
    /// `spec/integrity.md` §8.1: schema version 3, three tables.
    static let manifestV3 = #"""
        {
          "schema_version": 3,
          "schema_hash": "a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729",
          "parent_schema": {"version": 2, "hash": "5f1d8e0c2b7a4963a1e0d9c8b7a6f5e4d3c2b1a09f8e7d6c5b4a392817161514"},
          "transition_class": "class_2",
          "compatibility_floor": 2,
          "tables": [
            {"table_id": "tbl_tasks", "relation_id": "rel_tasks", "name": "tasks",
             "composition": "multi_scope", "primary_key_field_id": "fld_task_id",
             "lifecycle": {"created_at_field_id": null, "updated_at_field_id": "fld_task_updated", \#
        "deleted_at_field_id": null},
             "fields": [
               {"field_id": "fld_task_id", "name": "id", "type": "string", "nullable": false, "writable": false},
               {"field_id": "fld_task_title", "name": "title", "type": "string", "nullable": false, "writable": true},
               {"field_id": "fld_task_done", "name": "done", "type": "boolean", "nullable": false, "writable": true},
               {"field_id": "fld_task_points", "name": "points", "type": "int", "nullable": true, "writable": true},
               {"field_id": "fld_task_cost", "name": "cost", "type": "decimal", "nullable": true, "writable": true, \#
        "precision": 10, "scale": 2},
               {"field_id": "fld_task_meta", "name": "meta", "type": "json", "nullable": true, "writable": true},
               {"field_id": "fld_task_updated", "name": "updated_at", "type": "datetime", "nullable": false, \#
        "writable": false}],
             "indexes": [{"index_id": "idx_tasks_done", "name": "tasks_done", "field_ids": ["fld_task_done"], \#
        "unique": false}]},
            {"table_id": "tbl_counters", "relation_id": "rel_counters", "name": "counters",
             "composition": "single_scope", "primary_key_field_id": "fld_counter_id",
             "lifecycle": {"created_at_field_id": null, "updated_at_field_id": null, "deleted_at_field_id": null},
             "fields": [
               {"field_id": "fld_counter_id", "name": "id", "type": "int", "nullable": false, "writable": false},
               {"field_id": "fld_counter_ratio", "name": "ratio", "type": "float", "nullable": true, "writable": true},
               {"field_id": "fld_counter_day", "name": "day", "type": "date", "nullable": true, "writable": true},
               {"field_id": "fld_counter_at", "name": "at", "type": "time", "nullable": true, "writable": true}],
             "indexes": []},
            {"table_id": "tbl_blobs", "relation_id": "rel_blobs", "name": "blobs",
             "composition": "single_scope", "primary_key_field_id": "fld_blob_id",
             "lifecycle": {"created_at_field_id": null, "updated_at_field_id": null, "deleted_at_field_id": null},
             "fields": [
               {"field_id": "fld_blob_id", "name": "id", "type": "int64", "nullable": false, "writable": false},
               {"field_id": "fld_blob_data", "name": "data", "type": "bytes", "nullable": true, "writable": true}],
             "indexes": []}
          ]
        }
        """#

    static let manifestV3Hash = "a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"

    /// `spec/wire-protocol.md` §3.8: the `schema_definition` of the fresh-client connect example.
    static let notesManifest = #"""
        {
          "schema_version": 2,
          "schema_hash": "6562ef76e180120473ff41101886b1ff5d9bcd9f80af504b399ddd3f32244eb8",
          "parent_schema": {"version": 1, "hash": "34b4fb511eaed7cf05589898e3fae5246623387112f6bcebe2afdf07ef18382c"},
          "transition_class": "class_2",
          "compatibility_floor": 1,
          "tables": [
            {
              "table_id": "tbl_notes",
              "relation_id": "rel_notes",
              "name": "notes",
              "composition": "multi_scope",
              "primary_key_field_id": "fld_notes_id",
              "lifecycle": {"created_at_field_id": null, "updated_at_field_id": "fld_notes_updated_at", \#
        "deleted_at_field_id": "fld_notes_deleted_at"},
              "fields": [
                {"field_id": "fld_notes_body", "name": "body", "type": "string", "nullable": true, "writable": true},
                {"field_id": "fld_notes_color", "name": "color", "type": "int", "nullable": true, "writable": true},
                {"field_id": "fld_notes_deleted_at", "name": "deleted_at", "type": "datetime", "nullable": true, \#
        "writable": false},
                {"field_id": "fld_notes_id", "name": "id", "type": "string", "nullable": false, "writable": false},
                {"field_id": "fld_notes_owner", "name": "owner_id", "type": "string", "nullable": false, \#
        "writable": true},
                {"field_id": "fld_notes_pinned", "name": "pinned", "type": "boolean", "nullable": false, \#
        "writable": true},
                {"field_id": "fld_notes_score", "name": "score", "type": "decimal", "nullable": true, \#
        "writable": true, "precision": 10, "scale": 2},
                {"field_id": "fld_notes_updated_at", "name": "updated_at", "type": "datetime", "nullable": false, \#
        "writable": false}
              ],
              "indexes": [{"index_id": "idx_notes_owner", "name": "idx_notes_owner", \#
        "field_ids": ["fld_notes_owner", "fld_notes_updated_at"], "unique": false}]
            }
          ]
        }
        """#

    static let notesHash = "6562ef76e180120473ff41101886b1ff5d9bcd9f80af504b399ddd3f32244eb8"

    /// `spec/wire-protocol.md` §7.5.1: the canonical body of ``notesManifest``, 1,404 octets.
    static let notesCanonicalBody = #"""
        {"compatibility_floor":1,\#
        "parent_schema":{"hash":"34b4fb511eaed7cf05589898e3fae5246623387112f6bcebe2afdf07ef18382c","version":1},\#
        "schema_version":2,"tables":[{"composition":"multi_scope","fields":[{"field_id":"fld_notes_body",\#
        "name":"body","nullable":true,"type":"string","writable":true},{"field_id":"fld_notes_color","name":"color",\#
        "nullable":true,"type":"int","writable":true},{"field_id":"fld_notes_deleted_at","name":"deleted_at",\#
        "nullable":true,"type":"datetime","writable":false},{"field_id":"fld_notes_id","name":"id","nullable":false,\#
        "type":"string","writable":false},{"field_id":"fld_notes_owner","name":"owner_id","nullable":false,\#
        "type":"string","writable":true},{"field_id":"fld_notes_pinned","name":"pinned","nullable":false,\#
        "type":"boolean","writable":true},{"field_id":"fld_notes_score","name":"score","nullable":true,"precision":10,\#
        "scale":2,"type":"decimal","writable":true},{"field_id":"fld_notes_updated_at","name":"updated_at",\#
        "nullable":false,"type":"datetime","writable":false}],"indexes":[{"field_ids":["fld_notes_owner",\#
        "fld_notes_updated_at"],"index_id":"idx_notes_owner","name":"idx_notes_owner","unique":false}],\#
        "lifecycle":{"created_at_field_id":null,"deleted_at_field_id":"fld_notes_deleted_at",\#
        "updated_at_field_id":"fld_notes_updated_at"},"name":"notes","primary_key_field_id":"fld_notes_id",\#
        "relation_id":"rel_notes","table_id":"tbl_notes"}],"transition_class":"class_2"}
        """#

    /// `spec/wire-protocol.md` §7.5.3: `VEC-MANIFEST-SORTED-HASH-001`, deliberately unsorted.
    static let sortedHashManifest = #"""
        {"schema_version":1,"schema_hash":"a97280b716fe0f8a9553ba7c3b31b00dd03f7c7aacf0ff01a703d73182f3df31",\#
        "parent_schema":null,"transition_class":"initial","compatibility_floor":1,"tables":[
        {"table_id":"tbl_af","relation_id":"rel_af","name":"collision_second","composition":"single_scope",\#
        "primary_key_field_id":"ld_bc","lifecycle":{"created_at_field_id":null,"updated_at_field_id":null,\#
        "deleted_at_field_id":null},"fields":[{"field_id":"ld_bc","name":"id","type":"string","nullable":false,\#
        "writable":false}],"indexes":[]},
        {"table_id":"tbl_records","relation_id":"rel_records","name":"records","composition":"single_scope",\#
        "primary_key_field_id":"fld_id","lifecycle":{"created_at_field_id":null,"updated_at_field_id":null,\#
        "deleted_at_field_id":null},"fields":[{"field_id":"fld_time","name":"time_value","type":"time",\#
        "nullable":false,"writable":true},{"field_id":"fld_text","name":"text_value","type":"string","nullable":true,\#
        "writable":true},{"field_id":"fld_json","name":"json_value","type":"json","nullable":false,"writable":true},\#
        {"field_id":"fld_int","name":"int_value","type":"int","nullable":false,"writable":true},{"field_id":"fld_id",\#
        "name":"id","type":"string","nullable":false,"writable":false},{"field_id":"fld_i64","name":"int64_value",\#
        "type":"int64","nullable":false,"writable":true},{"field_id":"fld_float","name":"float_value","type":"float",\#
        "nullable":false,"writable":true},{"field_id":"fld_dec","name":"decimal_value","type":"decimal",\#
        "nullable":false,"writable":true,"precision":6,"scale":2},{"field_id":"fld_dt","name":"datetime_value",\#
        "type":"datetime","nullable":false,"writable":true},{"field_id":"fld_date","name":"date_value","type":"date",\#
        "nullable":false,"writable":true},{"field_id":"fld_bytes","name":"bytes_value","type":"bytes",\#
        "nullable":false,"writable":true},{"field_id":"fld_bool","name":"bool_value","type":"boolean",\#
        "nullable":false,"writable":true}],"indexes":[]},
        {"table_id":"tbl_numbers","relation_id":"rel_numbers","name":"numbers","composition":"single_scope",\#
        "primary_key_field_id":"fld_number_id","lifecycle":{"created_at_field_id":null,"updated_at_field_id":null,\#
        "deleted_at_field_id":null},"fields":[{"field_id":"fld_number_id","name":"id","type":"int","nullable":false,\#
        "writable":false}],"indexes":[]},
        {"table_id":"tbl_a","relation_id":"rel_a","name":"collision_first","composition":"single_scope",\#
        "primary_key_field_id":"fld_bc","lifecycle":{"created_at_field_id":null,"updated_at_field_id":null,\#
        "deleted_at_field_id":null},"fields":[{"field_id":"fld_bc","name":"id","type":"string","nullable":false,\#
        "writable":false}],"indexes":[]},
        {"table_id":"tbl_longs","relation_id":"rel_longs","name":"longs","composition":"single_scope",\#
        "primary_key_field_id":"fld_long_id","lifecycle":{"created_at_field_id":null,"updated_at_field_id":null,\#
        "deleted_at_field_id":null},"fields":[{"field_id":"fld_long_id","name":"id","type":"int64","nullable":false,\#
        "writable":false}],"indexes":[]}]}
        """#

    static let sortedHashManifestHash = "a97280b716fe0f8a9553ba7c3b31b00dd03f7c7aacf0ff01a703d73182f3df31"

    /// Parses JSON text with the strict parser.
    static func json(_ text: String) throws -> JSONValue {
        try StrictJSONParser().parse(text)
    }

    /// Parses and validates a manifest.
    static func manifest(_ text: String) throws -> SchemaManifest {
        try SchemaManifest(json: json(text))
    }

    /// Decodes hex written for reading (spaces and line breaks between groups are ignored).
    static func octets(_ hex: String) -> [UInt8] {
        let compact = String(hex.unicodeScalars.filter { $0 != " " && $0 != "\n" })
        guard let octets = Hex.decode(compact) else { fatalError("fixture hex is malformed") }
        return octets
    }
}
