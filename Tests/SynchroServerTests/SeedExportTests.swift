import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Portable seed export (`POST /operator/seed/manifest`, `/operator/seed/scope`) and seed receipt
/// conversion at connect, black-box over loopback (`spec/integrity.md` §7, `spec/wire-protocol.md`
/// §3.6).
@Suite("Seed export")
struct SeedExportTests {
    /// A catalog product of the export as a complete row, for writes after it.
    static func product(_ records: [JSONObject]) throws -> (pk: JSONValue, row: JSONObject) {
        let record = try #require(records.first { $0["table"] == .string("tbl_products") })
        let pk = try #require(record["pk"]?.objectValue?["fld_product_id"])
        return (pk, try #require(record["row"]?.objectValue))
    }

    /// `row` with `field` replaced.
    static func setting(_ row: JSONObject, _ field: String, _ value: JSONValue) -> JSONValue {
        .object(JSONObject(row.members.map { $0.key == field ? JSONMember(field, value) : $0 }))
    }

    /// Changes one product's stock after an export; returns the product's key.
    @discardableResult
    static func restock(_ server: RunningServer, from records: [JSONObject], to stock: Int64) throws -> JSONValue {
        let (pk, row) = try product(records)
        try server.engine.operatorWrite(
            table: "tbl_products", pk: pk, row: setting(row, "fld_product_stock", .number(JSONNumber(stock))))
        return pk
    }

    // MARK: - Manifest

    @Test("a fresh server's manifest lists exactly the portable scopes at generation start with a recomputable hash")
    func manifestAtGenerationStart() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let manifest = try exporter.manifest(pageLimit: 100)
        #expect(manifest.schemaVersion == schema.schemaVersion)
        #expect(manifest.schemaHash == schema.schemaHash)
        #expect(manifest.streamGeneration == 1)
        #expect(manifest.boundary == .generationStart)
        #expect(manifest.pageLimit == 100)
        #expect(manifest.scopes.map(\.id) == ["catalog"])
        let catalog = try manifest.scope("catalog")
        #expect(catalog.cardinality == 340)
        #expect([catalog.registryGeneration, catalog.membershipGeneration, catalog.retentionGeneration] == [1, 1, 1])
        #expect(try manifest.recomputedHash() == manifest.manifestHash)
        #expect(catalog.continuation.hasPrefix("sc1.") && catalog.pageToken.hasPrefix("sp1."))

        let again = try exporter.manifest(pageLimit: 100)
        #expect(again.exportID != manifest.exportID, "every manifest call is a new export")
        #expect(try again.scope("catalog").checksum == catalog.checksum)
        #expect(again.manifestHash != manifest.manifestHash, "the export ID is part of the hashed manifest")
    }

