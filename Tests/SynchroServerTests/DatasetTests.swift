import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SynchroServer

/// The shipped demo dataset, loaded once per test.
private func demo() throws -> Dataset {
    try Dataset(directory: RepositoryLayout.root.appendingPathComponent("seeds/demo"))
}

/// Checks what every generated row must be: a complete row (every manifest field exactly once,
/// nothing else, key equal to `pk`) whose every value is valid for its field.
private func expectComplete(_ element: GeneratedRows.Element, table: ManifestTable, manifest: SchemaManifest) throws {
    let row = try #require(element.row.objectValue)
    #expect(row.keys == table.fields.map(\.fieldID))
    for field in table.fields {
        let value = try #require(row[field.fieldID])
        #expect(throws: Never.self) { try PortableValue.validate(value, spec: field.spec) }
    }
    #expect(row[table.primaryKeyFieldID] == element.pk)
    // The row digest repeats the exact-field-set and key checks the protocol applies to rows.
    #expect(throws: Never.self) {
        try RowDigest.compute(
            manifest: manifest, tableID: table.tableID, primaryKey: element.pk, row: element.row,
            serverVersion: "v1")
    }
}

/// SHA-256 over the RFC 8785 text of `rows`, one row after the other: a compact pin of many rows.
private func fingerprint<Rows: Sequence>(_ rows: Rows) throws -> String where Rows.Element == GeneratedRows.Element {
    var hasher = SHA256()
    for element in rows { hasher.update(try CanonicalJSON.encode(element.row)) }
    return Hex.encode(hasher.finalize())
}

@Suite("Dataset: the shipped demo")
struct DemoDatasetTests {
    @Test("the demo dataset loads with a portable catalog scope and private user scopes")
    func demoLoads() throws {
        let dataset = try demo()
        #expect(dataset.name == "demo")
        #expect(dataset.manifest.tables.map(\.tableID) == ["tbl_categories", "tbl_notes", "tbl_products", "tbl_tasks"])
        #expect(dataset.portableScopes == ["catalog"])
        #expect(dataset.users == ["alice", "bob"])
        #expect(dataset.assignedScopes(forUser: "alice") == ["catalog", "user:alice"])
        #expect(dataset.assignedScopes(forUser: "bob") == ["catalog", "user:bob"])
        #expect(dataset.rowsOverridableTableIDs == ["tbl_products"])
        #expect(dataset.isPerUserTable("tbl_notes") && dataset.isPerUserTable("tbl_tasks"))
        #expect(!dataset.isPerUserTable("tbl_products"))
    }

    @Test("the demo manifest hash is pinned and equals the hash of its canonical body")
    func demoManifestHashIsStable() throws {
        let dataset = try demo()
        let pinned = "8d2e3503e86a2ad28deff4980ecc104635dc6e5c0a9f4dc6b17c0c135cba40ee"
        #expect(dataset.manifest.schemaHash == pinned)
        #expect(try SchemaManifest.computeHash(json: dataset.manifestJSON) == pinned)
        #expect(dataset.manifestJSON[member: "schema_hash"] == .string(pinned))
        // The served manifest is itself a valid manifest with the same body.
        #expect(try SchemaManifest(json: dataset.manifestJSON) == dataset.manifest)
    }

    @Test("the demo tables have their default row counts and --rows replaces only the product count")
    func rowCountsAndOverride() throws {
        let generator = DatasetGenerator(dataset: try demo())
        #expect(try generator.rowCount(for: "tbl_products") == 100_000)
        #expect(try generator.rowCount(for: "tbl_categories") == 40)
        #expect(try generator.rowCount(for: "tbl_notes") == 72)
        #expect(try generator.rowCount(for: "tbl_tasks") == 48)
        #expect(try generator.rowCount(for: "tbl_products", rowsOverride: 250) == 250)
        #expect(try generator.rowCount(for: "tbl_products", rowsOverride: 0) == 0)
        #expect(try generator.rowCount(for: "tbl_categories", rowsOverride: 250) == 40)
        #expect(try generator.rowCount(for: "tbl_notes", rowsOverride: 250) == 72)
        #expect(try generator.rowCount(for: "tbl_tasks", users: ["carol"]) == 24)
        #expect(try generator.rows(for: "tbl_products", rowsOverride: 1_000_000).count == 1_000_000)
    }

