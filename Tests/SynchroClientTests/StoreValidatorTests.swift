import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// ``StoreValidator`` on real files synced from a loopback server: every rule is broken once on purpose, through
/// a plain SQLite connection, and must come back as exactly its typed finding.
@Suite("Store validation")
struct StoreValidatorTests {
    let fixture: SyncFixture

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40)
        _ = try CycleRecorder().cycle(fixture.context).run()
    }

    var validator: StoreValidator { StoreValidator(path: fixture.storeFixture.path) }

    @Test("a synced store has no finding, every scope verifies, and the server's checksums match")
    func syncedStoreIsValid() throws {
        let offline = try validator.validate()
        #expect(offline.findings == [])
        #expect(offline.scopes.map(\.scopeID) == ["catalog", "user:alice"])
        #expect(offline.scopes.allSatisfy { $0.digestVerified && $0.hasCursor && $0.rows > 0 && $0.server == nil })
        let online = try validator.validate(against: fixture.transport)
        #expect(online.findings == [])
        #expect(online.scopes.map(\.server) == [.matches, .matches])
    }

    /// A deliberate breakage and the findings it must produce, in check order.
    struct Breakage: Sendable, CustomTestStringConvertible {
        let name: String
        let sql: [String]
        let findings: [StoreFinding]
        var testDescription: String { name }
    }

    static let breakages: [Breakage] = [
        Breakage(
            name: "an edited synced row",
            sql: ["UPDATE notes SET title = title || '!' WHERE id = (SELECT min(id) FROM notes)"],
            findings: [
                .rowDigestMismatch(scope: "user:alice", table: "notes", rows: 1),
                .scopeDigestMismatch(scope: "user:alice"),
            ]),
        Breakage(
            name: "a deleted synced row",
            sql: ["DELETE FROM products WHERE id = (SELECT min(id) FROM products)"],
            findings: [
                .rowMissing(scope: "catalog", table: "products", rows: 1), .scopeDigestMismatch(scope: "catalog"),
            ]),
        Breakage(
            name: "a committed capture suppression",
            sql: ["UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'"],
            findings: [.captureState(rule: "sync_lock")]),
        Breakage(
            name: "a committed atomic group",
            sql: ["INSERT INTO _synchro_meta (key, value) VALUES ('atomic_group_id', 'x')"],
            findings: [.captureState(rule: "atomic_group_id")]),
        Breakage(
            name: "a cursor without its checksum",
            sql: ["UPDATE _synchro_scopes SET checksum = NULL WHERE scope_id = 'catalog'"],
            findings: [.scopeMetadata(scope: "catalog", rule: "cursor_without_checksum")]),
        Breakage(
            name: "a local checksum that is not the verified one",
            sql: ["""
                UPDATE _synchro_scopes SET local_checksum = (SELECT checksum FROM _synchro_scopes
                    WHERE scope_id = 'catalog')
                WHERE scope_id = 'user:alice'
                """],
            findings: [.scopeMetadata(scope: "user:alice", rule: "local_checksum")]),
        Breakage(
            name: "a stored checksum the rows do not produce",
            sql: ["""
                UPDATE _synchro_scopes SET checksum = (SELECT checksum FROM _synchro_scopes WHERE scope_id = 'catalog'),
                    local_checksum = (SELECT checksum FROM _synchro_scopes WHERE scope_id = 'catalog')
                WHERE scope_id = 'user:alice'
                """],
            findings: [.scopeDigestMismatch(scope: "user:alice")]),
        Breakage(
            name: "provenance of a scope the store does not have",
            sql: ["""
                UPDATE _synchro_scope_rows SET scope_id = 'ghost'
                WHERE rowid = (SELECT min(rowid) FROM _synchro_scope_rows WHERE scope_id = 'catalog')
                """],
            findings: [
                .scopeMetadata(scope: "ghost", rule: "scope_rows_without_scope"),
                .scopeDigestMismatch(scope: "catalog"),
            ]),
        Breakage(
            name: "a rebuild attempt beside an installed cursor",
            sql: ["""
                INSERT INTO _synchro_rebuild_attempts (scope_id, rebuild_id, client_generation, schema_version,
                    schema_hash, generation, cursor, page_limit)
                SELECT 'catalog', '00000000-0000-4000-8000-00000000abcd', 1, 1, 'h', 9, NULL, 40
                """],
            findings: [.scopeMetadata(scope: "catalog", rule: "rebuild_attempt_beside_cursor")]),
        Breakage(
            name: "a schema hash the manifest does not have",
            sql: ["UPDATE _synchro_meta SET value = '\(String(repeating: "a", count: 64))' WHERE key = 'schema_hash'"],
            findings: [
                .schemaMetadata(rule: "manifest_reference"),
                .scopeMetadata(scope: "catalog", rule: "provenance_without_schema"),
                .scopeMetadata(scope: "user:alice", rule: "provenance_without_schema"),
            ]),
        Breakage(
            name: "a missing schema archive row",
            sql: ["DELETE FROM _synchro_schema_archive"],
            findings: [.schemaMetadata(rule: "archive_missing")]),
        Breakage(
            name: "a generation without the bound client ID",
            sql: ["DELETE FROM _synchro_meta WHERE key = 'client_server_id'"],
            findings: [.clientMetadata(rule: "generation_without_client_id")]),
    ]

    @Test("each broken rule is exactly its typed finding", arguments: breakages)
    func breakage(_ breakage: Breakage) throws {
        // Capture suppressed, as for a server apply: an edited row must not become protected local intent.
        try fixture.storeFixture.inspect { connection in
            try connection.execute("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
            for sql in breakage.sql { try connection.execute(sql) }
            if !breakage.sql.contains(where: { $0.contains("'sync_lock'") }) {
                try connection.execute("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
            }
        }
        let before = try fixture.storeFixture.inspect(databaseFingerprint)
        let validation = try validator.validate()
        #expect(validation.findings == breakage.findings)
        #expect(!validation.isValid)
        #expect(try fixture.storeFixture.inspect(databaseFingerprint) == before, "validation only reads")
    }

    @Test("SQLite damage below the rows is an integrity_check finding")
    func integrityDamage() throws {
        // An index whose recorded definition no longer matches its entries is what integrity_check exists to find.
        try fixture.storeFixture.inspect { connection in
            try connection.execute("PRAGMA writable_schema = ON")
            try connection.execute("""
                UPDATE sqlite_schema SET sql = 'CREATE INDEX "notes_owner_updated" ON "notes" ("title", "updated_at")'
                WHERE name = 'notes_owner_updated'
                """)
        }
        let validation = try validator.validate()
        #expect(validation.findings.count == 1)
        guard case .integrityCheck(let problems)? = validation.findings.first else {
            Issue.record("expected an integrity_check finding, got \(validation.findings)")
            return
        }
        #expect(problems > 0)
    }

    @Test("a row an accepted push changed is awaiting its pull echo, not damage; the pull verifies it again")
    func acceptedPushAwaitsEcho() throws {
        try fixture.store.execute(
            "UPDATE notes SET title = 'edited' WHERE id = (SELECT min(id) FROM notes)")
        let outcome = try PushExchange(store: fixture.store, transport: fixture.transport).pushNext()
        #expect(outcome == .reconciled(.init(applied: 1)))
        let validation = try validator.validate()
        #expect(validation.findings == [])
        let alice = try #require(validation.scopes.last)
        #expect(alice.rowsAwaitingPull == 1 && !alice.digestVerified)
        #expect(try validator.validate(against: fixture.transport).scopes.map(\.server) == [.matches, .behind])

        _ = try PullApplier(context: fixture.context).pull()
        let after = try validator.validate()
        #expect(after.findings == [])
        #expect(after.scopes.allSatisfy { $0.digestVerified && $0.rowsAwaitingPull == 0 })
    }

    /// Publishes a Class 2 field addition on `tbl_notes` and runs the migrating cycle: the connect answers
    /// `replace` and the pull verifies every scope under the new schema without re-delivering the notes.
    func migrateToAddedNoteField() throws {
        try SchemaPublisher(fixture.server).publish(transition: "class_2") {
            $0.addField("tbl_notes", "fld_note_validated", type: "string")
        }
        let migration = try CycleRecorder().cycle(fixture.context).run()
        #expect(migration.scopesRebuilt == [])
        #expect(try validator.validate().scopes.allSatisfy(\.digestVerified))
    }

    /// Harness finding 1 (docs/reliability.md): the provenance digest of a note synced before the field was added
    /// is the earlier schema's; while a local edit protects the note, that digest stands for it in the scope.
    @Test("a pending edit of a row verified under an earlier schema awaits its push, not damage; the sync verifies")
    func pendingEditAfterClassTwoAddition() throws {
        try migrateToAddedNoteField()
        try fixture.store.execute("UPDATE notes SET title = 'edited' WHERE id = (SELECT min(id) FROM notes)")

        let validation = try validator.validate()
        #expect(validation.findings == [])
        #expect(validation.pendingMutations == 1)
        let alice = try #require(validation.scopes.last)
        #expect(alice.scopeID == "user:alice" && alice.digest == .awaitingPull && alice.rowsAwaitingPull == 1)
        #expect(validation.scopes.first?.digestVerified == true)

        let sync = try CycleRecorder().cycle(fixture.context).run()
        #expect(sync.scopesRebuilt == [])
        let after = try validator.validate()
        #expect(after.findings == [])
        #expect(after.scopes.allSatisfy { $0.digestVerified && $0.rowsAwaitingPull == 0 })
    }

    @Test("beside that pending edit, a damaged row verified under the earlier schema is still exactly one finding")
    func damageBesidePendingEditAfterClassTwoAddition() throws {
        try migrateToAddedNoteField()
        try fixture.store.execute("UPDATE notes SET title = 'edited' WHERE id = (SELECT min(id) FROM notes)")
        try fixture.storeFixture.inspect { connection in
            try connection.execute("UPDATE _synchro_meta SET value = '1' WHERE key = 'sync_lock'")
            try connection.execute("UPDATE notes SET title = title || '!' WHERE id = (SELECT max(id) FROM notes)")
            try connection.execute("UPDATE _synchro_meta SET value = '0' WHERE key = 'sync_lock'")
        }
        let validation = try validator.validate()
        #expect(validation.findings == [
            .rowDigestMismatch(scope: "user:alice", table: "notes", rows: 1), .scopeDigestMismatch(scope: "user:alice"),
        ])
        #expect(validation.scopes.last?.digest == .mismatch)
    }

    @Test("online: a corrupted server checksum is a finding; a store that never connected cannot be compared")
    func onlineFindings() throws {
        try fixture.server.engine.inject(.corruptChecksum(scope: "user:alice"))
        let validation = try validator.validate(against: fixture.transport)
        #expect(validation.findings == [.serverChecksumMismatch(scope: "user:alice")])
        #expect(validation.scopes.map(\.server) == [.matches, .mismatch])

        let fresh = try StoreFixture(applyDemo: false)
        let unconnected = try StoreValidator(path: fresh.path).validate(against: fixture.transport)
        #expect(unconnected.findings == [.serverComparisonFailed(rule: "not_connected")])
        #expect(try StoreValidator(path: fresh.path).validate().findings == [])
    }

    @Test("a scope the server revoked is reported unassigned, not a finding")
    func revokedScope() throws {
        try fixture.server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: ["catalog"]))
        let validation = try validator.validate(against: fixture.transport)
        #expect(validation.findings == [])
        #expect(validation.scopes.first?.server == .unassigned)
    }
}

