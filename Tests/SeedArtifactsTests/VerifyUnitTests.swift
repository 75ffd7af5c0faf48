import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
@testable import SynchroStore

@Suite("Seed verifier: building blocks")
struct VerifyUnitTests {
    // MARK: - Input probing

    @Test("a missing path, a directory and a non-SQLite file are unusable input")
    func unusableInput() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-verify")
        #expect(throws: SeedInputError.notFound(path: directory.path("absent.db"))) {
            try SeedVerifier.verify(path: directory.path("absent.db"))
        }
        #expect(throws: SeedInputError.notARegularFile(path: directory.url.path)) {
            try SeedVerifier.verify(path: directory.url.path)
        }
        let text = try directory.write("notes.db", Array("hello, this is not a database".utf8))
        #expect(throws: SeedInputError.notSQLite(path: text)) { try SeedVerifier.verify(path: text) }
        let header = try directory.write("short.db", Array("SQLite format 3".utf8) + [0, 0x10])
        #expect(throws: SeedInputError.truncated(path: header, bytes: 17, expectedBytes: 100)) {
            try SeedVerifier.verify(path: header)
        }
    }

    @Test("a file shorter than its header's page count is truncated")
    func truncatedByPageCount() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-verify")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: seed)))
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let cut = try directory.write("cut.db", Array(bytes.prefix(bytes.count - pageSize)))
        #expect(throws: SeedInputError.truncated(path: cut, bytes: Int64(bytes.count - pageSize),
                                                 expectedBytes: Int64(bytes.count))) {
            try SeedVerifier.verify(path: cut)
        }
        let ragged = try directory.write("ragged.db", Array(bytes.prefix(bytes.count - 10)))
        #expect(throws: SeedInputError.self) { try SeedVerifier.verify(path: ragged) }
    }

    @Test("the immutable URI escapes the characters a URI path cannot hold")
    func immutableURI() {
        #expect(SeedFileProbe.immutableURI("/tmp/a b/seed?#%.db")
            == "file:/tmp/a%20b/seed%3F%23%25.db?immutable=1")
        #expect(SeedFileProbe.immutableURI("/tmp/grün.db") == "file:/tmp/gr%C3%BCn.db?immutable=1")
    }

    // MARK: - Checksum texts

    @Test("checksum objects are read in RFC 8785 order, Go struct order and any other valid order")
    func checksumTexts() throws {
        let digest = (0..<32).map { UInt8($0 * 7 % 256) }
        let hex = Hex.encode(digest)
        let spellings = [
            #"{"algorithm":"sha256","digest":"\#(hex)","encoding":"hex","version":1}"#,
            #"{"algorithm":"sha256","version":1,"encoding":"hex","digest":"\#(hex)"}"#,
            #"{"digest":"\#(hex)","version":1,"encoding":"hex","algorithm":"sha256"}"#,
        ]
        for text in spellings {
            #expect(ChecksumText.objectDigest(text) == digest)
            var copy = text
            #expect(copy.withUTF8 { ChecksumText.object($0, carries: digest) } == true)
            #expect(copy.withUTF8 { ChecksumText.object($0, carries: Array(repeating: 0, count: 32)) } == false)
        }
        let invalid = [
            #"{"algorithm":"sha256","digest":"\#(hex.uppercased())","encoding":"hex","version":1}"#,
            #"{"algorithm":"sha256","digest":"\#(hex)","encoding":"hex","version":1.0}"#,
            #"{"algorithm":"sha1","digest":"\#(hex)","encoding":"hex","version":1}"#,
            #"{"algorithm":"sha256","digest":"\#(hex)","encoding":"hex","version":1,"extra":0}"#,
            hex, "",
        ]
        for text in invalid {
            #expect(ChecksumText.objectDigest(text) == nil, "\(text)")
            var copy = text
            #expect(copy.withUTF8 { ChecksumText.object($0, carries: digest) } == nil, "\(text)")
        }
        var bare = hex
        #expect(bare.withUTF8 { ChecksumText.bareDigest($0) } == digest)
        #expect(bare.withUTF8 { ChecksumText.bareHex($0, equals: digest) })
    }

    // MARK: - Wire values

    @Test("the verifier's wire-value conversion equals the client's for every type and storage class")
    func wireValuesMatchTheClient() {
        let stored: [SQLiteValue] = [
            .null, .integer(0), .integer(1), .integer(2), .integer(-7), .integer(Int64(Int32.max) + 1),
            .integer(.max), .real(0), .real(-0.0), .real(1.5), .real(.infinity), .real(.nan), .text(""),
            .text("grün"), .text("12.50"), .blob([]), .blob([0xFF, 0x00, 0x10]),
        ]
        for type in PortableType.allCases {
            for value in stored {
                #expect(SeedWireValue.wireValue(value, type: type) == LocalStorageForm.wireValue(value, type: type),
                        "\(type) \(value.storageClassName)")
            }
        }
    }

    @Test("digesting stored values directly agrees with the wire path for every type and storage class")
    func storedValuesMatchTheWirePath() throws {
        let manifest = try Self.allTypesManifest()
        let database = try Connection(path: ":memory:")
        defer { database.close() }
        try database.execute("CREATE TABLE v (x)")
        let stored: [SQLiteValue] = [
            .null, .integer(0), .integer(1), .integer(2), .integer(-7), .integer(Int64(Int32.max) + 1),
            .integer(.max), .integer(.min), .real(0), .real(-0.0), .real(1.5), .real(0.1), .real(1e21),
            .real(.leastNonzeroMagnitude), .real(.infinity), .real(.nan), .text(""), .text("grün"), .text("e\u{301}"),
            .text("\u{FFFE}"), .text("12.34"), .text("12.340"), .text("-0"), .text("2024-02-29"),
            .text("2023-02-29"), .text("23:59:59.999999"), .text("2024-02-29T12:34:56.123456Z"),
            .text(#"{"a":1,"b":[true,null]}"#), .text(#"{"b":1,"a":2}"#), .text("AP8"), .text("9007199254740991"),
            .text("1"), .blob([]), .blob([0xFF, 0x00, 0x10]),
        ]
        let fields = PortableType.allCases.map { "fld_\($0.rawValue)" }
        var accepted: Set<PortableType> = []
        for (index, type) in PortableType.allCases.enumerated() {
            for value in stored {
                try database.run("DELETE FROM v")
                try database.run("INSERT INTO v (x) VALUES (?)", [value])
                let statement = try database.prepare("SELECT x FROM v")
                _ = try statement.step()
                var digester = StoredRowDigester(manifest: manifest)
                let layout = try digester.layout(tableID: "tbl_all", columnFieldIDs: ["fld_key"] + fields)
                var version = "v1"
                let direct = version.withUTF8 { serverVersion in
                    digester.digest(layout, serverVersion: serverVersion) { column, field in
                        switch column {
                        case 0: var key = "k"; key.withUTF8 { field.text($0) }
                        case 1 + index: statement.store(column: 0, into: &field)
                        default: field.null()
                        }
                    }
                }
                let read = try statement.value(at: 0)
                var wireDigest: [UInt8]?
                if let wire = SeedWireValue.wireValue(read, type: type) {
                    let members = [JSONMember("fld_key", .string("k"))] + fields.map { JSONMember($0, .null) }
                    var row = members
                    row[1 + index] = JSONMember(fields[index], wire)
                    var wireDigester = RowDigester(manifest: manifest)
                    wireDigest = try? wireDigester.digest(
                        tableID: "tbl_all", primaryKey: .string("k"), row: .object(JSONObject(row)),
                        serverVersion: "v1").digest
                }
                if let direct {
                    #expect(direct.digest == wireDigest, "\(type) \(read.storageClassName)")
                    accepted.insert(type)
                }
            }
        }
        #expect(accepted == Set(PortableType.allCases), "every type has a stored form the direct path digests")
    }

    /// A manifest with one nullable field of every portable type, named `fld_<type>`, and a string key.
    static func allTypesManifest() throws -> SchemaManifest {
        let fields = PortableType.allCases.map { type in
            let decimal = type == .decimal ? #", "precision": 6, "scale": 2"# : ""
            let name = type.rawValue
            return #"{"field_id": "fld_\#(name)", "name": "c_\#(name)", "type": "\#(name)", "nullable": true, "#
                + #""writable": true\#(decimal)}"#
        }
        let template = #"""
            {"schema_version": 1, "schema_hash": "HASH", "parent_schema": null, "transition_class": "initial",
             "compatibility_floor": 1, "tables": [
              {"table_id": "tbl_all", "relation_id": "rel_all", "name": "all_types", "composition": "single_scope",
               "primary_key_field_id": "fld_key",
               "lifecycle": {"created_at_field_id": null, "updated_at_field_id": null, "deleted_at_field_id": null},
               "fields": [{"field_id": "fld_key", "name": "id", "type": "string", "nullable": false, "writable": false},
                          FIELDS],
               "indexes": []}]}
            """#.replacing("FIELDS", with: fields.joined(separator: ", "))
        let placeholder = template.replacing("HASH", with: String(repeating: "0", count: 64))
        let hash = try SchemaManifest.computeHash(json: try StrictJSONParser().parse(placeholder))
        return try SchemaManifest(json: try StrictJSONParser().parse(template.replacing("HASH", with: hash)))
    }

    // MARK: - Schema words

    @Test("forbidden words are found as whole words only, in any case")
    func forbiddenWords() {
        let harmless = "CREATE TABLE t (a TEXT, description TEXT, onset INTEGER)"
        #expect(PublicationVerifier.forbiddenWords(in: harmless) == [])
        #expect(PublicationVerifier.forbiddenWords(in: "create table t (a text unique, b check(b>0)) without rowid")
            == ["CHECK", "UNIQUE", "WITHOUT"])
        #expect(PublicationVerifier.forbiddenWords(in: "CREATE TABLE t (a TEXT COLLATE nocase)") == ["COLLATE"])
    }

    // MARK: - Report

    @Test("the JSON report has exactly findings, checks, rows and ok, each finding check, scope, table, row, message")
    func reportJSON() throws {
        let report = SeedVerificationReport(
            findings: [SeedFinding(.rowDigestMismatch, table: "products", row: 3, message: "m")], checks: 5, rows: 9)
        let json = try CanonicalJSON.string(report.json)
        #expect(json == #"{"checks":5,"findings":[{"check":"row_digest_mismatch","message":"m","row":3,"#
            + #""scope":null,"table":"products"}],"ok":false,"rows":9}"#)
        let parsed = try StrictJSONParser().parse(Array(json.utf8))
        #expect(parsed.objectValue?["ok"] == .bool(false))
    }

    @Test("check names are unique snake_case")
    func checkNames() {
        let names = SeedCheck.allCases.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "_" } })
        #expect(SeedCheck.installerOpen.isInstallerCheck && !SeedCheck.integrityCheck.isInstallerCheck)
    }

    // MARK: - Publication entry point

    @Test("the exporter's entry point checks snapshot_complete against the expected value and skips the installer")
    func publicationEntryPoint() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-verify")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        #expect(try SeedVerifier.verifyPublication(path: seed, expectedSnapshotComplete: 1).ok)
        let staged = try SeedVerifier.verifyPublication(path: seed, expectedSnapshotComplete: 0)
        #expect(staged.findings.map(\.check) == [.metaValue])
        #expect(!staged.findings.contains { $0.check.isInstallerCheck })

        try VerifyFixtures.modify(seed, "UPDATE _synchro_meta SET value = '0' WHERE key = 'snapshot_complete'")
        #expect(try SeedVerifier.verifyPublication(path: seed, expectedSnapshotComplete: 0).ok)
        let full = try SeedVerifier.verify(path: seed)
        #expect(full.contains(.metaValue) && full.contains(.installerMeta))
    }

    @Test("metadata keys: a client identity is forbidden, an unknown key unexpected, a missing one reported")
    func metaKeys() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-verify")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, """
            INSERT INTO _synchro_meta (key, value) VALUES ('client_server_id', 'device-1');
            INSERT INTO _synchro_meta (key, value) VALUES ('client_generation', '3');
            INSERT INTO _synchro_meta (key, value) VALUES ('favourite_colour', 'blue');
            DELETE FROM _synchro_meta WHERE key = 'seed_page_limit';
            UPDATE _synchro_meta SET value = '0042' WHERE key = 'seed_page_limit';
            UPDATE _synchro_meta SET value = 'NOT-A-UUID' WHERE key = 'seed_export_id';
            """)
        let report = try SeedVerifier.verify(path: seed, options: .publication(snapshotComplete: 1))
        let forbidden = report.findings.filter { $0.check == .metaKeyForbidden }.map(\.message)
        #expect(forbidden.count == 2)
        #expect(report.findings.contains { $0.check == .metaKeyUnexpected && $0.message.contains("favourite_colour") })
        #expect(report.findings.contains { $0.check == .metaKeyMissing && $0.message.contains("seed_page_limit") })
        #expect(report.findings.contains { $0.check == .metaValue && $0.message.contains("seed_export_id") })
        #expect(!report.findings.map(\.description).joined().contains("device-1"))
    }

    @Test("an internal table with a forbidden constraint and an extra index is reported")
    func internalTableShape() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-verify")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, """
            DROP TABLE _synchro_rebuild_attempts;
            CREATE TABLE _synchro_rebuild_attempts (scope_id TEXT PRIMARY KEY, rebuild_id TEXT NOT NULL UNIQUE,
                client_generation INTEGER NOT NULL, schema_version INTEGER NOT NULL, schema_hash TEXT NOT NULL,
                generation INTEGER NOT NULL, cursor TEXT, page_limit INTEGER NOT NULL);
            CREATE INDEX extra_index ON _synchro_meta (value);
            CREATE TABLE local_notes (id INTEGER PRIMARY KEY);
            """)
        let report = try SeedVerifier.verify(path: seed, options: .publication(snapshotComplete: 1))
        #expect(report.findings.contains { $0.check == .forbiddenWord && $0.table == "_synchro_rebuild_attempts" })
        #expect(report.findings.contains { $0.check == .internalIndex && $0.table == "_synchro_rebuild_attempts" })
        #expect(report.findings.contains { $0.check == .internalIndex && $0.message.contains("extra_index") })
        #expect(report.findings.contains { $0.check == .unexpectedTable && $0.table == "local_notes" })
    }

    @Test("a synced table whose column differs from the manifest is reported")
    func syncedTableShape() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-verify")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(seed, """
            DROP TRIGGER "_synchro_cdc_insert_categories";
            DROP TRIGGER "_synchro_cdc_update_categories";
            DROP TRIGGER "_synchro_cdc_delete_categories";
            ALTER TABLE categories RENAME TO categories_old;
            CREATE TABLE categories (id INTEGER PRIMARY KEY, name BLOB NOT NULL);
            INSERT INTO categories SELECT * FROM categories_old;
            DROP TABLE categories_old;
            """)
        let report = try SeedVerifier.verify(path: seed, options: .publication(snapshotComplete: 1))
        #expect(report.findings.contains { $0.check == .syncedTableShape && $0.message.contains("declared type") })
        #expect(report.findings.filter { $0.check == .triggerMissing }.count == 3)
    }

    // MARK: - Installer phase on its own

    @Test("without the publication audit the installer checks re-digest the migrated copy themselves")
    func installerAuditsTheCopyAlone() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-verify")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try VerifyFixtures.modify(
            seed, "UPDATE products SET title = title || '!' WHERE id = (SELECT max(id) FROM products)")
        let collector = FindingCollector(limit: 20)
        let staged = directory.path(".app.db.seed-test")
        try SeedStaging.stage(seed: seed, at: staged, collector: collector)
        try SeedStaging.removeFamily(staged)
        let findings = collector.finish().findings
        #expect(findings.allSatisfy { $0.check.isInstallerCheck })
        let row = findings.first { $0.check == .installerScopeDigest && $0.table == "products" }
        #expect(row?.row == Int64(VerifyFixtures.products), "the last product, by ordinal")
        #expect(findings.contains { $0.check == .installerScopeDigest && $0.scope == "catalog" })

        let clean = try VerifyFixtures.cleanCopy(in: directory, name: "clean.db")
        let cleanCollector = FindingCollector(limit: 20)
        try SeedStaging.stage(seed: clean, at: staged, collector: cleanCollector)
        try SeedStaging.removeFamily(staged)
        #expect(cleanCollector.finish().findings == [])
    }
}