    @Test("--rows keeps every leading product row unchanged, so a smaller catalog is a prefix of a larger one")
    func overrideKeepsPrefix() throws {
        let generator = DatasetGenerator(dataset: try demo())
        let small = try generator.rows(for: "tbl_products", rowsOverride: 250)
        let large = try generator.rows(for: "tbl_products")
        #expect(small.count == 250)
        #expect(try fingerprint(small) == fingerprint(large.prefix(250)))
    }

    @Test("every generated demo value is valid for its field and every row is complete")
    func demoRowsAreValid() throws {
        let dataset = try demo()
        let generator = DatasetGenerator(dataset: dataset)
        for table in dataset.manifest.tables {
            // 3,000 products cover every null ratio and range many times over; the rest is whole.
            let rows = try generator.rows(for: table.tableID).prefix(3_000)
            var keys: Set<JSONValue> = []
            for element in rows {
                try expectComplete(element, table: table, manifest: dataset.manifest)
                keys.insert(element.pk)
            }
            #expect(keys.count == rows.count, "keys of \(table.tableID) are unique")
        }
    }

    @Test("demo values look like the dataset says: references hit categories, lifecycle fields are set")
    func demoValuesFollowTheirGenerators() throws {
        let generator = DatasetGenerator(dataset: try demo())
        let products = try generator.rows(for: "tbl_products")
        let first = try #require(products.first?.row.objectValue)
        #expect(first["fld_product_id"] == .string("1000001"))
        #expect(first["fld_product_sku"] == .string("SKU-00000001"))
        #expect(products[99_999].pk == .string("1100000"))
        var nullRatings = 0, categories: Set<Int64> = []
        for element in products.prefix(2_000) {
            let row = try #require(element.row.objectValue)
            if row["fld_product_rating"] == .null { nullRatings += 1 }
            categories.insert(try #require(row["fld_product_category"]?.numberValue?.exactInt64))
            let updated = try #require(row["fld_product_updated_at"]?.stringValue)
            #expect(updated.hasPrefix("2025-01-01T"))
        }
        #expect(categories.isSubset(of: Set(1...40)) && categories.count == 40)
        #expect((300...500).contains(nullRatings), "about 20% of ratings are null")

        let notes = try generator.rows(for: "tbl_notes")
        for element in notes {
            let row = try #require(element.row.objectValue)
            #expect(row["fld_note_deleted_at"] == .null)
            #expect(WireFormats.isCanonicalUUID(try #require(element.pk.stringValue)))
        }
        let tasks = try generator.rows(for: "tbl_tasks")
        #expect(tasks.first?.pk == .string("task-alice-0001"))
        #expect(tasks[24].pk == .string("task-bob-0001"))
        #expect(tasks[25].row[member: "fld_task_position"] == .number(JSONNumber(2)))
    }

    @Test("generated text includes non-ASCII words")
    func nonASCIIText() throws {
        let products = try DatasetGenerator(dataset: try demo()).rows(for: "tbl_products").prefix(200)
        let titles = products.compactMap { $0.row[member: "fld_product_title"]?.stringValue }
        #expect(titles.contains { $0.unicodeScalars.contains { !$0.isASCII } })
        #expect(titles.contains { $0.unicodeScalars.contains { $0.value > 0xFFFF } })
    }
}

@Suite("Dataset: deterministic generation")
struct DatasetDeterminismTests {
    @Test("two independent loads generate identical rows")
    func deterministicAcrossRuns() throws {
        let first = DatasetGenerator(dataset: try demo())
        let second = DatasetGenerator(dataset: try demo())
        for tableID in ["tbl_categories", "tbl_products", "tbl_notes", "tbl_tasks"] {
            let a = try first.rows(for: tableID).prefix(2_000)
            let b = try second.rows(for: tableID).prefix(2_000)
            #expect(try fingerprint(a) == fingerprint(b), "\(tableID)")
        }
    }

    @Test("the generated demo rows are pinned, so a platform or library change cannot alter them silently")
    func pinnedFingerprints() throws {
        let generator = DatasetGenerator(dataset: try demo())
        let pinned = [
            "tbl_categories": "79e085be4be2d0eac33df754e34622dc5f895d5206b9da8f7e999f26b6c509e4",
            "tbl_notes": "8ad1a092bc9f3d9a05e9b4e0057cc60285e9c3d1e8f388585533ed5626e17b24",
            "tbl_products": "56ec43840757449c28f0862915d2f87baea9616136db7f99e2e54bc4fa9eb8b1",
            "tbl_tasks": "0e53661c3f12882aad9660a5994d7908f5808bd936504d355030675e85a2b0bf",
        ]
        for (tableID, expected) in pinned {
            let actual = try fingerprint(generator.rows(for: tableID).prefix(1_000))
            #expect(actual == expected, "\(tableID) now generates \(actual)")
        }
    }

