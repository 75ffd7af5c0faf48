import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Seed continuation receipts on first connect (`spec/seed-format.md` §8, `spec/integrity.md` §7.5,
/// `spec/wire-protocol.md` §3.6): a store holding an installed seed's state, built from the reference server's
/// own export, connects over loopback HTTP.
@Suite("Seed continuation")
struct SeedContinuationTests {
    @Test("valid receipts continue the portable scope from the seed boundary: one connect and one pull, no rebuild")
    func continuesFromSeedBoundary() throws {
        let fixture = try SeededFixture(prepare: { server in
            try server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["user:alice"]))
        })
        let seededRows = try fixture.count("SELECT count(*) FROM products")
        #expect(seededRows == 120)
        #expect(try fixture.store.meta(.clientServerID) == nil)

        let summary = try fixture.runCycle()

        #expect(fixture.transport.paths == ["/sync/connect", "/sync/pull"])
        let connect = try #require(try fixture.connectRequests().first)
        #expect(connect["seed_receipts"] == .object(JSONObject([
            JSONMember("catalog", .string(try #require(fixture.receipt("catalog")))),
        ])))
        #expect(connect["known_scopes"] == .object(JSONObject([])))
        #expect(summary.seedReceipts == [SeedReceiptOutcome(scopeID: "catalog", disposition: .continued)])
        #expect(summary.scopesRebuilt.isEmpty)
        #expect(summary.scopesVerified == ["catalog"])
        let catalog = try #require(try fixture.scope("catalog"))
        #expect(catalog.cursor != nil && catalog.checksum != nil)
        #expect(catalog.generation == 0)
        #expect(try fixture.count("SELECT count(*) FROM products") == seededRows)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seed_receipts") == 0)
        #expect(try fixture.store.meta(.clientServerID) == fixture.store.configuration.clientID)

        // The steady state: a connect without receipts and one pull.
        fixture.transport.reset()
        #expect(try fixture.runCycle().seedReceipts.isEmpty)
        #expect(fixture.transport.paths == ["/sync/connect", "/sync/pull"])
        #expect(try fixture.connectRequests().first?["seed_receipts"] == nil)
    }

    @Test("server changes after the export are pulled incrementally and the terminal checksum verifies")
    func pullsChangesAfterExport() throws {
        let fixture = try SeededFixture()
        let engine = fixture.server.engine
        _ = try engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(3)), row: .object(JSONObject([
            JSONMember("fld_category_id", .number(JSONNumber(3))), JSONMember("fld_category_name", .string("Kitchen")),
        ])))
        _ = try engine.operatorWrite(table: "tbl_categories", pk: .number(JSONNumber(41)), row: .object(JSONObject([
            JSONMember("fld_category_id", .number(JSONNumber(41))), JSONMember("fld_category_name", .string("Garden")),
        ])))
        try engine.operatorDelete(table: "tbl_products", pk: .string("1000001"))

        let summary = try fixture.runCycle()

        #expect(summary.seedReceipts == [SeedReceiptOutcome(scopeID: "catalog", disposition: .continued)])
        // Only the unseeded user scope is rebuilt; catalog moves by pull alone.
        #expect(summary.scopesRebuilt == ["user:alice"])
        let rebuilt = fixture.transport.bodies("/sync/rebuild").map {
            (try? StrictJSONParser().parse($0))?.objectValue?["scope"]?.stringValue
        }
        #expect(!rebuilt.isEmpty && rebuilt.allSatisfy { $0 == "user:alice" })
        #expect(fixture.transport.paths.filter { $0 == "/sync/pull" }.count == 1)
        let pulled = fixture.recorder.events.compactMap { event -> Int? in
            if case .pageApplied(.pull, _, let rows) = event { return rows }
            return nil
        }
        #expect(pulled == [3])
        #expect(summary.scopesVerified == ["catalog", "user:alice"])
        #expect(try fixture.text("SELECT name FROM categories WHERE id = 3") == "Kitchen")
        #expect(try fixture.text("SELECT name FROM categories WHERE id = 41") == "Garden")
        #expect(try fixture.count("SELECT count(*) FROM products WHERE id = 1000001") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)
        #expect(try fixture.scope("catalog")?.generation == 0)
    }

    @Test("a locally changed seeded row fails the re-check: receipt deleted, scope invalidated, not sent, rebuilt")
    func tamperedRowRebuilds() throws {
        let fixture = try SeededFixture()
        let original = try fixture.text("SELECT name FROM categories WHERE id = 2")
        // A change no capture recorded (nothing protects the row): the seed no longer describes local state.
        try fixture.store.serverApply { try $0.execute("UPDATE categories SET name = 'Tampered' WHERE id = 2") }

        let rejected = try ConnectExchange(context: fixture.context).checkSeedReceipts()

        #expect(rejected == [SeedReceiptOutcome(scopeID: "catalog", disposition: .rejectedLocally(.scopeDigest))])
        #expect(fixture.transport.paths.isEmpty)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seed_receipts") == 0)
        let invalidated = try #require(try fixture.scope("catalog"))
        #expect(invalidated.cursor == nil && invalidated.checksum == nil && invalidated.generation == 1)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 0)

        let summary = try fixture.runCycle()

        let connect = try #require(try fixture.connectRequests().first)
        #expect(connect["seed_receipts"] == nil)
        #expect(connect["known_scopes"] == .object(JSONObject([JSONMember("catalog", .object(JSONObject([
            JSONMember("cursor", .null),
        ])))])))
        #expect(summary.seedReceipts.isEmpty)
        #expect(summary.scopesRebuilt == ["catalog", "user:alice"])
        #expect(try fixture.text("SELECT name FROM categories WHERE id = 2") == original)
        #expect(try fixture.scope("catalog")?.cursor != nil)
    }

    @Test("every rule of the receipt re-check rejects the receipt it breaks", arguments: ReceiptBreak.allCases)
    func recheckRules(_ breakage: ReceiptBreak) throws {
        let fixture = try SeededFixture(rows: 30)
        try fixture.store.serverApply { transaction in
            for statement in breakage.statements { try transaction.execute(statement) }
        }
        let generation = try fixture.scope("catalog")?.generation

        let rejected = try ConnectExchange(context: fixture.context).checkSeedReceipts()

        #expect(rejected == [SeedReceiptOutcome(scopeID: "catalog", disposition: .rejectedLocally(breakage.failure))])
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seed_receipts") == 0)
        if let generation {
            let scope = try #require(try fixture.scope("catalog"))
            #expect(scope.generation == generation + 1)
            #expect(scope.cursor == nil && scope.checksum == nil)
        }
        // A receipt that already failed is gone: the next re-check finds nothing.
        #expect(try ConnectExchange(context: fixture.context).checkSeedReceipts().isEmpty)
    }

    @Test("a receipt for an unassigned scope removes the scope, its provenance and every row without pending intent")
    func unassignedScope() throws {
        let fixture = try SeededFixture(prepare: { server in
            try server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["catalog"]))
        })
        try fixture.store.execute("UPDATE categories SET name = 'Mine' WHERE id = 3")

        let outcome = try ConnectExchange(context: fixture.context).run()

        #expect(outcome.seedReceipts == [SeedReceiptOutcome(scopeID: "catalog", disposition: .unassigned)])
        #expect(try fixture.scopes().map(\.id) == ["user:alice"])
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scope_rows") == 0)
        #expect(try fixture.count("SELECT count(*) FROM products") == 0)
        #expect(try fixture.count("SELECT count(*) FROM categories") == 1)
        #expect(try fixture.text("SELECT name FROM categories WHERE id = 3") == "Mine")
        #expect(try fixture.count("SELECT count(*) FROM _synchro_pending_changes") == 1)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seed_receipts") == 0)
        #expect(try fixture.store.meta(.clientServerID) == fixture.store.configuration.clientID)
    }

    @Test("a stale or unverifiable receipt gets a null cursor: continuation discarded, scope rebuilt and verified",
          arguments: StaleReceipt.allCases)
    func staleReceipt(_ stale: StaleReceipt) throws {
        let fixture = try SeededFixture()
        try stale.apply(fixture)

        let summary = try fixture.runCycle()

        #expect(try fixture.connectRequests().first?["seed_receipts"] != nil)
        #expect(summary.seedReceipts == [SeedReceiptOutcome(scopeID: "catalog", disposition: .discarded)])
        #expect(summary.scopesRebuilt.contains("catalog"))
        #expect(summary.scopesVerified == ["catalog", "user:alice"])
        let catalog = try #require(try fixture.scope("catalog"))
        // Bumped once when the continuation was discarded and once when the rebuild attempt started.
        #expect(catalog.generation == 2)
        #expect(catalog.cursor != nil)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seed_receipts") == 0)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE generation = 0") == 0)
    }

    @Test("an offline write before the first connect pushes with the seeded server version and is accepted")
    func offlineWriteBeforeConnect() throws {
        let fixture = try SeededFixture(extraScopes: { server in
            [try ServerSeedExport.rebuiltScope("user:alice", from: server, receipt: "sc1.never-issued")]
        })
        let task = try #require(try fixture.text("SELECT id FROM tasks ORDER BY id LIMIT 1"))
        let seeded = try #require(try fixture.text(
            "SELECT server_version FROM _synchro_row_versions WHERE table_name = 'tasks' AND record_id = '\(task)'"))
        try fixture.store.execute("UPDATE tasks SET title = 'Offline' WHERE id = ?", [.text(task)])
        #expect(try fixture.store.ledger().map(\.baseVersion) == [seeded])
        // Pending intent is protected: its edge digest stands for the row, so the receipts still hold.
        #expect(try ConnectExchange(context: fixture.context).checkSeedReceipts().isEmpty)

        let summary = try fixture.runCycle()

        let push = try #require(fixture.transport.bodies("/sync/push").first)
        let mutation = try StrictJSONParser().parse(push).objectValue?["mutations"]?.arrayValue?.first?.objectValue
        #expect(mutation?["base_version"] == .string(seeded))
        #expect(summary.mutationsAccepted == 1)
        #expect(summary.seedReceipts == [
            SeedReceiptOutcome(scopeID: "catalog", disposition: .continued),
            SeedReceiptOutcome(scopeID: "user:alice", disposition: .discarded),
        ])
        #expect(summary.scopesRebuilt == ["user:alice"])
        #expect(try fixture.text("SELECT title FROM tasks WHERE id = '\(task)'") == "Offline")
        #expect(try fixture.store.ledger().map(\.state) == [.accepted])
    }

    /// The client ID is stored before the first connect is sent (issue #16, item 4), so a refused or lost first
    /// connect leaves the store bound to the ID the server may have seen; the receipts stay until one is installed.
    @Test("a seeded store is bound before its first connect is sent; its receipts stay until one is installed")
    func bindsOnlyAfterConnect() throws {
        let fixture = try SeededFixture()
        let stranger = ServerTransport(server: fixture.server, user: "mallory")
        let refused = try #require(throws: SyncError.self) {
            try ConnectExchange(context: SyncContext(store: fixture.store, transport: stranger)).run()
        }
        #expect(refused == .http(status: 401, code: "auth_required"))
        #expect(try fixture.store.meta(.clientServerID) == fixture.store.configuration.clientID)
        #expect(try fixture.store.meta(.clientGeneration) == nil)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seed_receipts") == 1)

        try ConnectExchange(context: fixture.context).run()
        #expect(try fixture.store.meta(.clientServerID) == fixture.store.configuration.clientID)
    }

    @Test("a connect response that breaks the receipt rules is a contract violation and installs nothing",
          arguments: ReceiptContractCase.allCases)
    func receiptContract(_ contract: ReceiptContractCase) throws {
        let fixture = try SeededFixture(rows: 30)
        let transport = ServerTransport(server: fixture.server)
        transport.setEdit { path, reply in
            guard path == "/sync/connect", let json = try? StrictJSONParser().parse(reply.body),
                let body = try? CanonicalJSON.encode(contract.edit(json))
            else { return reply }
            return SyncReply(status: reply.status, body: body)
        }
        let before = try fixture.scopes()

        #expect(throws: SyncError.contract(rule: contract.rule, member: contract.member)) {
            try ConnectExchange(context: SyncContext(store: fixture.store, transport: transport)).run()
        }

        #expect(try fixture.store.meta(.clientGeneration) == nil)
        // Bound before the request was sent (identity, not installed state).
        #expect(try fixture.store.meta(.clientServerID) == fixture.store.configuration.clientID)
        #expect(try fixture.count("SELECT count(*) FROM _synchro_seed_receipts") == 1)
        #expect(try fixture.scopes().map(\.id) == before.map(\.id))
        #expect(try fixture.scopes().map(\.cursor) == before.map(\.cursor))
    }
}

