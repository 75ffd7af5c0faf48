import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
@testable import SeedArtifacts
@testable import SynchroStore

@Suite("Seed verifier: what the row audit keeps of the rows")
struct AuditedRowsTests {
    @Test("dense rowids are not kept; a gap keeps them; positions, edge bits and exceptions follow the scan")
    func denseAndSparseRows() throws {
        let manifest = try Self.threeKeyTypesManifest()
        let table = try #require(manifest.localSchema.first { $0.tableID == "tbl_int" })
        let key = try #require(table.primaryKeyColumn)
        for rowids in [Array(Int64(5)...Int64(200)), [1, 2, 3, 7, 8, 100] + Array(Int64(101)...Int64(190))] {
            let rows = AuditedRows(table: table, key: key)
            for (position, rowid) in rowids.enumerated() { rows.append(rowid: rowid, digested: position != 2) }
            #expect(rows.count == rowids.count && rows.lastRowid == rowids.last)
            for (position, rowid) in rowids.enumerated() {
                #expect(rows.position(of: rowid) == position)
                #expect(rows.isDigested(position) == (position != 2))
            }
            for absent in [Int64(0), 4, 6, 9, 99, 191, 201, 1000] where !rowids.contains(absent) {
                #expect(rows.position(of: absent) == nil)
            }
            #expect(rows.position(of: .min) == nil && rows.position(of: .max) == nil)
            #expect(rows.hasDigestExceptions)
            for position in rowids.indices where position % 3 != 0 { rows.markEdge(position) }
            var without: [Int] = []
            rows.positionsWithoutEdge { without.append($0) }
            #expect(without == rowids.indices.filter { $0 % 3 == 0 })
        }
    }

    @Test("rows joined from two halves keep their positions and exceptions, dense or not")
    func appendedRowsMatchOneScan() throws {
        let manifest = try Self.threeKeyTypesManifest()
        let table = try #require(manifest.localSchema.first { $0.tableID == "tbl_int" })
        let key = try #require(table.primaryKeyColumn)
        for step in [Int64(1), 3] {
            let one = AuditedRows(table: table, key: key)
            let lower = AuditedRows(table: table, key: key)
            let upper = AuditedRows(table: table, key: key)
            for index in Int64(1)...100 {
                one.append(rowid: index * step, digested: index != 70)
                (index <= 40 ? lower : upper).append(rowid: index * step, digested: index != 70)
            }
            upper.versionDigests[1] = [9]
            upper.differingDigests[1] = [8]
            upper.withoutVersion.insert(2)
            upper.versionsMatched = 3
            lower.versionsMatched = 4
            lower.append(contentsOf: upper)
            #expect(lower.count == one.count && lower.lastRowid == one.lastRowid)
            #expect(lower.versionDigests == [41: [9]] && lower.differingDigests == [41: [8]])
            #expect(lower.withoutVersion == [42])
            #expect(lower.versionsMatched == 7)
            for position in 0..<one.count {
                #expect(lower.isDigested(position) == one.isDigested(position))
                #expect(lower.position(of: Int64(position + 1) * step) == position)
            }
            var without = 0
            lower.positionsWithoutEdge { _ in without += 1 }
            #expect(without == 100)
        }
    }

    @Test("the edge order the scope digests read puts record IDs in row-identity order for every key type")
    func edgeOrderIsIdentityOrder() throws {
        let manifest = try Self.threeKeyTypesManifest()
        let keys: [String: [String]] = [
            "tbl_int": ["0", "1", "2", "-1", "-2147483648", "2147483647", "255", "256", "10", "9"],
            "tb_long": ["0", "-9223372036854775808", "9223372036854775807", "42", "-42", "100", "99"],
            "tbl_text": ["", "a", "b", "ab", "grün", "z", "zz", "aaa", "é", "\u{7f}", "ä"],
        ]
        let connection = try Connection(path: ":memory:")
        defer { connection.close() }
        try connection.execute("CREATE TABLE e (record_id TEXT NOT NULL)")
        for table in manifest.localSchema {
            let key = try #require(table.primaryKeyColumn)
            let recordIDs = try #require(keys[table.tableID])
            try connection.execute("DELETE FROM e")
            for recordID in recordIDs.reversed() {
                try connection.run("INSERT INTO e VALUES (?1)", [.text(recordID)])
            }
            let order = try #require(SeedRowAudit.edgeOrder(key.logicalType))
            let ordered = try connection.query("SELECT record_id FROM e ORDER BY \(order)") { try $0.text(at: 0) }
            func identity(_ recordID: String) throws -> RowIdentity {
                try RowIdentity(manifest: manifest.manifest, tableID: table.tableID,
                                primaryKey: LocalStorageForm.keyJSON(recordID: recordID, type: key.logicalType))
            }
            let expected = try recordIDs.map { (try identity($0), $0) }.sorted { $0.0 < $1.0 }.map(\.1)
            #expect(ordered == expected, "\(table.tableID)")
        }
    }

    /// Three tables keyed by `int`, `int64` and `string`; `tb_long` is the shortest table ID, so its identities sort
    /// first.
    static func threeKeyTypesManifest() throws -> ClientManifest {
        func table(_ id: String, _ type: PortableType) -> String {
            #"""
            {"table_id": "\#(id)", "relation_id": "rel_\#(id)", "name": "\#(id)_rows", "composition": "single_scope",
             "primary_key_field_id": "fld_key",
             "lifecycle": {"created_at_field_id": null, "updated_at_field_id": null, "deleted_at_field_id": null},
             "fields": [{"field_id": "fld_key", "name": "id", "type": "\#(type.rawValue)", "nullable": false,
                         "writable": false}],
             "indexes": []}
            """#
        }
        let template = #"""
            {"schema_version": 1, "schema_hash": "HASH", "parent_schema": null, "transition_class": "initial",
             "compatibility_floor": 1, "tables": [TABLES]}
            """#
        let tables = [table("tbl_int", .int), table("tbl_text", .string), table("tb_long", .int64)]
        let manifestText = template.replacing("TABLES", with: tables.joined(separator: ", "))
        let placeholder = manifestText.replacing("HASH", with: String(repeating: "0", count: 64))
        let hash = try SchemaManifest.computeHash(json: try StrictJSONParser().parse(placeholder))
        return try ClientManifest(json: try StrictJSONParser().parse(manifestText.replacing("HASH", with: hash)))
    }
}