    @Test("a table's rows do not depend on other tables or on the order rows are asked for")
    func independentOfOrder() throws {
        let generator = DatasetGenerator(dataset: try demo())
        let productsFirst = try fingerprint(generator.rows(for: "tbl_products").prefix(500))
        _ = try fingerprint(generator.rows(for: "tbl_tasks"))
        let products = try generator.rows(for: "tbl_products")
        let backwards = try fingerprint((0..<500).reversed().map { products[$0] }.reversed())
        #expect(productsFirst == backwards)
        #expect(try fingerprint(generator.rows(for: "tbl_products").prefix(500)) == productsFirst)
    }

    @Test("reordering a json template's members in the file changes no generated document")
    func templateOrderIsCanonical() throws {
        let path = "generate.tables.tbl_all.fields.fld_all_json.template"
        let template = try templateObject()
        let reversed = JSONValue.object(JSONObject(template.members.reversed()))
        let original = DatasetFixture(manifest: EveryTypeFixture.manifest, dataset: EveryTypeFixture.dataset)
        let reordered = DatasetFixture(
            manifest: EveryTypeFixture.manifest, dataset: EveryTypeFixture.dataset.setting(path, to: reversed))
        let a = try DatasetGenerator(dataset: original.load()).rows(for: "tbl_all")
        let b = try DatasetGenerator(dataset: reordered.load()).rows(for: "tbl_all")
        #expect(try fingerprint(a) == fingerprint(b))
    }

    private func templateObject() throws -> JSONObject {
        let fields = EveryTypeFixture.dataset[member: "generate"]?[member: "tables"]?[member: "tbl_all"]?[
            member: "fields"]
        return try #require(fields?[member: "fld_all_json"]?[member: "template"]?.objectValue)
    }

    @Test("a user's rows are the same whichever other users are generated")
    func independentOfOtherUsers() throws {
        let generator = DatasetGenerator(dataset: try demo())
        let both = try generator.rows(for: "tbl_notes")
        let aliceAlone = try generator.rows(for: "tbl_notes", users: ["alice"])
        let reordered = try generator.rows(for: "tbl_notes", users: ["carol", "alice"])
        #expect(try fingerprint(both.prefix(36)) == fingerprint(aliceAlone))
        #expect(try fingerprint(both.prefix(36)) == fingerprint(reordered.suffix(36)))
        #expect(reordered.owner(at: 0) == "carol")
        #expect(reordered[0].row[member: "fld_note_owner"] == .string("carol"))
    }
}

@Suite("Dataset: scope membership")
struct DatasetScopeTests {
    @Test("catalog rows belong to the catalog scope and per-user rows to their owner's scope")
    func rowScopes() throws {
        let dataset = try demo()
        let generator = DatasetGenerator(dataset: dataset)
        for element in try generator.rows(for: "tbl_products").prefix(100) {
            #expect(dataset.scopes(forTable: "tbl_products", row: element.row) == ["catalog"])
        }
        for element in try generator.rows(for: "tbl_categories") {
            #expect(dataset.scopes(forTable: "tbl_categories", row: element.row) == ["catalog"])
        }
        for tableID in ["tbl_notes", "tbl_tasks"] {
            let rows = try generator.rows(for: tableID)
            for index in rows.indices {
                let owner = try #require(rows.owner(at: index))
                #expect(dataset.scopes(forTable: tableID, row: rows[index].row) == ["user:\(owner)"])
            }
            #expect(Set(rows.indices.map { rows.owner(at: $0)! }) == ["alice", "bob"])
        }
    }

    @Test("a declaration puts no row of a table it does not cover into a scope")
    func declarationsAreScoped() throws {
        let dataset = try demo()
        let note = try DatasetGenerator(dataset: dataset).rows(for: "tbl_notes")[0].row
        for declaration in dataset.scopeDeclarations {
            switch declaration {
            case .shared(let scope):
                #expect(scope.id == "catalog" && scope.portable)
                #expect(scope.tableIDs == ["tbl_categories", "tbl_products"])
                #expect(declaration.scopes(forTable: "tbl_notes", row: note).isEmpty)
            case .perUser(let family):
                #expect(family.idPattern == "user:{user}")
                #expect(family.ownerFields.map(\.fieldID) == ["fld_note_owner", "fld_task_owner"])
                #expect(declaration.scopes(forTable: "tbl_products", row: note).isEmpty)
                #expect(declaration.scopes(forTable: "tbl_notes", row: .null).isEmpty)
                #expect(family.scopeID(forUser: "bob") == "user:bob")
            }
        }
    }

