import Foundation
import SeedSources
import SQLiteKit
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// The digest a delta seed stores is the one docs/delta-sources.md defines — SHA-256 over, in key order, each row's
/// RFC 8785 array of the JSON its stored values stand for, one line each — recomputed here from the documented rule
/// alone (values built as `JSONValue`s, encoded by `CanonicalJSON`), for every portable type and the awkward values
/// (escapes, non-ASCII, noncharacter-free astral text, integers beyond 15 digits, negative zero, null) that the
/// export's byte-level encoder writes without building those values. Real HTTP on loopback, real SQLite files.
@Suite struct DeltaDigestTests {
    let server: DeltaReferenceServer
    let directory: TemporaryDirectory

    static let columns: [(name: String, type: String, nullable: Bool)] = [
        ("id", "string", false), ("label", "string", true), ("count", "int", true), ("big", "int64", true),
        ("price", "decimal", true), ("ratio", "float", true), ("flag", "boolean", true),
        ("seen", "datetime", true), ("day", "date", true), ("clock", "time", true), ("doc", "json", true),
        ("blob", "bytes", true),
    ]

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-delta-digest")
        server = try DeltaReferenceServer(storePath: directory.path("store.db"), entities: ["things"], token: nil)
        try server.start()
        func row(_ id: String, _ values: [String: JSONValue]) -> (String, JSONObject?) {
            (id, JSONObject([JSONMember("id", .string(id))] + values.sorted { $0.key < $1.key }.map {
                JSONMember($0.key, $0.value)
            }))
        }
        func number(_ literal: String) -> JSONValue { .number(JSONNumber(literal: literal)!) }
        try server.store.write(entity: "things", [
            row("t1", ["label": .string("plain"), "count": number("7"), "big": number("-123456789012345"),
                       "price": number("12.50"), "ratio": number("0.1"), "flag": .bool(true),
                       "seen": .string("2026-12-02T06:00:00.123+01:00"), "day": .string("2026-12-02"),
                       "clock": .string("06:00:00"), "doc": .object(JSONObject([
                           JSONMember("z", .number(JSONNumber(Int64(1)))), JSONMember("a", .array([.null, .bool(false)])),
                       ])), "blob": .string("AAEC")]),
            row("t2", ["label": .string("quote \" backslash \\ tab \t newline \n nul \u{0} del \u{7F}"),
                       "count": number("-2147483648"), "big": number("9007199254740992"), "ratio": number("-0"),
                       "flag": .bool(false), "price": .string("-0.000001")]),
            row("t3", ["label": .string("é e\u{301} 日本 🙂 \u{2028}"), "big": number("1000000000000000"),
                       "ratio": number("1e21"), "doc": .string("text in a json column")]),
            row("t4", ["big": number("-1000000000000001"), "ratio": number("123456.789"), "label": .null]),
            row("q\"5", ["label": .string("deleted below")]),
            row("t6", [:]),
        ])
        try server.store.write(entity: "things", [("q\"5", nil)])
    }

    func definition() throws -> DeltaSourceDefinition {
        let columns = Self.columns.map { #"{"name": "\#($0.name)", "type": "\#($0.type)", "nullable": \#($0.nullable)}"# }
        return try DeltaSourceDefinition(bytes: Array("""
            {"format": "seedkit-delta-source/1", "base_url": "\(server.baseURL)",
             "entities": [{"name": "things", "table": "things", "primary_key": "id",
               "columns": [\(columns.joined(separator: ", "))],
               "paging": {"shape": "changes", "path": "/v1/sync/things", "limit": 2}}]}
            """.utf8))
    }

    /// The documented digest of the exported table, from its stored values.
    func documentedDigest(_ path: String) throws -> (hex: String, rows: Int64) {
        let connection = try Connection(path: path, mode: .readOnly)
        defer { connection.close() }
        let list = Self.columns.map { SQLiteIdentifier.quote($0.name) }.joined(separator: ", ")
        var hash = SHA256()
        var rows: Int64 = 0
        for row in try connection.rows("SELECT \(list) FROM things ORDER BY id") {
            let values = zip(row, Self.columns).map { value, column -> JSONValue in
                switch (value, column.type) {
                case (.null, _): return .null
                case (.integer(let int), "boolean"): return .bool(int == 1)
                case (.integer(let int), _): return .number(JSONNumber(int))
                case (.real(let double), _): return .number(JSONNumber(double)!)
                case (.text(let text), "json"): return (try? StrictJSONParser().parse(text)) ?? .null
                case (.text(let text), _): return .string(text)
                case (.blob, _): return .null
                }
            }
            hash.update(try CanonicalJSON.encode(.array(values)) + [0x0A])
            rows += 1
        }
        return (Hex.encode(hash.finalize()), rows)
    }

    @Test func storedDigestIsTheDocumentedOne() throws {
        let report = try DeltaExporter.export(
            definition: try definition(), bearerToken: nil, to: directory.path("seed.db"))
        #expect(DeltaExporter.verify(path: report.path).isEmpty)
        let expected = try documentedDigest(report.path)
        #expect(expected.rows == 5)
        #expect(report.entities.first?.rows == expected.rows)
        #expect(report.entities.first?.digest == expected.hex)
        // The deleted row's id, with its quote, arrived as a delete the exporter could read.
        let connection = try Connection(path: report.path, mode: .readOnly)
        defer { connection.close() }
        #expect(try connection.scalar("SELECT count(*) FROM things WHERE id = 'q\"5'")?.integerValue == 0)
        #expect(try connection.scalar("SELECT label FROM things WHERE id = 't3'")?.textValue == "é e\u{301} 日本 🙂 \u{2028}")
    }
}