/// One way to make a stored receipt disagree with local state, and the rule of `spec/seed-format.md` §8 the
/// re-check must name.
enum ReceiptBreak: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case schemaReference, emptyReceipt, negativeCardinality, invalidChecksum, scopeMissing, scopeHasCursor
    case scopeGeneration, scopeChecksum, localChecksum, cardinality, edgeGeneration, edgeVersion, scopeDigest
    /// Both a wrong cardinality and a wrong edge: the count is checked first (the edges are streamed, so the count
    /// is known only at the end, and the edge failure met on the way must not be reported instead).
    case cardinalityAndEdgeGeneration

    var testDescription: String { rawValue }

    private static let oneCatalogEdge = """
        (SELECT rowid FROM _synchro_scope_rows WHERE scope_id = 'catalog' AND table_name = 'categories' LIMIT 1)
        """
    private static let otherChecksum = #"{"algorithm":"sha256","digest":"\#(String(repeating: "0", count: 64))","#
        + #""encoding":"hex","version":1}"#

    var statements: [String] {
        let receipts = "UPDATE _synchro_seed_receipts SET"
        switch self {
        case .schemaReference: return ["\(receipts) schema_version = schema_version + 1"]
        case .emptyReceipt: return ["\(receipts) receipt = ''"]
        case .negativeCardinality: return ["\(receipts) cardinality = -1"]
        case .invalidChecksum: return ["\(receipts) checksum = '{}'"]
        case .scopeMissing: return ["DELETE FROM _synchro_scopes WHERE scope_id = 'catalog'"]
        case .scopeHasCursor: return ["UPDATE _synchro_scopes SET cursor = 'c1.local' WHERE scope_id = 'catalog'"]
        case .scopeGeneration: return ["UPDATE _synchro_scopes SET generation = 3 WHERE scope_id = 'catalog'"]
        case .scopeChecksum:
            return ["UPDATE _synchro_scopes SET checksum = '\(Self.otherChecksum)' WHERE scope_id = 'catalog'"]
        case .localChecksum: return ["UPDATE _synchro_scopes SET local_checksum = '' WHERE scope_id = 'catalog'"]
        case .cardinality: return ["\(receipts) cardinality = cardinality + 1"]
        case .edgeGeneration:
            return ["UPDATE _synchro_scope_rows SET generation = 1 WHERE rowid = \(Self.oneCatalogEdge)"]
        case .cardinalityAndEdgeGeneration:
            return ReceiptBreak.edgeGeneration.statements + ReceiptBreak.cardinality.statements
        case .edgeVersion:
            return ["""
                UPDATE _synchro_row_versions SET row_checksum = '\(Self.otherChecksum)'
                WHERE (table_name, record_id) IN (SELECT table_name, record_id FROM _synchro_scope_rows
                    WHERE rowid = \(Self.oneCatalogEdge))
                """]
        case .scopeDigest: return ["UPDATE products SET stock = stock + 1 WHERE id = (SELECT min(id) FROM products)"]
        }
    }

    var failure: SeedReceiptFailure {
        switch self {
        case .schemaReference: .schemaReference
        case .emptyReceipt: .emptyReceipt
        case .negativeCardinality: .negativeCardinality
        case .invalidChecksum: .invalidChecksum
        case .scopeMissing: .scopeMissing
        case .scopeHasCursor: .scopeHasCursor
        case .scopeGeneration: .scopeGeneration
        case .scopeChecksum: .scopeChecksum
        case .localChecksum: .localChecksum
        case .cardinality, .cardinalityAndEdgeGeneration: .cardinality
        case .edgeGeneration: .edgeGeneration(table: "categories")
        case .edgeVersion: .edgeVersion(table: "categories")
        case .scopeDigest: .scopeDigest
        }
    }
}