    @Test("portable and assigned scope lists are sorted by UTF-8 octets and a multi-scope table joins every scope")
    func multiScope() throws {
        let fixture = DatasetFixture(manifest: EveryTypeFixture.manifest, dataset: EveryTypeFixture.dataset)
        let dataset = try fixture.load()
        #expect(dataset.portableScopes == ["all-b", "codes"])
        #expect(dataset.assignedScopes(forUser: "anyone") == ["all-a", "all-b", "codes"])
        let row = try DatasetGenerator(dataset: dataset).rows(for: "tbl_all")[0].row
        #expect(dataset.scopes(forTable: "tbl_all", row: row) == ["all-a", "all-b"])
    }
}

@Suite("Dataset: generators")
struct DatasetGeneratorTests {
    @Test("every generator kind produces valid values for every portable type")
    func everyTypeIsValid() throws {
        let fixture = DatasetFixture(manifest: EveryTypeFixture.manifest, dataset: EveryTypeFixture.dataset)
        let dataset = try fixture.load()
        let generator = DatasetGenerator(dataset: dataset)
        for table in dataset.manifest.tables {
            for element in try generator.rows(for: table.tableID) {
                try expectComplete(element, table: table, manifest: dataset.manifest)
            }
        }
        let rows = try generator.rows(for: "tbl_all")
        let codes = Set(try generator.rows(for: "tbl_codes").map(\.pk))
        for element in rows {
            let row = try #require(element.row.objectValue)
            if let reference = row["fld_all_ref"], reference != .null { #expect(codes.contains(reference)) }
            #expect(row["fld_all_null"] == .null)
            #expect(row["fld_all_deleted"] == .null)
            let created = try #require(row["fld_all_created"]?.stringValue)
            let updated = try #require(row["fld_all_updated"]?.stringValue)
            #expect(created <= updated)
        }
        #expect(rows[0].pk == .string("row-000000"))
        #expect(rows[3].pk == .string("row-000021"))
        #expect(rows[399].row[member: "fld_all_seq64"] == .string("9223372036854775399"))
        // base − 86,399 s per row plus up to 3 s of jitter, across the epoch and backwards in time.
        let firstDateTime = try #require(rows[0].row[member: "fld_all_dt"]?.stringValue)
        #expect(firstDateTime >= "1969-12-31T23:59:59.999999Z" && firstDateTime <= "1970-01-01T00:00:02.999999Z")
        let lastDateTime = try #require(rows[399].row[member: "fld_all_dt"]?.stringValue)
        #expect(lastDateTime >= "1968-11-28T00:06:38.999999Z" && lastDateTime <= "1968-11-28T00:06:41.999999Z")
    }

    @Test("decimals are rendered exactly in canonical form, never through binary floating point")
    func decimalText() {
        #expect(DecimalText.canonical(units: 0, scale: 2) == "0")
        #expect(DecimalText.canonical(units: 700, scale: 2) == "7")
        #expect(DecimalText.canonical(units: 123, scale: 2) == "1.23")
        #expect(DecimalText.canonical(units: -5, scale: 2) == "-0.05")
        #expect(DecimalText.canonical(units: 10, scale: 2) == "0.1")
        #expect(DecimalText.canonical(units: 999_999_999_999_999_999, scale: 18) == "0.999999999999999999")
        #expect(DecimalText.units("1.2300", scale: 2) == 123)
        #expect(DecimalText.units("-0.5", scale: 1) == -5)
        #expect(DecimalText.units("1.234", scale: 2) == nil)
        #expect(DecimalText.units("1e2", scale: 0) == nil)
        #expect(DecimalText.units("1.", scale: 2) == nil)
        #expect(DecimalText.units("99999999999999999999", scale: 0) == nil)
    }

    @Test("floats with a fixed number of decimals come out as their RFC 8785 number")
    func floatText() throws {
        let spec = try FieldSpec(type: .float, nullable: false)
        for units: Int64 in [0, 1, 3, 7, 10, 15, 49, 123_456, -987_654_321, 999_999_999_999_999] {
            for decimals in [0, 1, 2, 3, 6, 15] {
                let kind = GeneratorKind.float(min: units, max: units, decimals: decimals)
                var random = SplitMix64(state: 1)
                let value = kind.value(at: RowPosition(index: 0, user: nil), reference: nil, random: &random)
                #expect(throws: Never.self) { try PortableValue.validate(value, spec: spec) }
                let literal = try #require(value.numberValue?.literal)
                // At most 15 significant digits round-trip through binary64, so the RFC 8785 text
                // is exactly the generated decimal (in exponent form below 10^-6).
                if literal.contains("e") {
                    #expect(Double(literal) == Double("\(units)e-\(decimals)"))
                } else {
                    #expect(DecimalText.units(literal, scale: decimals) == units, "\(units)e-\(decimals)")
                }
            }
        }
    }

    @Test("calendar arithmetic round-trips days from 0000-01-01 to 9999-12-31")
    func civilTime() {
        #expect(CivilTime.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilTime.formatDate(CivilTime.firstDay) == "0000-01-01")
        #expect(CivilTime.formatDate(CivilTime.lastDay) == "9999-12-31")
        #expect(CivilTime.formatDateTime(-1) == "1969-12-31T23:59:59.999999Z")
        #expect(CivilTime.parseDateTime("2024-02-29T12:34:56.000789Z").map(CivilTime.formatDateTime)
                == "2024-02-29T12:34:56.000789Z")
        // Every day of 1896–2104 (leap-year rules of 1900, 2000 and 2100) and a 13-day stride
        // through the whole range; `WireFormats.isDate` inside `parseDate` checks each text.
        let everyDay = CivilTime.daysFromCivil(year: 1896, month: 1, day: 1)...CivilTime.daysFromCivil(
            year: 2104, month: 12, day: 31)
        let days = Array(everyDay) + Array(stride(from: CivilTime.firstDay, through: CivilTime.lastDay, by: 13))
        #expect(days.filter { CivilTime.parseDate(CivilTime.formatDate($0)) != $0 }.isEmpty)
    }

