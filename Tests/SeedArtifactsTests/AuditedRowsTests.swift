import SynchroClient
import SynchroProtocol
import Testing
@testable import SeedArtifacts
@testable import SynchroStore

@Suite("Seed verifier: the row audit's compact row records")
struct AuditedRowsTests {
    @Test("compact rows give back each identity and digest, and order identities across tables as their octets do")
    func compactRowsKeepIdentityOrderAndDigests() throws {
        let manifest = try Self.threeKeyTypesManifest()
        let keys: [String: [String]] = [
            "tbl_int": ["0", "1", "2", "-1", "-2147483648", "2147483647", "255", "256"],
            "tb_long": [#""0""#, #""-9223372036854775808""#, #""9223372036854775807""#, #""42""#, #""-42""#],
            "tbl_text": [#""""#, #""a""#, #""b""#, #""ab""#, #""grün""#, #""z""#, #""zz""#, #""aaa""#],
        ]
        var tables: [AuditedRows] = []
        var expected: [(identity: RowIdentity, digest: [UInt8], table: Int, position: Int)] = []
        for table in manifest.localSchema {
            let key = try #require(table.primaryKeyColumn)
            let rows = AuditedRows(table: table, key: key)
            for (position, text) in try #require(keys[table.tableID]).enumerated() {
                let value = try StrictJSONParser().parse(text)
                let identity = try RowIdentity(manifest: manifest.manifest, tableID: table.tableID, primaryKey: value)
                let digest = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ position &+ tables.count &* 31) }
                rows.append(rowid: Int64(position + 1), identity: identity, digest: digest)
                expected.append((identity, digest, tables.count, position))
            }
            // A row that could not be digested keeps its place without an identity or a digest.
            rows.append(rowid: 1000, identity: nil, digest: nil)
            #expect(!rows.isDigested(rows.count - 1) && rows.identity(at: rows.count - 1) == nil)
            #expect(rows.withExpectedDigest(at: rows.count - 1) { $0.count } == 0)
            tables.append(rows)
        }
        for entry in expected {
            let rows = tables[entry.table]
            #expect(rows.isDigested(entry.position))
            #expect(rows.identity(at: entry.position) == entry.identity)
            #expect(rows.digest(at: entry.position) == entry.digest)
            #expect(rows.withExpectedDigest(at: entry.position) { Array($0) } == entry.digest)
        }
        let ordered = expected.sorted { a, b in
            tables[a.table].identityPrecedes(a.position, tables[b.table], b.position)
        }
        #expect(ordered.map(\.identity) == expected.map(\.identity).sorted())
        var accumulator = try ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: "s", cardinality: UInt64(ordered.count))
        for entry in ordered {
            try accumulator.add(identity: entry.identity, rowDigest: entry.digest)
        }
        let complete = try ScopeDigest.compute(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: "s",
            entries: expected.map { ($0.identity, $0.digest) })
        #expect(try accumulator.finalize() == complete.digest)
    }

    @Test("rows sorted by suffix and fed split into prefix and suffix give the scope digest of whole identities")
    func suffixOrderAndSplitFeedGiveTheScopeDigest() throws {
        let manifest = try Self.threeKeyTypesManifest()
        let keys: [String: [String]] = [
            "tbl_int": ["255", "0", "-1", "2147483647", "256", "-2147483648", "1"],
            "tb_long": [#""42""#, #""-9223372036854775808""#, #""0""#, #""9223372036854775807""#],
            "tbl_text": [#""zz""#, #""a""#, #""""#, #""grün""#, #""ab""#, #""b""#],
        ]
        var tables: [(rows: AuditedRows, identities: [RowIdentity], digests: [[UInt8]])] = []
        for table in manifest.localSchema {
            let key = try #require(table.primaryKeyColumn)
            let rows = AuditedRows(table: table, key: key)
            var identities: [RowIdentity] = []
            var digests: [[UInt8]] = []
            for (position, text) in try #require(keys[table.tableID]).enumerated() {
                let identity = try RowIdentity(
                    manifest: manifest.manifest, tableID: table.tableID, primaryKey: try StrictJSONParser().parse(text))
                let digest = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ position &+ tables.count) }
                rows.append(rowid: Int64(position + 1), identity: identity, digest: digest)
                identities.append(identity)
                digests.append(digest)
            }
            #expect(rows.allIdentitiesSharePrefix)
            var positions = (0..<UInt32(identities.count)).reversed().map { $0 }
            rows.sortByIdentity(&positions)
            #expect(positions.map { identities[Int($0)] } == identities.sorted(), "\(table.tableID)")
            tables.append((rows, identities, digests))
        }
        // Tables in the order of their identity prefixes (tb_long, tbl_int, tbl_text), each in suffix order.
        let ordered = tables.flatMap { table in
            table.identities.indices.map { (table.rows, $0, table.identities[$0], table.digests[$0]) }
                .sorted { $0.2 < $1.2 }
        }.sorted { $0.2 < $1.2 }
        var accumulator = try ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: "s", cardinality: UInt64(ordered.count))
        for (rows, position, _, _) in ordered {
            #expect(rows.feed(position, into: &accumulator))
        }
        let complete = try ScopeDigest.compute(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: "s", entries: ordered.map { ($0.2, $0.3) })
        #expect(try accumulator.finalize() == complete.digest)

        // Split identities are ordered as whole ones: a repeated or an earlier row is refused.
        let (rows, _, _, _) = ordered[1]
        var repeated = try ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: "s", cardinality: 3)
        #expect(rows.feed(ordered[1].1, into: &repeated))
        #expect(!rows.feed(ordered[1].1, into: &repeated))
        var backwards = try ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: "s", cardinality: 3)
        #expect(ordered[2].0.feed(ordered[2].1, into: &backwards))
        #expect(!ordered[0].0.feed(ordered[0].1, into: &backwards))
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