@Suite("Explicit rebuild and cycles until current")
struct ExplicitRebuildTests {
    let fixture: SyncFixture
    let transport: CycleTransport

    init() throws {
        fixture = try SyncFixture(rows: 60, pageLimit: 40)
        transport = CycleTransport(server: fixture.server)
        _ = try CycleRecorder().cycle(context).run()
    }

    var context: SyncContext { fixture.context(over: transport) }

    func rebuildIDs() -> [String] {
        transport.bodies("/sync/rebuild").compactMap {
            (try? StrictJSONParser().parse($0))?.objectValue?["rebuild_id"]?.stringValue
        }
    }

    @Test("a named scope is rebuilt under a new rebuild ID, one request per page; the other scope is untouched")
    func namedScope() throws {
        let firstIDs = Set(rebuildIDs())
        let generation = "SELECT generation FROM _synchro_scopes WHERE scope_id = 'user:alice'"
        let aliceGeneration = try fixture.count(generation)
        let alice = try fixture.scopes().last
        transport.reset()
        let summary = try CycleRecorder().cycle(context).run(rebuilding: ["catalog"])
        #expect(summary.scopesRebuilt == ["catalog"])
        // 100 catalog rows (40 categories, 60 products) at 40 per page.
        #expect(transport.paths == ["/sync/connect", "/sync/rebuild", "/sync/rebuild", "/sync/rebuild", "/sync/pull"])
        #expect(summary.rowsApplied == 100)
        let ids = Set(rebuildIDs())
        #expect(ids.count == 1 && ids.isDisjoint(with: firstIDs))
        #expect(try fixture.count(generation) == aliceGeneration)
        #expect(try fixture.scopes().last?.checksum == alice?.checksum)
        #expect(try StoreValidator(path: fixture.storeFixture.path).validate().findings == [])
    }