    @Test("the PRNG is SplitMix64: the reference outputs for seed 0")
    func splitMix() {
        var random = SplitMix64(state: 0)
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(random.next() == 0x06C4_5D18_8009_454F)
        var bounded = SplitMix64(state: 42)
        for _ in 0..<1_000 { #expect(bounded.next(in: -3, 3) >= -3) }
    }

    @Test("counts that push a value out of range are refused when rows are requested")
    func rangeChecksAtGeneration() throws {
        var fixture = DatasetFixture()
        fixture.dataset = fixture.dataset
            .setting("generate.tables.tbl_items.fields.fld_item_updated",
                     to: json(#"{"kind": "datetime", "base": "9999-01-01T00:00:00.000000Z", "step_seconds": 86400}"#))
        let generator = DatasetGenerator(dataset: try fixture.load())
        #expect(try generator.rows(for: "tbl_items", rowsOverride: 300).count == 300)
        #expect(throws: DatasetError(.temporalOutOfRange, file: "dataset.json",
                                     at: "generate.tables.tbl_items.fields.fld_item_updated")) {
            try generator.rows(for: "tbl_items", rowsOverride: 400)
        }
        #expect(throws: DatasetError.self) { try generator.rows(for: "tbl_unknown") }
        #expect(throws: DatasetError.self) { try generator.rows(for: "tbl_notes", users: ["a", "a"]) }
    }

    @Test("an int sequence past the int range is refused for the requested count")
    func sequenceOverflowAtGeneration() throws {
        var fixture = DatasetFixture()
        fixture.dataset = fixture.dataset
            .setting("generate.tables.tbl_items.fields.fld_item_qty",
                     to: json(#"{"kind": "sequence", "start": 2147483600}"#))
        let generator = DatasetGenerator(dataset: try fixture.load())
        let error = #expect(throws: DatasetError.self) { try generator.rows(for: "tbl_items", rowsOverride: 100) }
        #expect(error?.rule == .sequenceOverflow)
    }

    @Test("an empty reference target is refused for a non-nullable reference")
    func emptyReferenceTarget() throws {
        var fixture = DatasetFixture()
        fixture.dataset = fixture.dataset
            .setting("generate.tables.tbl_groups.rows_overridable", to: .bool(true))
        let generator = DatasetGenerator(dataset: try fixture.load())
        let error = #expect(throws: DatasetError.self) { try generator.rows(for: "tbl_items", rowsOverride: 0) }
        #expect(error?.rule == .referenceTargetEmpty)
    }

    @Test("a million product rows stream one at a time")
    func millionRowsStream() throws {
        let rows = try DatasetGenerator(dataset: try demo()).rows(for: "tbl_products", rowsOverride: 1_000_000)
        #expect(rows.count == 1_000_000)
        // Random access to the far end costs one row, not the rows before it.
        #expect(rows[999_999].pk == .string("2000000"))
        // Each row is built, checked and dropped; nothing accumulates.
        var streamed = 0
        for element in rows.prefix(200_000) where element.row.objectValue?.count == 12 {
            streamed += 1
        }
        #expect(streamed == 200_000)
    }
}

/// One way to break ``DatasetFixture`` and the rule the loader must name for it.
struct BrokenDataset: Sendable, CustomTestStringConvertible {
    let rule: DatasetError.Rule
    var file = "dataset.json"
    let note: String
    let edit: @Sendable (inout DatasetFixture) -> Void

    var testDescription: String { "\(rule.rawValue): \(note)" }

    /// Replaces the `dataset.json` value at `path` (removes it when `value` is nil).
    static func dataset(
        _ rule: DatasetError.Rule, _ note: String, _ path: String, _ value: String?
    ) -> BrokenDataset {
        BrokenDataset(rule: rule, note: note) { fixture in
            fixture.dataset = fixture.dataset.setting(path, to: value.map(json))
        }
    }

    /// Replaces a generator value of `tbl_all` in the every-type dataset (`path` below its `fields`).
    static func everyType(
        _ rule: DatasetError.Rule, _ note: String, _ path: String, _ value: String
    ) -> BrokenDataset {
        BrokenDataset(rule: rule, note: note) { fixture in
            fixture.manifest = EveryTypeFixture.manifest
            fixture.dataset = EveryTypeFixture.dataset
                .setting("generate.tables.tbl_all.fields.\(path)", to: json(value))
        }
    }

    /// Replaces the `manifest.json` value at `path`.
    static func manifest(_ rule: DatasetError.Rule, _ note: String, _ path: String, _ value: String) -> BrokenDataset {
        BrokenDataset(rule: rule, file: "manifest.json", note: note) { fixture in
            fixture.manifest = fixture.manifest.setting(path, to: json(value))
        }
    }
}

private let items = "generate.tables.tbl_items"
private let itemFields = "generate.tables.tbl_items.fields"

/// Every rule of `DatasetError.Rule`, broken at least once (the list is checked for completeness).
private let brokenDatasets: [BrokenDataset] = [
    BrokenDataset(rule: .fileUnreadable, note: "dataset.json is missing") { $0.omitDataset = true },
    BrokenDataset(rule: .malformedJSON, note: "a member repeats") {
        $0.rawDataset = Array(#"{"name": "a", "name": "b"}"#.utf8)
    },
    BrokenDataset(rule: .malformedJSON, file: "manifest.json", note: "the manifest is cut short") {
        $0.rawManifest = Array(#"{"schema_version": 1,"#.utf8)
    },
    .dataset(.notAnObject, "a scope declaration is a number", "scopes.0", "5"),
    .dataset(.missingMember, "generate is absent", "generate", nil),
    .dataset(.missingMember, "a shared scope lacks portable", "scopes.0.portable", nil),
    .dataset(.unknownMember, "an extra top-level member", "extra", "1"),
    .dataset(.unknownMember, "a per-user declaration says portable", "scopes.1.portable", "false"),
    .dataset(.memberType, "name is a number", "name", "5"),
    .dataset(.invalidValue, "name is empty", "name", #""""#),
    .dataset(.invalidValue, "a negative row count", "\(items).rows", "-1"),
    .dataset(.invalidValue, "a null ratio above one", "\(itemFields).fld_item_label.null_ratio", "1.5"),
    .manifest(.invalidManifest, "a writable primary key", "tables.0.fields.0.writable", "true"),
    .manifest(.invalidManifest, "an unknown type", "tables.1.fields.3.type", #""integer""#),
    .manifest(.schemaHashMismatch, "a declared hash of another body", "schema_hash",
              "\"\(String(repeating: "ab", count: 32))\""),
    .dataset(.duplicateScopeID, "two shared scopes named catalog", "scopes.+",
             #"{"id": "catalog", "portable": false, "tables": ["tbl_groups"]}"#),
    .dataset(.duplicateScopeID, "two identical patterns", "scopes.+",
             #"{"id_pattern": "user:{user}", "tables": {"tbl_groups": "fld_group_name"}}"#),
    .dataset(.invalidIDPattern, "no {user}", "scopes.1.id_pattern", #""user:""#),
    .dataset(.invalidIDPattern, "{user} twice", "scopes.1.id_pattern", #""{user}:{user}""#),
    .dataset(.scopeIDConflict, "a shared ID the pattern can issue", "scopes.0.id", #""user:admin""#),
    .dataset(.scopeIDConflict, "overlapping patterns", "scopes.+",
             #"{"id_pattern": "user:x:{user}", "tables": {"tbl_groups": "fld_group_name"}}"#),
    .dataset(.unknownTable, "a shared scope names a missing table", "scopes.0.tables.+", #""tbl_missing""#),
    .dataset(.unknownTable, "a per-user declaration names a missing table", "scopes.1.tables.tbl_missing",
             #""fld_x""#),
    .dataset(.unknownTable, "generation for a missing table", "generate.tables.tbl_missing", #"{"rows": 1}"#),
    .dataset(.tableNotCovered, "tbl_items in no scope", "scopes.0.tables", #"["tbl_groups"]"#),
    .dataset(.tableSharedAndPerUser, "tbl_groups also per-user", "scopes.1.tables.tbl_groups",
             #""fld_group_name""#),
    .dataset(.perUserTableDeclaredTwice, "tbl_notes in two families", "scopes.+",
             #"{"id_pattern": "private:{user}", "tables": {"tbl_notes": "fld_note_owner"}}"#),
    .dataset(.singleScopeTableInSeveralScopes, "a single_scope table in two shared scopes", "scopes.+",
             #"{"id": "extra", "portable": false, "tables": ["tbl_groups"]}"#),
    .dataset(.ownerFieldMissing, "the owner field does not exist", "scopes.1.tables.tbl_notes", #""fld_nope""#),
    .dataset(.ownerFieldType, "a nullable datetime owner", "scopes.1.tables.tbl_notes", #""fld_note_deleted""#),
    .dataset(.invalidUsers, "a repeated user", "generate.users", #"["alice", "alice"]"#),
    .dataset(.invalidUsers, "no users for per-user tables", "generate.users", nil),
    .dataset(.invalidUsers, "an empty user", "generate.users", #"["alice", ""]"#),
    .dataset(.tableGeneratorMissing, "tbl_groups not generated", "generate.tables.tbl_groups", nil),
    .dataset(.rowCountMismatch, "rows on a per-user table", "generate.tables.tbl_notes.rows", "4"),
    .dataset(.rowCountMismatch, "rows_per_user on a shared table", "\(items).rows_per_user", "4"),
    .dataset(.rowCountMismatch, "rows_overridable on a per-user table", "generate.tables.tbl_notes.rows_overridable",
             "true"),
    .dataset(.rowCountMismatch, "a shared table without rows", "\(items).rows", nil),
    .dataset(.fieldGeneratorMissing, "no generator for a plain field", "\(itemFields).fld_item_label", nil),
    .dataset(.unknownField, "a generator for a missing field", "\(itemFields).fld_nope", #"{"kind": "null"}"#),
    .dataset(.unknownGeneratorKind, "kind lorem", "\(itemFields).fld_item_label", #"{"kind": "lorem"}"#),
    .dataset(.generatorTypeMismatch, "words for an int", "\(itemFields).fld_item_qty", #"{"kind": "words"}"#),
    .everyType(.generatorTypeMismatch, "a reference inside a json template", "fld_all_json.template.a",
               #"{"$generate": {"kind": "reference", "table": "tbl_codes"}}"#),
    .dataset(.invalidGenerator, "min above max", "\(itemFields).fld_item_qty", #"{"kind": "int", "min": 5, "max": 1}"#),
    .dataset(.invalidGenerator, "a datetime base that is not canonical", "\(itemFields).fld_item_updated",
             #"{"kind": "datetime", "base": "2024-01-01T00:00:00Z"}"#),
    .dataset(.invalidGenerator, "{user} in a shared table's sequence",
             "generate.tables.tbl_groups.fields.fld_group_name",
             #"{"kind": "sequence", "prefix": "g-{user}-"}"#),
    .everyType(.invalidGenerator, "a decimal bound finer than the scale", "fld_all_dec.min", #""0.0001""#),
    .everyType(.invalidGenerator, "a json template that is not I-JSON", "fld_all_json.template.big",
               "9007199254740993"),
    .dataset(.generatorOutOfRange, "an int beyond int32", "\(itemFields).fld_item_qty",
             #"{"kind": "int", "min": 0, "max": 3000000000}"#),
    .everyType(.generatorOutOfRange, "a decimal beyond precision − scale integer digits", "fld_all_dec.max",
               #""1000""#),
    .everyType(.generatorOutOfRange, "a float with 16 significant digits", "fld_all_float.max", "1000000000"),
    .dataset(.pickValueInvalid, "a string picked for an int", "\(itemFields).fld_item_qty",
             #"{"kind": "pick", "values": [1, "SECRET-PICK"]}"#),
    .dataset(.nullRatioOnNonNullable, "nulls for a required field", "generate.tables.tbl_groups.fields.fld_group_name",
             #"{"kind": "words", "null_ratio": 0.5}"#),
    .dataset(.nullRatioOnNonNullable, "the null kind for a required field",
             "generate.tables.tbl_groups.fields.fld_group_name", #"{"kind": "null"}"#),
    .dataset(.keyGeneratorNotUnique, "a random int key", "generate.tables.tbl_groups.fields.fld_group_id",
             #"{"kind": "int", "min": 1, "max": 9}"#),
    .dataset(.keyGeneratorNotUnique, "a per-user sequence key without {user}",
             "generate.tables.tbl_notes.fields.fld_note_id", #"{"kind": "sequence", "prefix": "n-"}"#),
    .dataset(.keyGeneratorNotUnique, "{user} followed only by digits", "generate.tables.tbl_notes.fields.fld_note_id",
             #"{"kind": "sequence", "prefix": "n-{user}"}"#),
    .dataset(.ownerFieldGenerator, "the owner field is not generated by owner",
             "generate.tables.tbl_notes.fields.fld_note_owner", #"{"kind": "words"}"#),
    .dataset(.ownerFieldGenerator, "owner in a shared table", "generate.tables.tbl_groups.fields.fld_group_name",
             #"{"kind": "owner"}"#),
    .dataset(.referenceTargetInvalid, "a reference to a per-user table", "\(itemFields).fld_item_group",
             #"{"kind": "reference", "table": "tbl_notes"}"#),
    .dataset(.referenceTargetInvalid, "a reference of another key type", "\(itemFields).fld_item_group",
             #"{"kind": "reference", "table": "tbl_items"}"#),
    .dataset(.sequenceOverflow, "an int key past 2^31−1", "generate.tables.tbl_groups.fields.fld_group_id",
             #"{"kind": "sequence", "start": 2147483646}"#),
    .dataset(.temporalOutOfRange, "datetimes past 9999", "\(itemFields).fld_item_updated",
             #"{"kind": "datetime", "base": "9999-12-31T00:00:00.000000Z", "step_seconds": 86400}"#),
    .dataset(.referenceTargetEmpty, "references into an empty table", "generate.tables.tbl_groups.rows", "0"),
    .dataset(.generatedValueInvalid, "a sequence prefix holding a noncharacter",
             "generate.tables.tbl_groups.fields.fld_group_name", #"{"kind": "sequence", "prefix": "\ufdd0"}"#),
]

@Suite("Dataset: invalid datasets")
struct InvalidDatasetTests {
    @Test("the fixture every broken dataset starts from is valid")
    func fixtureIsValid() throws {
        let dataset = try DatasetFixture().load()
        #expect(dataset.portableScopes == ["catalog"])
        #expect(try DatasetGenerator(dataset: dataset).rowCount(for: "tbl_notes") == 4)
    }

    @Test("an invalid dataset is rejected with the rule it breaks, the file, and no value from the file",
          arguments: brokenDatasets)
    func rejected(_ broken: BrokenDataset) throws {
        var fixture = DatasetFixture()
        broken.edit(&fixture)
        let error = try #require(try fixture.failure(), "the dataset loaded")
        #expect(error.rule == broken.rule)
        #expect(error.file == broken.file)
        #expect(!error.description.contains("SECRET"))
        #expect(error.description.contains(broken.rule.rawValue))
    }

    @Test("every rule has a broken dataset that triggers it")
    func everyRuleIsCovered() {
        let covered = Set(brokenDatasets.map(\.rule))
        #expect(DatasetError.Rule.allCases.filter { !covered.contains($0) } == [])
    }

    @Test("a manifest rule is carried inside invalid_manifest")
    func manifestRuleIsCarried() throws {
        var fixture = DatasetFixture()
        fixture.manifest = fixture.manifest.setting("tables.0.fields.0.writable", to: .bool(true))
        let error = try #require(try fixture.failure())
        #expect(error.manifestError?.rule == "primary_key_writable")
    }

    @Test("an omitted schema_hash is computed and a correct one is accepted")
    func schemaHashOptional() throws {
        var fixture = DatasetFixture()
        let computed = try fixture.load().manifest.schemaHash
        #expect(computed == (try SchemaManifest.computeHash(json: fixture.manifest)))
        fixture.manifest = fixture.manifest.setting("schema_hash", to: .string(computed))
        #expect(try fixture.load().manifest.schemaHash == computed)
    }
}
