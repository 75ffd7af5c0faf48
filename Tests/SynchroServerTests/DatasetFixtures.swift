import Foundation
import SynchroProtocol
import SynchroServer
import _SeedkitTestSupport

/// Parses JSON text written in a test (the strict parser, as the dataset loader uses).
func json(_ text: String) -> JSONValue {
    do {
        return try StrictJSONParser().parse(text)
    } catch {
        fatalError("test JSON does not parse: \(error)")
    }
}

extension JSONValue {
    /// A copy with the value at the dotted `path` replaced by `value`, or removed when `value` is
    /// nil. Array elements are addressed by index; `+` appends. (Identifiers contain no dots.)
    func setting(_ path: String, to value: JSONValue?) -> JSONValue {
        setting(path.split(separator: ".").map(String.init)[...], to: value)
    }

    private func setting(_ path: ArraySlice<String>, to value: JSONValue?) -> JSONValue {
        guard let head = path.first else { return value ?? .null }
        let rest = path.dropFirst()
        switch self {
        case .object(let object):
            var members = object.members
            if let i = members.firstIndex(where: { $0.key.exactlyEquals(head) }) {
                if rest.isEmpty && value == nil {
                    members.remove(at: i)
                } else {
                    members[i] = JSONMember(head, members[i].value.setting(rest, to: value))
                }
            } else if let value {
                members.append(JSONMember(head, JSONValue.object(JSONObject([])).setting(rest, to: value)))
            }
            return .object(JSONObject(members))
        case .array(var elements):
            if head == "+", let value {
                elements.append(value)
            } else if let i = Int(head) {
                if rest.isEmpty && value == nil {
                    elements.remove(at: i)
                } else {
                    elements[i] = elements[i].setting(rest, to: value)
                }
            }
            return .array(elements)
        default:
            return self
        }
    }

    /// The member `name` of an object (test shorthand; nil for anything else).
    subscript(member name: String) -> JSONValue? { objectValue?[name] }