    @Test("every scope without a name; an unknown scope fails before anything changes")
    func allAndUnknown() throws {
        let summary = try CycleRecorder().cycle(context).run(rebuilding: nil)
        #expect(summary.scopesRebuilt == ["catalog", "user:alice"])
        let before = try fixture.storeFixture.inspect(databaseFingerprint)
        #expect(throws: SyncCycleError.scopeNotAssigned(scope: "user:bob")) {
            try CycleRecorder().cycle(context).run(rebuilding: ["catalog", "user:bob"])
        }
        let after = try fixture.storeFixture.inspect(databaseFingerprint)
        #expect(after.filter { !$0.hasPrefix("_synchro_meta") } == before.filter { !$0.hasPrefix("_synchro_meta") })
    }

    @Test("cycles until current: a write captured during the first cycle is pushed by the second")
    func untilCurrent() throws {
        let store = fixture.store
        transport.before { path, count in
            // Another thread of the app writes while the first cycle pulls.
            if path == "/sync/pull" && count == 1 {
                try store.execute(
                    "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES ('uc-1', 'alice', 't', 0, ?)",
                    [.text("2026-01-01T00:00:00.000Z")])
            }
        }
        transport.reset()
        let cycle = CycleRecorder().cycle(context)
        let summaries = try cycle.runUntilCurrent()
        #expect(summaries.count == 2)
        #expect(summaries.map(\.mutationsAccepted) == [0, 1])
        #expect(try cycle.isCurrent())
        #expect(try fixture.count(
            "SELECT count(*) FROM _synchro_pending_changes WHERE lifecycle_state = 'accepted'") == 1)
    }

    @Test("a cycle that cannot get current fails after the bound with a typed error")
    func notCurrent() throws {
        let store = fixture.store
        transport.before { path, _ in
            if path == "/sync/pull" {
                try store.execute(
                    "INSERT INTO notes (id, owner_id, title, pinned, updated_at) VALUES (?, 'alice', 't', 0, ?)",
                    [.text(UUID().uuidString.lowercased()), .text("2026-01-01T00:00:00.000Z")])
            }
        }
        #expect(throws: SyncCycleError.notCurrent(cycles: 3)) {
            try CycleRecorder().cycle(context).runUntilCurrent(maxCycles: 3)
        }
    }
}