    @Test("paging through every portable scope yields verified rows whose count and scope digest match the manifest")
    func pagesThroughEveryScope() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let manifest = try exporter.manifest(pageLimit: 64)
        for scope in manifest.scopes {
            let run = try exporter.export(scope, of: manifest, schema: schema)
            #expect(run.pages.count == 6)
            #expect(run.records.count == 340)
            #expect(Set(run.records.compactMap { $0["table"]?.stringValue }) == ["tbl_categories", "tbl_products"])
        }
    }

    @Test("a scope of one page has no page token after it; a page limit of one pages row by row")
    func pageLimits() throws {
        let server = try RunningServer(rows: 3)
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let whole = try exporter.manifest(pageLimit: 1000)
        let single = try exporter.export(try whole.scope("catalog"), of: whole, schema: schema)
        #expect(single.pages.count == 1)
        #expect(single.pages[0].object["page_token"] == .null)
        #expect(single.pages[0].object["has_more"] == .bool(false))

        let rowwise = try exporter.manifest(pageLimit: 1)
        let run = try exporter.export(try rowwise.scope("catalog"), of: rowwise, schema: schema)
        #expect(run.pages.count == 43)
        #expect(run.records.map { try? CanonicalJSON.encode(.object($0)) } == single.records.map {
            try? CanonicalJSON.encode(.object($0))
        })
    }

    @Test("page tokens and receipts decode with SynchroProtocol and bind export, scope, generations and boundary")
    func tokenBindings() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let manifest = try exporter.manifest(pageLimit: 128)
        let catalog = try manifest.scope("catalog")
        let receipt = try manifest.checkReceipt(catalog)
        #expect(WireFormats.isTimestamp(receipt.issuedAt))
        let run = try exporter.export(catalog, of: manifest, schema: try exporter.schema())
        let pages = try run.pageTokens.map { try SeedPagePayload(token: try SeedToken.decode($0, expecting: .page)) }
        #expect(pages.map(\.nextRowOrdinal) == [0, 128, 256])
        #expect(Set(pages.map(\.transactionNonce)).count == 1, "one export transaction")
        #expect(Set(pages.map(\.keyID)).count == 1)
        #expect(pages[0].keyID != receipt.keyID, "page tokens and receipts use different keys")
        #expect(throws: SeedTokenError.self) { try SeedToken.decode(catalog.pageToken, expecting: .continuation) }

        let other = try exporter.manifest(pageLimit: 128)
        let otherPage = try SeedPagePayload(token: try SeedToken.decode(try other.scope("catalog").pageToken))
        #expect(otherPage.transactionNonce != pages[0].transactionNonce)
    }

    // MARK: - Immutability

    @Test("a write after the export changes neither its pages nor its receipts; a new export sees it")
    func exportsAreImmutable() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let manifest = try exporter.manifest(pageLimit: 100)
        let catalog = try manifest.scope("catalog")
        let before = try exporter.export(catalog, of: manifest, schema: schema)

        try Self.restock(server, from: before.records, to: 501)
        try server.engine.operatorWrite(
            table: "tbl_categories", pk: .number(JSONNumber(9001)),
            row: object(["fld_category_id": .number(JSONNumber(9001)), "fld_category_name": .string("new")]))

        let after = try exporter.export(catalog, of: manifest, schema: schema)
        #expect(after.pages.map(\.body) == before.pages.map(\.body), "replayed pages are byte-identical")

        let next = try exporter.manifest(pageLimit: 100)
        let nextCatalog = try next.scope("catalog")
        #expect(nextCatalog.cardinality == 341)
        #expect(nextCatalog.checksum != catalog.checksum)
        guard case .transactionEnd(let lsn) = next.boundary else {
            Issue.record("an export after materialized writes is at a transaction end")
            return
        }
        #expect(lsn.contains("/"))
        _ = try exporter.export(nextCatalog, of: next, schema: schema)
    }

    @Test("an export reads only materialized state: a captured but unmaterialized write is not in it")
    func exportReadsMaterializedStateOnly() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let before = try exporter.manifest(pageLimit: 1000)
        try server.engine.inject(.pauseMaterialization)
        let key = JSONValue.number(JSONNumber(9003))
        try server.engine.operatorWrite(
            table: "tbl_categories", pk: key,
            row: object(["fld_category_id": key, "fld_category_name": .string("pending")]))

        let paused = try exporter.manifest(pageLimit: 1000)
        #expect(paused.boundary == before.boundary)
        #expect(try paused.scope("catalog").checksum == before.scope("catalog").checksum)
        _ = try exporter.export(try paused.scope("catalog"), of: paused, schema: schema)

        try server.engine.inject(.resumeMaterialization)
        let resumed = try exporter.manifest(pageLimit: 1000)
        #expect(resumed.boundary != before.boundary)
        #expect(try resumed.scope("catalog").cardinality == before.scope("catalog").cardinality + 1)
    }

    // MARK: - Page request rejections

    @Test("a wrong ordinal, wrong limit, forged token, another scope or another export's receipt gets 400")
    func pageRejections() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let manifest = try exporter.manifest(pageLimit: 100)
        let catalog = try manifest.scope("catalog")
        let first = try exporter.page(
            scope: "catalog", token: catalog.pageToken, receipt: catalog.continuation, ordinal: 0, limit: 100)
        #expect(first.status == 200)
        let second = try #require(first.object["page_token"]?.stringValue)
        let other = try exporter.manifest(pageLimit: 100).scope("catalog")

        let cases: [(String, scope: String, token: String, receipt: String, ordinal: Int64, limit: Int64)] = [
            ("wrong expected ordinal", "catalog", second, catalog.continuation, 0, 100),
            ("ordinal of a later page", "catalog", catalog.pageToken, catalog.continuation, 100, 100),
            ("wrong limit", "catalog", catalog.pageToken, catalog.continuation, 0, 99),
            ("flipped MAC", "catalog", try TokenSurgery.flippedMAC(second), catalog.continuation, 100, 100),
            ("edited ordinal", "catalog",
             try TokenSurgery.replacing(second, member: "next_row_ordinal", with: .string("200")),
             catalog.continuation, 200, 100),
            ("token of another scope", "user:alice", catalog.pageToken, catalog.continuation, 0, 100),
            ("receipt of another export", "catalog", catalog.pageToken, other.continuation, 0, 100),
            ("token of another export", "catalog", other.pageToken, catalog.continuation, 0, 100),
            ("receipt as page token", "catalog", catalog.continuation, catalog.continuation, 0, 100),
            ("page token as receipt", "catalog", catalog.pageToken, catalog.pageToken, 0, 100),
            ("forged receipt", "catalog", catalog.pageToken, try TokenSurgery.flippedMAC(catalog.continuation), 0, 100),
            ("garbage", "catalog", "sp1.e30.AAAA", catalog.continuation, 0, 100),
        ]
        for (name, scope, token, receipt, ordinal, limit) in cases {
            let reply = try exporter.page(scope: scope, token: token, receipt: receipt, ordinal: ordinal, limit: limit)
            #expect(reply.status == 400, "\(name)")
            #expect(reply.errorCode == "invalid_request", "\(name)")
            #expect(!reply.text.contains("sp1.") && !reply.text.contains("sc1."), "\(name): no token in the error")
        }
    }

    @Test("operator routes need the operator credential, the JSON media type and exact bodies")
    func operatorGates() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let body = object(["page_limit": .number(JSONNumber(10))])
        let json = ("Content-Type", "application/json")
        for headers in [[json], [json, ("Authorization", "Bearer secret-alice")], [json, ("Authorization", "Bearer")]] {
            for path in ["/operator/seed/manifest", "/operator/seed/scope"] {
                let reply = try exporter.post(path, body, headers: headers)
                #expect(reply.status == 401, "\(path)")
                #expect(reply.errorCode == "auth_required")
            }
        }
        let textPlain = try exporter.post("/operator/seed/manifest", body, headers: [
            ("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "text/plain"),
        ])
        #expect(textPlain.status == 400)
        for bad in [
            object(["page_limit": .number(JSONNumber(0))]), object(["page_limit": .number(JSONNumber(1001))]),
            object(["page_limit": .string("10")]),
            object(["page_limit": .number(JSONNumber(10)), "scope": .string("catalog")]), object([:]),
        ] {
            let reply = try exporter.post("/operator/seed/manifest", bad)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_request")
        }
        // Sent as written: the canonical encoder would turn `10.0` into `10`.
        for text in [#"{"page_limit":10.0}"#, #"{"page_limit":1e1}"#, #"{"page_limit":10,"page_limit":10}"#] {
            let reply = try server.send(
                "POST", "/operator/seed/manifest", body: Array(text.utf8), headers: SeedExporter.operatorHeaders)
            #expect(reply.status == 400, "\(text)")
        }
        let manifest = try exporter.manifest(pageLimit: 10)
        let catalog = try manifest.scope("catalog")
        let valid = SeedExporter.pageBody(
            scope: "catalog", token: catalog.pageToken, receipt: catalog.continuation, ordinal: 0, limit: 10)
        let members = try #require(valid.objectValue).members
        func replacing(_ name: String, _ value: JSONValue) -> JSONObject {
            JSONObject(members.map { $0.key == name ? JSONMember(name, value) : $0 })
        }
        for variant in [
            JSONObject(Array(members.dropLast())),
            JSONObject(members + [JSONMember("extra", .bool(true))]),
            replacing("expected_row_ordinal", .number(JSONNumber(-1))),
            replacing("limit", .number(JSONNumber(1001))),
            replacing("scope_id", .string("")),
        ] {
            let reply = try exporter.post("/operator/seed/scope", .object(variant))
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_request")
        }
        #expect(try exporter.post("/operator/seed/scope", valid).status == 200)
        let get = try server.send("GET", "/operator/seed/manifest", body: [], headers: SeedExporter.operatorHeaders)
        #expect(get.status == 405)
    }

    // MARK: - Receipts at connect

    @Test("a valid receipt converts to a cursor that resumes after the boundary, with terminal checksums")
    func receiptConvertsToCursor() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let first = try exporter.manifest(pageLimit: 1000)
        let initial = try exporter.export(try first.scope("catalog"), of: first, schema: schema)
        // A write before the export puts its boundary at a transaction end, not the generation start.
        try Self.restock(server, from: initial.records, to: 7)
        let manifest = try exporter.manifest(pageLimit: 200)
        let catalog = try manifest.scope("catalog")
        let exported = try exporter.export(catalog, of: manifest, schema: schema)
        guard case .transactionEnd = manifest.boundary else {
            Issue.record("the export follows a materialized write")
            return
        }

        let restocked = try Self.restock(server, from: exported.records, to: 8)
        let newCategory = JSONValue.number(JSONNumber(9002))
        try server.engine.operatorWrite(
            table: "tbl_categories", pk: newCategory,
            row: object(["fld_category_id": newCategory, "fld_category_name": .string("after")]))

        let (reply, added, removed) = try SeededConnect.connect(
            server, client: "seeded-1", schema: schema, receipts: [("catalog", catalog.continuation)])
        #expect(reply.object["schema"]?.objectValue?["action"] == .string("none"))
        #expect(removed.isEmpty)
        #expect(added.keys.sorted() == ["catalog", "user:alice"])
        let cursor = try #require(added["catalog"] ?? nil, "an assigned scope with a valid receipt gets a cursor")
        #expect(added["user:alice"] == .some(nil), "only the seeded scope has a cursor")
        #expect(cursor != catalog.continuation)

        let client = try SeededConnect.wireClient(
            server, client: "seeded-1", reply: reply, schema: schema, scopes: ["catalog", "user:alice"])
        let pull = try client.pull([("catalog", cursor), ("user:alice", nil)])
        try #require(pull.status == 200, "pull failed: \(pull.text)")
        let page = pull.object
        #expect(page["has_more"] == .bool(false))
        let changes = try #require(page["changes"]?.arrayValue).compactMap(\.objectValue)
        #expect(changes.count == 2, "only the changes after the export boundary")
        #expect(changes.allSatisfy { $0["scope"] == .string("catalog") && $0["op"] == .string("upsert") })
        let keys = changes.compactMap { $0["pk"]?.objectValue?.members.first?.value }
        #expect(keys.contains(restocked) && keys.contains(newCategory))

        // The seed plus the pulled changes is exactly the server's scope at the head.
        var rows: [[UInt8]: (identity: RowIdentity, digest: [UInt8])] = [:]
        for entry in exported.entries { rows[entry.identity.bytes] = entry }
        for change in changes {
            let (identity, digest) = try DigestCheck.verifyRow(change, manifest: schema)
            rows[identity.bytes] = (identity, digest)
        }
        let head = try ScopeDigest.compute(
            schemaHash: schema.schemaHashOctets, scopeID: "catalog",
            entries: rows.values.map { (identity: $0.identity, rowDigest: $0.digest) })
        #expect(DigestCheck.checksum(page, scope: "catalog") == head.hex)
        #expect(page["checksums"]?.objectValue?.keys.sorted() == ["catalog", "user:alice"])
        #expect(page["rebuild"] == .array([.string("user:alice")]))
        #expect(page["scope_cursors"]?.objectValue?["catalog"] != nil)
    }

    @Test("a receipt at the generation start resumes from the start for any user; the cursor binds the client")
    func generationStartReceiptForAnyUser() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let manifest = try exporter.manifest(pageLimit: 1000)
        #expect(manifest.boundary == .generationStart)
        let catalog = try manifest.scope("catalog")
        let exported = try exporter.export(catalog, of: manifest, schema: schema)
        try Self.restock(server, from: exported.records, to: 9)

        var seeded: [String: (client: WireClient, cursor: String)] = [:]
        for user in ["alice", "bob"] {
            let (reply, added, _) = try SeededConnect.connect(
                server, user: user, client: "seeded-\(user)", schema: schema,
                receipts: [("catalog", catalog.continuation)])
            let cursor = try #require(added["catalog"] ?? nil, "\(user) gets a cursor")
            let client = try SeededConnect.wireClient(
                server, user: user, client: "seeded-\(user)", reply: reply, schema: schema,
                scopes: ["catalog", "user:\(user)"])
            let pulled = try client.pullToTerminal(from: ["catalog": cursor], limit: 1000)
            #expect(pulled.changes.count == 1)
            seeded[user] = (client, cursor)
        }
        let alice = try #require(seeded["alice"]), bob = try #require(seeded["bob"])
        // The converted cursor is a normal cursor of one user's client, and a receipt is never one.
        for (client, cursor) in [(bob.client, alice.cursor), (alice.client, catalog.continuation)] {
            let reply = try client.pull([("catalog", cursor)])
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_request")
        }
    }

    @Test("a receipt made stale by a membership change gets a null cursor")
    func staleReceipt() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let catalog = try exporter.manifest(pageLimit: 1000).scope("catalog")
        try server.engine.inject(.changeMembership)
        let (_, added, removed) = try SeededConnect.connect(
            server, client: "seeded-stale", schema: schema, receipts: [("catalog", catalog.continuation)])
        #expect(added.keys.sorted() == ["catalog", "user:alice"])
        #expect(added["catalog"] == .some(nil))
        #expect(removed.isEmpty)
    }

    @Test("forged, misused or schema-mismatched receipts of an assigned scope get a null cursor", arguments: [
        "flipped MAC", "edited cardinality", "edited boundary", "page token", "another scope's key", "garbage",
        "fresh sentinel schema",
    ])
    func unusableReceipt(case name: String) throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let catalog = try exporter.manifest(pageLimit: 1000).scope("catalog")
        var receipts = [("catalog", catalog.continuation)]
        var body: JSONValue?
        switch name {
        case "flipped MAC": receipts = [("catalog", try TokenSurgery.flippedMAC(catalog.continuation))]
        case "edited cardinality":
            receipts = [("catalog", try TokenSurgery.replacing(
                catalog.continuation, member: "cardinality", with: .string("339")))]
        case "edited boundary":
            receipts = [("catalog", try TokenSurgery.replacing(
                catalog.continuation, member: "snapshot_boundary",
                with: SeedSnapshotBoundary.transactionEnd(commitLSN: "0/1").json))]
        case "page token": receipts = [("catalog", catalog.pageToken)]
        case "another scope's key": receipts = [("user:alice", catalog.continuation)]
        case "garbage": receipts = [("catalog", "sc1.e30.AAAA")]
        default:
            body = object([
                "client_id": .string("seeded-x"), "platform": .string("ios"), "app_version": .string("1.0.0"),
                "protocol_version": .number(JSONNumber(3)),
                "schema": object(["version": .number(JSONNumber(0)), "hash": .string("")]),
                "scope_set_version": .number(JSONNumber(0)), "known_scopes": object([:]),
                "seed_receipts": object(["catalog": .string(catalog.continuation)]),
            ])
        }
        let reply: RunningServer.Reply
        if let body {
            reply = try server.post("/sync/connect", body)
        } else {
            reply = try server.post("/sync/connect", SeededConnect.body(
                client: "seeded-x", schemaVersion: schema.schemaVersion, schemaHash: schema.schemaHash,
                receipts: receipts))
        }
        #expect(reply.status == 200)
        let add = reply.object["scopes"]?.objectValue?["add"]?.arrayValue ?? []
        #expect(add.compactMap { $0.objectValue?["id"]?.stringValue } == ["catalog", "user:alice"])
        #expect(add.allSatisfy { $0.objectValue?["cursor"] == .null }, "\(name)")
        #expect(reply.object["scopes"]?.objectValue?["remove"] == .array([]))
    }

    @Test("a receipt for a scope the client is not assigned is answered with remove, never with access")
    func unassignedReceipt() throws {
        let server = try RunningServer()
        let exporter = SeedExporter(server: server)
        let schema = try exporter.schema()
        let catalog = try exporter.manifest(pageLimit: 1000).scope("catalog")
        // A genuine receipt presented for bob's private scope, and a well-formed receipt naming a
        // scope this server never declared (its MAC cannot be genuine, and must not matter).
        let mars = try TokenSurgery.replacing(catalog.continuation, member: "scope_id", with: .string("region:mars"))
        let (reply, added, removed) = try SeededConnect.connect(
            server, client: "seeded-unassigned", schema: schema,
            receipts: [("user:bob", catalog.continuation), ("region:mars", mars)])
        #expect(removed == ["region:mars", "user:bob"])
        #expect(added.keys.sorted() == ["catalog", "user:alice"])
        #expect(added.values.allSatisfy { $0 == nil })
        #expect(reply.object["scope_set_version"] == .number(JSONNumber(1)))
    }
}