    /// JSON text that keeps member order and every number's literal (RFC 8785 would round
    /// integers beyond 2^53, which the generator parameters must keep exact).
    var text: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .number(let number): out += Array(number.literal.utf8)
        case .string(let string): Self.write(string, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string literal; unlike RFC 8785 it accepts noncharacters, which some cases need.
    private static func write(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out += [UInt8(ascii: "\\"), byte]
            case 0..<0x20:
                out += Array("\\u00\(Hex.encode([byte]))".utf8)
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// A small valid dataset (two shared tables in a portable scope, one per-user table) that each
/// invalid-dataset case breaks in exactly one way.
struct DatasetFixture: Sendable {
    var manifest = json(#"""
        {"schema_version": 1, "parent_schema": null, "transition_class": "initial", "compatibility_floor": 1,
         "tables": [
          {"table_id": "tbl_groups", "relation_id": "rel_groups", "name": "groups", "composition": "single_scope",
           "primary_key_field_id": "fld_group_id",
           "lifecycle": {"created_at_field_id": null, "updated_at_field_id": null, "deleted_at_field_id": null},
           "fields": [
            {"field_id": "fld_group_id", "name": "id", "type": "int", "nullable": false, "writable": false},
            {"field_id": "fld_group_name", "name": "name", "type": "string", "nullable": false, "writable": true}],
           "indexes": []},
          {"table_id": "tbl_items", "relation_id": "rel_items", "name": "items", "composition": "single_scope",
           "primary_key_field_id": "fld_item_id",
           "lifecycle": {"created_at_field_id": null, "updated_at_field_id": "fld_item_updated",
                         "deleted_at_field_id": null},
           "fields": [
            {"field_id": "fld_item_id", "name": "id", "type": "int64", "nullable": false, "writable": false},
            {"field_id": "fld_item_group", "name": "group_id", "type": "int", "nullable": false, "writable": true},
            {"field_id": "fld_item_label", "name": "label", "type": "string", "nullable": true, "writable": true},
            {"field_id": "fld_item_qty", "name": "qty", "type": "int", "nullable": true, "writable": true},
            {"field_id": "fld_item_updated", "name": "updated_at", "type": "datetime", "nullable": false,
             "writable": false}],
           "indexes": []},
          {"table_id": "tbl_notes", "relation_id": "rel_notes", "name": "notes", "composition": "single_scope",
           "primary_key_field_id": "fld_note_id",
           "lifecycle": {"created_at_field_id": null, "updated_at_field_id": null,
                         "deleted_at_field_id": "fld_note_deleted"},
           "fields": [
            {"field_id": "fld_note_id", "name": "id", "type": "string", "nullable": false, "writable": false},
            {"field_id": "fld_note_owner", "name": "owner_id", "type": "string", "nullable": false, "writable": true},
            {"field_id": "fld_note_deleted", "name": "deleted_at", "type": "datetime", "nullable": true,
             "writable": false}],
           "indexes": []}]}
        """#)

    var dataset = json(#"""
        {"name": "fixture",
         "scopes": [
          {"id": "catalog", "portable": true, "tables": ["tbl_groups", "tbl_items"]},
          {"id_pattern": "user:{user}", "tables": {"tbl_notes": "fld_note_owner"}}],
         "generate": {"seed": 7, "users": ["alice", "bob"], "tables": {
          "tbl_groups": {"rows": 3, "fields": {
           "fld_group_id": {"kind": "sequence"},
           "fld_group_name": {"kind": "words"}}},
          "tbl_items": {"rows": 10, "rows_overridable": true, "fields": {
           "fld_item_id": {"kind": "sequence", "start": 100},
           "fld_item_group": {"kind": "reference", "table": "tbl_groups"},
           "fld_item_label": {"kind": "pick", "values": ["a", "b"], "null_ratio": 0.5},
           "fld_item_qty": {"kind": "int", "min": 0, "max": 9}}},
          "tbl_notes": {"rows_per_user": 2, "fields": {
           "fld_note_id": {"kind": "uuid"},
           "fld_note_owner": {"kind": "owner"}}}}}}
        """#)

    /// Octets written instead of the JSON values, for syntax errors.
    var rawManifest: [UInt8]?
    var rawDataset: [UInt8]?
    /// Leaves `dataset.json` out of the folder.
    var omitDataset = false

    /// Writes the two files into a fresh folder and loads it.
    func load() throws -> Dataset {
        let directory = try TemporaryDirectory(prefix: "seedkit-dataset")
        try directory.write("manifest.json", rawManifest ?? manifest.text)
        if !omitDataset {
            try directory.write("dataset.json", rawDataset ?? dataset.text)
        }
        return try Dataset(directory: directory.url)
    }

    /// The rule `load()` reports, nil when the dataset loads.
    func failure() throws -> DatasetError? {
        do {
            _ = try load()
            return nil
        } catch let error as DatasetError {
            return error
        }
    }
}

/// A manifest with one field of every portable type and a dataset using every generator kind.
enum EveryTypeFixture {
    static let manifest = json(#"""
        {"schema_version": 1, "parent_schema": null, "transition_class": "initial", "compatibility_floor": 1,
         "tables": [
          {"table_id": "tbl_all", "relation_id": "rel_all", "name": "all_types", "composition": "multi_scope",
           "primary_key_field_id": "fld_all_id",
           "lifecycle": {"created_at_field_id": "fld_all_created", "updated_at_field_id": "fld_all_updated",
                         "deleted_at_field_id": "fld_all_deleted"},
           "fields": [
            {"field_id": "fld_all_id", "name": "id", "type": "string", "nullable": false, "writable": false},
            {"field_id": "fld_all_int", "name": "i", "type": "int", "nullable": false, "writable": true},
            {"field_id": "fld_all_int64", "name": "l", "type": "int64", "nullable": false, "writable": true},
            {"field_id": "fld_all_seq64", "name": "s64", "type": "int64", "nullable": false, "writable": true},
            {"field_id": "fld_all_dec", "name": "d", "type": "decimal", "nullable": false, "writable": true,
             "precision": 6, "scale": 3},
            {"field_id": "fld_all_float", "name": "f", "type": "float", "nullable": true, "writable": true},
            {"field_id": "fld_all_bool", "name": "b", "type": "boolean", "nullable": false, "writable": true},
            {"field_id": "fld_all_dt", "name": "dt", "type": "datetime", "nullable": false, "writable": true},
            {"field_id": "fld_all_date", "name": "da", "type": "date", "nullable": true, "writable": true},
            {"field_id": "fld_all_time", "name": "t", "type": "time", "nullable": false, "writable": true},
            {"field_id": "fld_all_json", "name": "j", "type": "json", "nullable": false, "writable": true},
            {"field_id": "fld_all_bytes", "name": "by", "type": "bytes", "nullable": false, "writable": true},
            {"field_id": "fld_all_pick_bytes", "name": "pb", "type": "bytes", "nullable": true, "writable": true},
            {"field_id": "fld_all_pick_json", "name": "pj", "type": "json", "nullable": false, "writable": true},
            {"field_id": "fld_all_words", "name": "w", "type": "string", "nullable": false, "writable": true},
            {"field_id": "fld_all_ref", "name": "r", "type": "string", "nullable": true, "writable": true},
            {"field_id": "fld_all_null", "name": "n", "type": "float", "nullable": true, "writable": true},
            {"field_id": "fld_all_created", "name": "created_at", "type": "datetime", "nullable": false,
             "writable": false},
            {"field_id": "fld_all_updated", "name": "updated_at", "type": "datetime", "nullable": false,
             "writable": false},
            {"field_id": "fld_all_deleted", "name": "deleted_at", "type": "datetime", "nullable": true,
             "writable": false}],
           "indexes": [{"index_id": "idx_all_int", "name": "all_int", "field_ids": ["fld_all_int"], "unique": false}]},
          {"table_id": "tbl_codes", "relation_id": "rel_codes", "name": "codes", "composition": "single_scope",
           "primary_key_field_id": "fld_code_id",
           "lifecycle": {"created_at_field_id": null, "updated_at_field_id": null, "deleted_at_field_id": null},
           "fields": [{"field_id": "fld_code_id", "name": "id", "type": "string", "nullable": false,
                       "writable": false}],
           "indexes": []}]}
        """#)

    static let dataset = json(#"""
        {"name": "every-type",
         "scopes": [
          {"id": "codes", "portable": true, "tables": ["tbl_codes"]},
          {"id": "all-a", "portable": false, "tables": ["tbl_all"]},
          {"id": "all-b", "portable": true, "tables": ["tbl_all"]}],
         "generate": {"seed": 1, "tables": {
          "tbl_codes": {"rows": 5, "fields": {"fld_code_id": {"kind": "sequence", "prefix": "C", "pad": 3}}},
          "tbl_all": {"rows": 400, "rows_overridable": true, "fields": {
           "fld_all_id": {"kind": "sequence", "prefix": "row-", "start": 0, "step": 7, "pad": 6},
           "fld_all_int": {"kind": "int", "min": -2147483648, "max": 2147483647},
           "fld_all_int64": {"kind": "int", "min": -9223372036854775808, "max": 9223372036854775807},
           "fld_all_seq64": {"kind": "sequence", "start": 9223372036854775000, "step": 1},
           "fld_all_dec": {"kind": "decimal", "min": "-999.999", "max": "999.999"},
           "fld_all_float": {"kind": "float", "min": -1000000, "max": 1000000, "decimals": 6, "null_ratio": 0.1},
           "fld_all_bool": {"kind": "boolean"},
           "fld_all_dt": {"kind": "datetime", "base": "1969-12-31T23:59:59.999999Z", "step_seconds": -86399,
                          "jitter_seconds": 3},
           "fld_all_date": {"kind": "date", "base": "2000-02-28", "step_days": 1, "null_ratio": 0.2},
           "fld_all_time": {"kind": "time", "min": "23:59:58.000000"},
           "fld_all_json": {"kind": "json", "template": {
             "z": [1, 2.50, "ü", null, true, {"$generate": {"kind": "sequence"}}],
             "a": {"$generate": {"kind": "decimal", "min": "-1", "max": "1", "scale": 4}},
             "é": {"$generate": {"kind": "float", "min": "-0.5", "max": "0.5", "decimals": 15}},
             "\ud83c\udf4e": {"$generate": {"kind": "int", "min": -9007199254740991, "max": 9007199254740991}},
             "\ue000": {"$generate": {"kind": "uuid"}},
             "t": [{"$generate": {"kind": "date", "base": "2024-02-29"}},
                   {"$generate": {"kind": "datetime", "base": "2024-02-29T12:00:00.000000Z", "step_seconds": 1}},
                   {"$generate": {"kind": "time"}},
                   {"$generate": {"kind": "bytes", "min_length": 1, "max_length": 5}},
                   {"$generate": {"kind": "null"}},
                   {"$generate": {"kind": "boolean", "probability": 1}},
                   {"$generate": {"kind": "sequence", "prefix": "s", "pad": 2}},
                   {"$generate": {"kind": "pick", "values": [{"k": [1e2]}, "x", -0.0]}},
                   {"$generate": {"kind": "words", "min": 3, "max": 3, "null_ratio": 0.5}}]}},
           "fld_all_bytes": {"kind": "bytes", "min_length": 0, "max_length": 70},
           "fld_all_pick_bytes": {"kind": "pick", "values": ["", "AQ", "_-8", null]},
           "fld_all_pick_json": {"kind": "pick", "values": ["null", "{\"a\":[1,\"b\"]}", "\"\""]},
           "fld_all_words": {"kind": "words", "min": 1, "max": 64},
           "fld_all_ref": {"kind": "reference", "table": "tbl_codes", "null_ratio": 0.3},
           "fld_all_null": {"kind": "null"}}}}}}
        """#)
}