/// Server-side reasons a locally valid receipt no longer continues (`spec/integrity.md` §7.5).
enum StaleReceipt: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The membership contract changed after the export (every export-bound generation must be current).
    case membershipChanged
    /// The receipt is not one the server issued (its MAC does not verify).
    case forged
    /// A new schema (Class 2) was published after the export: the seed's rows are bound to the old hash.
    case schemaPublished

    var testDescription: String { rawValue }

    func apply(_ fixture: SeededFixture) throws {
        switch self {
        case .membershipChanged:
            try fixture.server.engine.inject(.changeMembership)
        case .forged:
            try fixture.store.serverApply { transaction in
                try transaction.execute("UPDATE _synchro_seed_receipts SET receipt = receipt || 'x'")
            }
        case .schemaPublished:
            try SchemaPublisher(fixture.server).publish(transition: "class_2") {
                $0.addField("tbl_notes", "fld_note_mood", type: "string")
            }
        }
    }
}

/// A connect response edited to break the seed receipt rules of `spec/wire-protocol.md` §3.5–§3.6.
enum ReceiptContractCase: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The receipt scope is neither added nor removed.
    case receiptScopeUndisposed
    /// A scope without a receipt gets an initial cursor.
    case cursorWithoutReceipt

    var testDescription: String { rawValue }

    var rule: String {
        switch self {
        case .receiptScopeUndisposed: "seed_receipt_scope_undisposed"
        case .cursorWithoutReceipt: "initial_cursor_without_seed_receipt"
        }
    }

    var member: String {
        switch self {
        case .receiptScopeUndisposed: "scopes"
        case .cursorWithoutReceipt: "scopes.add[].cursor"
        }
    }

    func edit(_ json: JSONValue) -> JSONValue {
        guard let object = json.objectValue, let scopes = object["scopes"]?.objectValue else { return json }
        let added = (scopes["add"]?.arrayValue ?? []).compactMap { entry -> JSONValue? in
            guard let id = entry.objectValue?["id"]?.stringValue else { return entry }
            switch self {
            case .receiptScopeUndisposed:
                return id == "catalog" ? nil : entry
            case .cursorWithoutReceipt:
                guard id == "user:alice" else { return entry }
                return .object(JSONObject([JSONMember("id", .string(id)), JSONMember("cursor", .string("c1.x"))]))
            }
        }
        let edited = JSONValue.object(JSONObject([
            JSONMember("add", .array(added)), JSONMember("remove", scopes["remove"] ?? .array([])),
        ]))
        return .object(JSONObject(object.members.map { $0.key == "scopes" ? JSONMember("scopes", edited) : $0 }))
    }
}
