import Foundation
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// `POST /operator/schema` and what clients see afterwards, over loopback (`spec/wire-protocol.md`
/// §3.3, §3.4, §7, §8, §12).
@Suite("Schema evolution")
struct SchemaEvolutionTests {
    static let scopes = ["catalog", "user:alice"]

    // MARK: - Class 2

    @Test("a class 2 field addition: connect replaces with same-position cursors; pull and rebuild serve the new field")
    func classTwoReplace() throws {
        let server = try RunningServer(rows: 30)
        let synced = try SyncedClient.make(server)
        // A change after the synced cursors: its stream entry lies across the publication.
        let writer = try PushTestClient.connect(server, clientID: "ios-writer")
        _ = try writer.createdNote("note-before", batch: 1, mutation: 1)

        var editor = try ManifestEditor.current(server)
        let v1 = editor.base
        editor.addField("tbl_notes", "fld_note_color")
        let reply = try server.publish(try editor.successor(of: v1, transition: "class_2"))
        #expect(reply.status == 200)
        #expect(reply.object["transition_class"] == .string("class_2"))
        #expect(canonical(reply.object["changes"]) == canonical(.array([
            object(["rule": .string("field_added"), "table_id": .string("tbl_notes"),
                    "field_id": .string("fld_note_color")]),
        ])))
        let v2 = try ManifestEditor.current(server).base
        #expect(v2.schemaVersion == 2 && v2.parentSchema == v1.reference)

        let connect = try synced.reconnect()
        #expect(connect.status == 200)
        #expect(connect.action == "replace")
        #expect(connect.object["schema"]?.objectValue?["hash"] == .string(v2.schemaHash))
        #expect(connect.object["affected_scopes"] == nil)
        #expect(try SchemaManifest(json: try #require(connect.object["schema_definition"])) == v2)
        #expect(connect.cursorUpdates.keys == Self.scopes)
        for scope in Self.scopes {
            let replacement = connect.cursorUpdates[scope]?.stringValue
            #expect(replacement != nil && replacement != synced.cursors[scope])
        }

        let migrated = try synced.migrated(by: connect)
        let (changes, last) = try migrated.client.pullToTerminal(from: migrated.cursors, limit: 1000)
        #expect(last["rebuild"] == .array([]))
        let note = try #require(changes.first { $0["pk"] == object(["fld_note_id": .string("note-before")]) })
        #expect(note["row"]?.objectValue?["fld_note_color"] == .null)
        _ = try DigestCheck.verifyRow(note, manifest: v2)
        for scope in Self.scopes {
            let run = try migrated.client.rebuild(scope: scope, limit: 7)
            let recomputed = try DigestCheck.scopeDigest(run.records, scope: scope, manifest: v2)
            #expect(run.checksum == recomputed)
            #expect(DigestCheck.checksum(last, scope: scope) == recomputed)
            for record in run.records where record["table"] == .string("tbl_notes") {
                #expect(record["row"]?.objectValue?["fld_note_color"] == .null)
            }
        }
    }

    @Test("after a publication, push, pull and rebuild on the old schema get 422 with current and received schema")
    func oldSchemaRequests() throws {
        let server = try RunningServer(rows: 10)
        let synced = try SyncedClient.make(server)
        let pusher = try PushTestClient.connect(server, clientID: "ios-push-old")
        var editor = try ManifestEditor.current(server)
        let v1 = editor.base
        editor.addField("tbl_tasks", "fld_task_color")
        let v2 = try server.published(try editor.successor(of: v1, transition: "class_2"))

        let pull = try synced.client.pull(synced.cursors.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        let push = try pusher.push(batch: 1, [pusher.insertNote(1, note: "n-old")])
        let rebuild = try synced.client.rebuildPage(
            scope: "catalog", rebuildID: WireClient.newRebuildID(), cursor: nil, limit: 10)
        for reply in [pull, push, rebuild] {
            #expect(reply.status == 422)
            #expect(reply.errorCode == "schema_mismatch")
            #expect(canonical(reply.errorMember("current_schema")) == canonical(v2.reference.json))
            #expect(canonical(reply.errorMember("received_schema")) == canonical(v1.reference.json))
        }

        // An old-schema cursor presented under the new schema is authentic but stale: rebuild.
        let migrated = try synced.migrated(by: try synced.reconnect())
        let stale = try migrated.client.pull([("catalog", synced.cursors["catalog"]), ("user:alice", nil)])
        #expect(stale.status == 200)
        #expect(stale.object["rebuild"] == .array([.string("catalog"), .string("user:alice")]))
    }

    @Test("a rebuild session staged under the old schema must restart under the new one")
    func inFlightRebuild() throws {
        let server = try RunningServer(rows: 30)
        let client = try WireClient.connect(server)
        let rebuildID = WireClient.newRebuildID()
        let first = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: nil, limit: 5)
        let continuation = try #require(first.object["cursor"]?.stringValue)

        var editor = try ManifestEditor.current(server)
        editor.addField("tbl_products", "fld_product_color", type: "string")
        try server.published(try editor.successor(transition: "class_2"))

        let old = try client.rebuildPage(scope: "catalog", rebuildID: rebuildID, cursor: continuation, limit: 5)
        #expect(old.status == 422)
        let migrated = try SyncedClient(client: client, cursors: [:]).migrated(by: try SyncedClient(
            client: client, cursors: [:]).reconnect())
        for cursor in [continuation, nil] {
            let restart = try migrated.client.rebuildPage(
                scope: "catalog", rebuildID: rebuildID, cursor: cursor, limit: 5)
            #expect(restart.status == 409)
            #expect(restart.errorCode == "rebuild_restart_required")
            #expect(restart.errorMember("scope_id") == .string("catalog"))
        }
        let run = try migrated.client.rebuild(scope: "catalog", limit: 100)
        let manifest = migrated.client.manifest
        #expect(run.checksum == (try DigestCheck.scopeDigest(run.records, scope: "catalog", manifest: manifest)))
    }

    @Test("a mutation authored under the old schema applies after a class 2 change; its row has the new field")
    func compatibleQueuedIntent() throws {
        let server = try RunningServer(rows: 10)
        let pusher = try PushTestClient.connect(server)
        let version = try pusher.createdNote("n-1", batch: 1, mutation: 1)
        var editor = try ManifestEditor.current(server)
        editor.addField("tbl_notes", "fld_note_color")
        let v2 = try server.published(try editor.successor(of: pusher.manifest, transition: "class_2"))

        let current = try pusher.migrated(to: v2)
        let reply = try current.push(current.body(batch: 2, [
            pusher.updateNote(2, note: "n-1", base: version),
        ]))
        #expect(reply.status == 200)
        let outcome = try #require(reply.accepted.first)
        #expect(outcome["status"] == .string("applied"))
        #expect(canonical(outcome["outcome_schema"]) == canonical(v2.reference.json))
        #expect(outcome["server_row"]?.objectValue?["fld_note_color"] == .null)
        #expect(outcome["server_row"]?.objectValue?["fld_note_title"] == .string("Renamed"))
        try expectVerifiedRow(outcome, manifest: v2)
    }

    @Test("writes captured before a publication and materialized after it are served under the new manifest")
    func pendingCaptureAcrossPublication() throws {
        let server = try RunningServer(rows: 10)
        let synced = try SyncedClient.make(server)
        let writer = try PushTestClient.connect(server, clientID: "ios-writer")
        try server.engine.inject(.pauseMaterialization)
        _ = try writer.createdNote("late", batch: 1, mutation: 1)
        var editor = try ManifestEditor.current(server)
        editor.addField("tbl_notes", "fld_note_color")
        let v2 = try server.published(try editor.successor(transition: "class_2"))
        try server.engine.inject(.resumeMaterialization)

        let migrated = try synced.migrated(by: try synced.reconnect())
        let (changes, last) = try migrated.client.pullToTerminal(from: migrated.cursors, limit: 1000)
        let note = try #require(changes.first { $0["pk"] == object(["fld_note_id": .string("late")]) })
        #expect(note["row"]?.objectValue?["fld_note_color"] == .null)
        _ = try DigestCheck.verifyRow(note, manifest: v2)
        #expect(last["checksums"]?.objectValue?.keys == Self.scopes)
    }

    // MARK: - The action matrix

    /// One publication of the matrix, applied to whatever manifest is current.
    enum Publication: Sendable, CustomStringConvertible {
        /// Class 2: a nullable field in `tbl_notes`.
        case addNoteField(String)
        /// Class 3: a non-null field with a default in `tbl_products`, affecting `catalog`.
        case defaultedCatalogField
        /// Class 3: a nullable field in `tbl_tasks`, declared to affect only bob's scope.
        case bobOnly
        /// Class 3: `tbl_notes` becomes multi-scope, affecting every per-user scope.
        case notesComposition
        /// Class 4: `fld_task_due` is removed.
        case removeTaskDue

        var description: String {
            switch self {
            case .addNoteField: "class 2"
            case .defaultedCatalogField: "class 3 catalog"
            case .bobOnly: "class 3 user:bob"
            case .notesComposition: "class 3 user:{user}"
            case .removeTaskDue: "class 4"
            }
        }

        func publish(on server: RunningServer) throws {
            var editor = try ManifestEditor.current(server)
            let parent = editor.base
            switch self {
            case .addNoteField(let field):
                editor.addField("tbl_notes", field)
                try server.published(try editor.successor(of: parent, transition: "class_2"))
            case .defaultedCatalogField:
                editor.addField("tbl_products", "fld_product_origin", type: "string", nullable: false)
                try server.published(
                    try editor.successor(of: parent, transition: "class_3"), affected: ["catalog"],
                    defaults: object(["tbl_products": object(["fld_product_origin": .string("unknown")])]))
            case .bobOnly:
                editor.addField("tbl_tasks", "fld_task_tag", type: "string")
                try server.published(try editor.successor(of: parent, transition: "class_3"), affected: ["user:bob"])
            case .notesComposition:
                editor.setTable("tbl_notes", "composition", .string("multi_scope"))
                try server.published(
                    try editor.successor(of: parent, transition: "class_3"), affected: ["user:{user}"])
            case .removeTaskDue:
                editor.removeField("tbl_tasks", "fld_task_due")
                try server.published(try editor.successor(of: parent, transition: "class_4"))
            }
        }
    }

    /// What alice's connect on the initial schema must answer after `publications`.
    struct ActionCase: Sendable, CustomTestStringConvertible {
        let publications: [Publication]
        let action: String
        var reason: String?
        var affected: [String]?
        /// Per presented scope: true for a replacement cursor, false for null; nil for an empty map.
        var replaced: [String: Bool]?

        var testDescription: String {
            publications.isEmpty ? "no publication" : publications.map(\.description).joined(separator: " → ")
        }
    }

    static let matrix: [ActionCase] = [
        ActionCase(publications: [], action: "none"),
        ActionCase(
            publications: [.addNoteField("fld_note_color")], action: "replace",
            replaced: ["catalog": true, "user:alice": true]),
        ActionCase(
            publications: [.defaultedCatalogField], action: "rebuild_local", affected: ["catalog"],
            replaced: ["catalog": false, "user:alice": true]),
        ActionCase(publications: [.bobOnly], action: "replace", replaced: ["catalog": true, "user:alice": true]),
        ActionCase(
            publications: [.notesComposition], action: "rebuild_local", affected: ["user:alice"],
            replaced: ["catalog": true, "user:alice": false]),
        ActionCase(
            publications: [.addNoteField("fld_note_color"), .defaultedCatalogField], action: "rebuild_local",
            affected: ["catalog"], replaced: ["catalog": false, "user:alice": true]),
        ActionCase(
            publications: [.defaultedCatalogField, .notesComposition], action: "rebuild_local",
            affected: ["catalog", "user:alice"], replaced: ["catalog": false, "user:alice": false]),
        ActionCase(publications: [.removeTaskDue], action: "unsupported", reason: "incompatible_schema_transition"),
        ActionCase(
            publications: [.addNoteField("fld_note_color"), .removeTaskDue], action: "unsupported",
            reason: "incompatible_schema_transition"),
        ActionCase(
            publications: [.removeTaskDue, .addNoteField("fld_note_color")], action: "unsupported",
            reason: "incompatible_schema_transition"),
    ]

    @Test("connect on a historical schema selects the action of its lineage (§3.3 rows 4–8)", arguments: matrix)
    func actionMatrix(_ row: ActionCase) throws {
        let server = try RunningServer(rows: 10)
        let synced = try SyncedClient.make(server)
        for publication in row.publications { try publication.publish(on: server) }
        let current = try ManifestEditor.current(server).base

        let reply = try synced.reconnect()
        #expect(reply.status == 200)
        #expect(reply.action == row.action)
        #expect(reply.reason == row.reason)
        #expect(reply.object["schema"]?.objectValue?["hash"] == .string(current.schemaHash))
        #expect(reply.affectedScopes == row.affected)
        let definition = reply.object["schema_definition"]
        #expect((definition != nil) == (row.action == "replace" || row.action == "rebuild_local"))
        if let definition { #expect(try SchemaManifest(json: definition) == current) }
        let updates = reply.cursorUpdates
        #expect(updates.keys == (row.replaced ?? [:]).keys.sorted())
        for (scope, replaced) in row.replaced ?? [:] {
            #expect((updates[scope]?.stringValue != nil) == replaced, "\(scope)")
        }
        // Replacement cursors resume under the current schema without a rebuild.
        guard reply.action != "unsupported", reply.action != "none" else { return }
        let migrated = try synced.migrated(by: reply)
        let pull = try migrated.client.pull(Self.scopes.map { ($0, migrated.cursors[$0]) })
        #expect(pull.status == 200)
        let rebuilt = Self.scopes.filter { !(row.replaced?[$0] ?? false) }
        #expect(pull.object["rebuild"] == .array(rebuilt.map(JSONValue.string)))
    }

    @Test("class 3 entries resolve per client: a concrete scope only for its owner, a pattern for every user")
    func affectedScopesPerClient() throws {
        let server = try RunningServer(rows: 10)
        let alice = try SyncedClient.make(server)
        let bob = try SyncedClient.make(server, user: "bob")
        try Publication.bobOnly.publish(on: server)
        #expect(try alice.reconnect().action == "replace")
        let bobReply = try bob.reconnect()
        #expect(bobReply.action == "rebuild_local")
        #expect(bobReply.affectedScopes == ["user:bob"])
        #expect(bobReply.cursorUpdates["user:bob"] == .null)
        #expect(bobReply.cursorUpdates["catalog"]?.stringValue != nil)
    }

    // MARK: - Class 3 and 4

    @Test("class 3 with a defaulted field for catalog: rebuild_local for catalog, rebuilt rows carry the default")
    func classThreeCatalog() throws {
        let server = try RunningServer(rows: 25)
        let synced = try SyncedClient.make(server)
        try Publication.defaultedCatalogField.publish(on: server)
        let v2 = try ManifestEditor.current(server).base

        let reply = try synced.reconnect()
        #expect(reply.action == "rebuild_local")
        #expect(reply.affectedScopes == ["catalog"])
        #expect(reply.cursorUpdates["catalog"] == .null)
        let migrated = try synced.migrated(by: reply)
        let run = try migrated.client.rebuild(scope: "catalog", limit: 10)
        let products = run.records.filter { $0["table"] == .string("tbl_products") }
        #expect(products.count == 25)
        #expect(products.allSatisfy { $0["row"]?.objectValue?["fld_product_origin"] == .string("unknown") })
        #expect(run.checksum == (try DigestCheck.scopeDigest(run.records, scope: "catalog", manifest: v2)))

        let pull = try migrated.client.pull([
            ("catalog", run.finalCursor), ("user:alice", migrated.cursors["user:alice"]),
        ])
        #expect(pull.status == 200)
        #expect(pull.object["rebuild"] == .array([]))
        #expect(DigestCheck.checksum(pull.object, scope: "catalog") == run.checksum)
    }

    @Test("class 4 is unsupported; a reset rebuilds all scopes; intent naming a removed field is schema_incompatible")
    func classFourAndReset() throws {
        let server = try RunningServer(rows: 10)
        let synced = try SyncedClient.make(server)
        let v1 = synced.client.manifest
        let pusher = PushTestClient(
            server: server, user: "alice", clientID: synced.client.clientID, generation: synced.client.generation,
            schema: try CanonicalJSON.string(v1.reference.json), manifest: v1,
            scopeSetVersion: synced.client.scopeSetVersion)
        let version = try pusher.createdNote("n-1", batch: 1, mutation: 1)

        var editor = try ManifestEditor.current(server)
        editor.removeField("tbl_notes", "fld_note_body")
        let v2 = try server.published(try editor.successor(of: v1, transition: "class_4"))

        let unsupported = try synced.reconnect()
        #expect(unsupported.action == "unsupported")
        #expect(unsupported.reason == "incompatible_schema_transition")
        #expect(unsupported.object["schema_definition"] == nil && unsupported.object["affected_scopes"] == nil)

        let reset = try synced.reconnect(reset: true)
        #expect(reset.action == "rebuild_local")
        #expect(reset.affectedScopes == Self.scopes)
        #expect(reset.cursorUpdates == JSONObject(["catalog": .null, "user:alice": .null]))
        let migrated = try synced.migrated(by: reset)

        let current = try pusher.migrated(to: v2)
        let reply = try current.push(current.body(batch: 2, [
            pusher.updateNote(2, note: "n-1", base: version, columns: #"{"fld_note_body":"gone"}"#),
            pusher.updateNote(3, note: "n-1", base: version, columns: #"{"fld_note_title":"Kept"}"#),
        ]))
        #expect(reply.status == 200)
        let rejected = try #require(reply.rejected.first)
        #expect(rejected["code"] == .string("schema_incompatible"))
        #expect(rejected["incompatible_field_ids"] == .array([.string("fld_note_body")]))
        #expect(canonical(rejected["authored_schema"]) == canonical(v1.reference.json))
        #expect(canonical(rejected["current_schema"]) == canonical(v2.reference.json))
        let applied = try #require(reply.accepted.first)
        #expect(applied["status"] == .string("applied"))
        #expect(applied["server_row"]?.objectValue?["fld_note_body"] == nil)
        try expectVerifiedRow(applied, manifest: v2)

        let run = try migrated.client.rebuild(scope: "user:alice", limit: 20)
        #expect(run.records.allSatisfy { $0["row"]?.objectValue?["fld_note_body"] == nil })
        #expect(run.checksum == (try DigestCheck.scopeDigest(run.records, scope: "user:alice", manifest: v2)))
    }

    @Test("a class 4 table removal skips that table's pending captures instead of blocking its author")
    func removedTableWithPendingCapture() throws {
        let server = try RunningServer(rows: 10)
        let writer = try SyncedClient.make(server)
        let v1 = writer.client.manifest
        let pusher = PushTestClient(
            server: server, user: "alice", clientID: writer.client.clientID, generation: writer.client.generation,
            schema: try CanonicalJSON.string(v1.reference.json), manifest: v1,
            scopeSetVersion: writer.client.scopeSetVersion)
        try server.engine.inject(.pauseMaterialization)
        _ = try pusher.createdTask("t-pending", batch: 1, mutation: 1)
        var editor = try ManifestEditor.current(server)
        editor.removeTable("tbl_tasks")
        let v2 = try server.published(try editor.successor(of: v1, transition: "class_4"))
        try server.engine.inject(.resumeMaterialization)

        let migrated = try writer.migrated(by: try writer.reconnect(reset: true))
        let run = try migrated.client.rebuild(scope: "user:alice", limit: 100)
        #expect(run.records.allSatisfy { $0["table"] == .string("tbl_notes") })
        #expect(run.checksum == (try DigestCheck.scopeDigest(run.records, scope: "user:alice", manifest: v2)))
        let pull = try migrated.client.pull([("user:alice", run.finalCursor)])
        #expect(pull.status == 200)
    }

    @Test("an explicit reset, on the current schema or from an unknown lineage, rebuilds every assigned scope")
    func explicitReset() throws {
        let server = try RunningServer(rows: 10)
        let synced = try SyncedClient.make(server)
        let unknown = object([
            "version": .number(JSONNumber(9)), "hash": .string(String(repeating: "cd", count: 32)),
        ])
        for schema in [synced.client.schema, unknown] {
            let reply = try synced.reconnect(reset: true, schema: schema)
            #expect(reply.status == 200)
            #expect(reply.action == "rebuild_local")
            #expect(reply.affectedScopes == Self.scopes)
            #expect(reply.cursorUpdates == JSONObject(["catalog": .null, "user:alice": .null]))
            #expect(reply.object["schema_definition"] != nil)
        }
        // Row 10: no assigned scope left → replace, never an empty rebuild_local.
        try server.engine.inject(.reassignScopes(user: "alice", grant: [], revoke: Self.scopes))
        let empty = try synced.reconnect(reset: true)
        #expect(empty.action == "replace")
        #expect(empty.object["affected_scopes"] == nil)
        #expect(empty.object["scopes"]?.objectValue?["remove"] == .array(Self.scopes.map(JSONValue.string)))
    }

    // MARK: - Refused publications

    enum InvalidPublication: CaseIterable, Sendable, CustomTestStringConvertible {
        case wrongParent, versionGap, hashMismatch, classTwoRemovesField, classTwoWithDefault
        case classThreeWithoutScopes, classTwoWithScopes, unknownScope, incompleteScopes, classThreeRemovesField
        case classFourAdditive, noChange, floor, missingDefault, invalidDefault, defaultForExistingField
        case keyChange, ownerField, initial, unknownMember

        var testDescription: String { "\(self): \(rule)" }

        /// The rule the refusal names.
        var rule: String {
            switch self {
            case .wrongParent: "parent_not_current"
            case .versionGap: "version_not_next"
            case .hashMismatch: "hash_mismatch"
            case .classTwoRemovesField: "class_2_not_compatible"
            case .classTwoWithDefault: "class_2_not_compatible"
            case .classThreeWithoutScopes: "affected_scopes_required"
            case .classTwoWithScopes: "affected_scopes_not_allowed"
            case .unknownScope: "unknown_affected_scope"
            case .incompleteScopes: "affected_scopes_incomplete"
            case .classThreeRemovesField: "class_3_incompatible_change"
            case .classFourAdditive: "class_4_without_incompatible_change"
            case .noChange: "no_client_visible_change"
            case .floor: "compatibility_floor_inconsistent"
            case .missingDefault: "missing_default"
            case .invalidDefault: "invalid_default"
            case .defaultForExistingField: "default_for_existing_field"
            case .keyChange: "key_changed_in_place"
            case .ownerField: "scope_rule_field_changed"
            case .initial: "initial_not_publishable"
            case .unknownMember: "unknown_member"
            }
        }

        /// The request body, built from the current (initial) manifest.
        func body(_ editor: ManifestEditor) throws -> JSONValue {
            var editor = editor
            let parent = editor.base
            var transition = "class_2"
            var affected: [String]?
            var defaults: JSONValue?
            var version: Int64?
            var floor: Int64?
            var parentReference: JSONValue?
            var hash: String?
            switch self {
            case .wrongParent:
                editor.addField("tbl_notes", "fld_note_color")
                parentReference = object([
                    "version": .number(JSONNumber(1)), "hash": .string(String(repeating: "ab", count: 32)),
                ])
            case .versionGap:
                editor.addField("tbl_notes", "fld_note_color")
                version = 3
            case .hashMismatch:
                editor.addField("tbl_notes", "fld_note_color")
                hash = String(repeating: "0", count: 64)
            case .classTwoRemovesField:
                editor.removeField("tbl_notes", "fld_note_body")
            case .classTwoWithDefault:
                editor.addField("tbl_notes", "fld_note_color")
                defaults = object(["tbl_notes": object(["fld_note_color": .number(JSONNumber(1))])])
            case .classThreeWithoutScopes:
                editor.addField("tbl_notes", "fld_note_color")
                transition = "class_3"
            case .classTwoWithScopes:
                editor.addField("tbl_notes", "fld_note_color")
                affected = ["catalog"]
            case .unknownScope:
                editor.addField("tbl_notes", "fld_note_color")
                (transition, affected) = ("class_3", ["region:mars"])
            case .incompleteScopes:
                editor.addField("tbl_products", "fld_product_origin", type: "string", nullable: false)
                (transition, affected) = ("class_3", ["user:{user}"])
                defaults = object(["tbl_products": object(["fld_product_origin": .string("unknown")])])
            case .classThreeRemovesField:
                editor.removeField("tbl_notes", "fld_note_body")
                (transition, affected) = ("class_3", ["user:{user}"])
            case .classFourAdditive:
                editor.addField("tbl_notes", "fld_note_color")
                transition = "class_4"
            case .noChange:
                break
            case .floor:
                editor.addField("tbl_notes", "fld_note_color")
                floor = 2
            case .missingDefault:
                editor.addField("tbl_products", "fld_product_origin", type: "string", nullable: false)
                (transition, affected) = ("class_3", ["catalog"])
            case .invalidDefault:
                editor.addField("tbl_products", "fld_product_origin", type: "string", nullable: false)
                (transition, affected) = ("class_3", ["catalog"])
                defaults = object(["tbl_products": object(["fld_product_origin": .number(JSONNumber(7))])])
            case .defaultForExistingField:
                editor.addField("tbl_products", "fld_product_origin", type: "string")
                (transition, affected) = ("class_3", ["catalog"])
                defaults = object(["tbl_products": object(["fld_product_title": .string("x")])])
            case .keyChange:
                editor.setField("tbl_categories", "fld_category_id", "type", .string("int64"))
                transition = "class_4"
            case .ownerField:
                editor.setField("tbl_tasks", "fld_task_owner", "nullable", .bool(true))
            case .initial:
                editor.addField("tbl_notes", "fld_note_color")
                (transition, parentReference) = ("initial", .null)
                floor = 2
            case .unknownMember:
                editor.addField("tbl_notes", "fld_note_color")
                let manifest = try editor.successor(of: parent, transition: "class_2")
                return object(["manifest": manifest, "extra": .bool(true)])
            }
            let manifest = try editor.successor(
                of: parent, transition: transition, version: version, floor: floor, parentReference: parentReference,
                hash: hash)
            var members = [JSONMember("manifest", manifest)]
            if let affected { members.append(JSONMember("affected_scopes", .array(affected.map(JSONValue.string)))) }
            if let defaults { members.append(JSONMember("defaults", defaults)) }
            return .object(JSONObject(members))
        }
    }

    @Test(
        "an inconsistent publication gets 400 naming its rule and changes nothing",
        arguments: InvalidPublication.allCases)
    func refusedPublication(_ publication: InvalidPublication) throws {
        let server = try RunningServer(rows: 5)
        let editor = try ManifestEditor.current(server)
        let reply = try server.publish(body: try publication.body(editor))
        #expect(reply.status == 400)
        #expect(reply.errorCode == "invalid_request")
        #expect(reply.rule == publication.rule)
        #expect(try ManifestEditor.current(server).base == editor.base)
        let client = try WireClient.connect(server)
        #expect(client.schemaHash == editor.base.schemaHash)
    }

    @Test("a retired field ID never comes back in a later manifest")
    func retiredFieldID() throws {
        let server = try RunningServer(rows: 5)
        try Publication.removeTaskDue.publish(on: server)
        var editor = try ManifestEditor.current(server)
        editor.addField("tbl_tasks", "fld_task_due", type: "date")
        let reply = try server.publish(try editor.successor(transition: "class_2"))
        #expect(reply.status == 400)
        #expect(reply.rule == "retired_id_reused")
        #expect(reply.errorMember("field_id") == .string("fld_task_due"))
    }

    @Test("the same publication again returns its first answer; another request naming the current manifest is refused")
    func replayedPublication() throws {
        let server = try RunningServer(rows: 5)
        var editor = try ManifestEditor.current(server)
        editor.addField("tbl_notes", "fld_note_color")
        let manifest = try editor.successor(transition: "class_2")
        let first = try server.publish(manifest)
        let again = try server.publish(manifest)
        #expect(first.status == 200 && again.status == 200)
        #expect(first.body == again.body)
        let other = try server.publish(manifest, defaults: object([:]))
        #expect(other.status == 400)
        #expect(other.rule == "schema_reused")
        #expect(try ManifestEditor.current(server).base.schemaVersion == 2)
    }

    @Test("the operator route needs the operator credential and a JSON body")
    func operatorGate() throws {
        let server = try RunningServer(rows: 5)
        var editor = try ManifestEditor.current(server)
        editor.addField("tbl_notes", "fld_note_color")
        let body = try CanonicalJSON.encode(object([
            "manifest": try editor.successor(transition: "class_2"),
        ]))
        let json = ("Content-Type", "application/json")
        let credentials = [
            [json], [("Authorization", "Bearer wrong"), json], [("Authorization", "Bearer secret-alice"), json],
        ]
        for headers in credentials {
            let reply = try server.send("POST", "/operator/schema", body: body, headers: headers)
            #expect(reply.status == 401)
            #expect(reply.errorCode == "auth_required")
        }
        let text = try server.send("POST", "/operator/schema", body: body, headers: [
            ("Authorization", "Bearer \(RunningServer.operatorToken)"), ("Content-Type", "text/plain"),
        ])
        #expect(text.status == 400)
        let get = try server.send("GET", "/operator/schema", body: [], headers: [])
        #expect(get.status == 405)
        #expect(try ManifestEditor.current(server).base.schemaVersion == 1)
    }
}

extension PushTestClient {
    /// The same client after it migrated to `manifest` (its envelope schema is then current).
    func migrated(to manifest: SchemaManifest) throws -> PushTestClient {
        PushTestClient(
            server: server, user: user, clientID: clientID, generation: generation,
            schema: try CanonicalJSON.string(manifest.reference.json), manifest: manifest,
            scopeSetVersion: scopeSetVersion)
    }
}
