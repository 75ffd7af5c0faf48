import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `spec/client-store.md` §9 "Protected row": besides unresolved intent, a retained `rejected_terminal` rejection
/// without server row and server version protects its row. A terminal rejection describes no server state (client
/// contract, "Conflict and terminal outcomes": the local row stays), so pull, rebuild and scope cleanup leave the
/// row as the rejected write left it, the scope digest counts the server's edge digest for it, and only clearing
/// the rejection by explicit policy hands the row back to the server's state.
@Suite("Rejected-row protection")
struct RejectedRowProtectionTests {
    let fixture: SyncFixture
    let transport: CycleTransport
    let recorder = CycleRecorder()

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40)
        transport = CycleTransport(server: fixture.server)
    }

    var context: SyncContext { fixture.context(over: transport) }

    func cycle() -> SyncCycle { recorder.cycle(context) }

    /// Syncs, then edits the first product (the catalog is read-only for users) and syncs again, so the server
    /// rejects the edit with `policy_rejected`. Returns the product's record ID and the cycle's summary.
    func rejectCatalogEdit() throws -> (recordID: String, summary: SyncSummary) {
        _ = try cycle().run()
        let recordID = try #require(try firstProduct().id)
        try fixture.store.execute("UPDATE products SET title = 'edited on the device' WHERE id = ?", [
            .integer(try #require(Int64(recordID))),
        ])
        return (recordID, try cycle().run())
    }

    func firstProduct() throws -> (id: String?, title: String?) {
        try fixture.storeFixture.inspect { connection in
            let row = try connection.rows("SELECT CAST(id AS TEXT), title FROM products ORDER BY id LIMIT 1").first
            return (row?[0].textValue, row?[1].textValue)
        }
    }

    func title(_ recordID: String) throws -> String? {
        try fixture.storeFixture.inspect { connection in
            try connection.scalar("SELECT title FROM products WHERE CAST(id AS TEXT) = ?", [.text(recordID)])?.textValue
        }
    }

    func serverVersion(_ recordID: String) throws -> String? {
        try fixture.storeFixture.inspect { connection in
            try connection.scalar(
                "SELECT server_version FROM _synchro_row_versions WHERE table_name = 'products' AND record_id = ?",
                [.text(recordID)])?.textValue
        }
    }

    /// The product as the operator rewrites it on the server: every field, a new title.
    func operatorRow(_ recordID: String, title: String) -> JSONValue {
        .object(JSONObject([
            "fld_product_id": .string(recordID), "fld_product_sku": .string("SKU-PROTECTED"),
            "fld_product_title": .string(title), "fld_product_price": .string("9.99"),
            "fld_product_stock": .number(JSONNumber(5)), "fld_product_rating": .null,
            "fld_product_active": .bool(true), "fld_product_release": .null, "fld_product_attrs": .null,
            "fld_product_thumb": .null, "fld_product_category": .number(JSONNumber(1)),
            "fld_product_updated_at": .string("2026-01-03T00:00:00.000000Z"),
        ]))
    }

    @Test("pull and rebuild leave a row with a retained terminal rejection alone until the rejection is cleared")
    func terminalRejectionProtectsUntilCleared() throws {
        let (recordID, rejected) = try rejectCatalogEdit()
        #expect(rejected.mutationsRejected == 1)
        let rejection = try fixture.storeFixture.inspect { connection in
            try connection.rows("SELECT status, code, server_row_json, server_version FROM _synchro_rejected_mutations")
        }
        #expect(rejection == [[.text("rejected_terminal"), .text("policy_rejected"), .null, .null]])
        // The pull after the push verified the catalog with the server's digest for the edited row: no rebuild,
        // and the row keeps what the rejected write left.
        #expect(rejected.scopesRebuilt.isEmpty)
        #expect(rejected.scopesVerified == ["catalog", "user:alice"])
        #expect(try title(recordID) == "edited on the device")

        // A server change of the row arrives by pull: its version and provenance are recorded, the row is not
        // overwritten, and the scope still verifies.
        let before = try serverVersion(recordID)
        _ = try fixture.server.engine.operatorWrite(
            table: "tbl_products", pk: .string(recordID), row: operatorRow(recordID, title: "changed on the server"))
        let pulled = try cycle().run()
        #expect(pulled.rowsApplied == 1)
        #expect(pulled.scopesRebuilt.isEmpty && pulled.scopesVerified == ["catalog", "user:alice"])
        #expect(try title(recordID) == "edited on the device")
        #expect(try serverVersion(recordID) != before)

        // An explicit rebuild of the scope writes every other row and verifies with the row still protected.
        let rebuilt = try cycle().run(rebuilding: ["catalog"])
        #expect(rebuilt.scopesRebuilt == ["catalog"])
        let edges = try fixture.count("SELECT count(*) FROM _synchro_scope_rows WHERE scope_id = 'catalog'")
        #expect(rebuilt.rebuildRequests == max(1, Int((edges + 39) / 40)))
        #expect(try title(recordID) == "edited on the device")

        // Clearing the rejection by explicit policy ends the protection: the next pull finds the catalog digest
        // different, rebuilds that scope only, and the row is the server's again.
        #expect(try fixture.store.clearRejectedMutationRecords() == 1)
        let cleared = try cycle().run()
        #expect(cleared.scopesRebuilt == ["catalog"])
        #expect(try title(recordID) == "changed on the server")
        #expect(try StoreValidator(path: fixture.storeFixture.path).validate().findings == [])
    }

    @Test("removing the scope keeps a row with a retained terminal rejection and removes the unprotected rows")
    func terminalRejectionSurvivesScopeRemoval() throws {
        let (recordID, _) = try rejectCatalogEdit()
        #expect(try fixture.count("SELECT count(*) FROM products") > 1)
        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["catalog"]))

        let summary = try cycle().run()

        #expect(summary.scopesVerified == ["user:alice"])
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scopes WHERE scope_id = 'catalog'") == 0)
        #expect(try fixture.storeFixture.inspect { connection in
            try connection.rows("SELECT CAST(id AS TEXT), title FROM products")
        } == [[.text(recordID), .text("edited on the device")]])
        // Cleanup created no mutation: the rejected edit is the only catalog entry of the ledger.
        #expect(try fixture.store.ledger().filter { $0.tableName == "products" }.map(\.state) == [.rejected])
    }

    @Test("removing the scope keeps a row with unsealed or sealed intent, and the intent itself",
          arguments: [false, true])
    func queuedIntentSurvivesScopeRemoval(sealed: Bool) throws {
        _ = try cycle().run()
        let recordID = try #require(try firstProduct().id)
        try fixture.store.execute("UPDATE products SET title = 'queued on the device' WHERE id = ?", [
            .integer(try #require(Int64(recordID))),
        ])
        if sealed { _ = try BatchSealer(store: fixture.store).nextBatch() }
        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["catalog"]))

        // The removal arrives on a pull, before any push of the intent.
        _ = try PullApplier(context: context).pull()

        #expect(try fixture.count("SELECT count(*) FROM _synchro_scopes WHERE scope_id = 'catalog'") == 0)
        #expect(try fixture.storeFixture.inspect { connection in
            try connection.rows("SELECT CAST(id AS TEXT), title FROM products")
        } == [[.text(recordID), .text("queued on the device")]])
        #expect(try fixture.store.ledger().filter { $0.tableName == "products" }.map(\.state)
            == [sealed ? .sealed : .unsealed])
    }

    @Test("a client that knows no scope still pulls with an empty scopes map; a new assignment arrives on a pull")
    func scopelessClientPullsAndReceivesAssignment() throws {
        _ = try cycle().run()
        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["catalog", "user:alice"]))
        _ = try cycle().run()
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scopes") == 0)

        transport.reset()
        let idle = try cycle().run()
        #expect(idle.pullRequests == 1)
        let pull = try #require(transport.bodies("/sync/pull").last.flatMap {
            try? StrictJSONParser().parse($0).objectValue
        })
        #expect(pull["scopes"] == .object(JSONObject([])))

        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: ["catalog"], revoke: []))
        transport.reset()
        _ = try PullApplier(context: context).pull()
        #expect(transport.paths == ["/sync/pull"], "no reconnect")
        #expect(try fixture.count("SELECT count(*) FROM _synchro_scopes WHERE scope_id = 'catalog'") == 1)
        #expect(try cycle().run().scopesRebuilt == ["catalog"])
    }

    @Test("a schema reset keeps a row with a retained terminal rejection while it replaces synced materialization")
    func terminalRejectionSurvivesSchemaReset() throws {
        let (recordID, _) = try rejectCatalogEdit()
        try SchemaPublisher(fixture.server).publish(transition: "class_4") {
            $0.removeField("tbl_tasks", "fld_task_due")
        }
        #expect(throws: SyncCycleError.self) { try cycle().run() }

        let reset = try cycle().runSchemaReset()

        #expect(reset.scopesRebuilt == ["catalog", "user:alice"])
        #expect(try title(recordID) == "edited on the device")
        #expect(try fixture.count("SELECT count(*) FROM _synchro_rejected_mutations") == 1)
        #expect(try StoreValidator(path: fixture.storeFixture.path).validate().findings == [])
    }

    @Test("a conflict carries the server's row, so its retained record protects nothing")
    func conflictDoesNotProtect() throws {
        _ = try cycle().run()
        let recordID = try #require(try firstProduct().id)
        // A retained conflict for the row, as reconciliation records one: with the server's row and version.
        try fixture.storeFixture.inspect { connection in
            try connection.run("""
                INSERT INTO _synchro_rejected_mutations
                    (mutation_id, table_name, record_id, status, code, message, server_row_json, server_version,
                     created_at, updated_at, mutation_json, rejected_json)
                VALUES ('00000000-0000-4000-8000-00000000c0f1', 'products', ?, 'conflict', 'version_conflict', NULL,
                        '{}', 'v-conflict', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', '{}', '{}')
                """, [.text(recordID)])
        }
        _ = try fixture.server.engine.operatorWrite(
            table: "tbl_products", pk: .string(recordID), row: operatorRow(recordID, title: "changed on the server"))

        let summary = try cycle().run()

        #expect(try title(recordID) == "changed on the server")
        #expect(summary.scopesRebuilt.isEmpty && summary.scopesVerified == ["catalog", "user:alice"])
    }
}
