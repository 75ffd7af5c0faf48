import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `POST /sync/push` driven over loopback with raw JSON (`spec/wire-protocol.md` §4, §8.4).
@Suite("Push endpoint")
struct PushEndpointTests {
    // MARK: - Applied writes

    @Test("an applied insert returns the complete server row, a new version and a verified checksum")
    func insertApplied() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let reply = try client.push(batch: 1, [client.insertNote(1, note: "n-1")])
        #expect(reply.status == 200)
        #expect(memberNames(reply.object) == ["batch_id", "server_time", "accepted", "rejected"])
        #expect(reply.object["batch_id"] == .string(uuid(1)))
        #expect(reply.rejected.isEmpty)
        let outcome = try #require(reply.accepted.first)
        #expect(memberNames(outcome) == outcomeHeader.union(["server_row", "row_checksum", "server_version"]))
        #expect(outcome["status"] == .string("applied"))
        #expect(outcome["mutation_id"] == .string(uuid(1)))
        #expect(outcome["table"] == .string("tbl_notes"))
        #expect(outcome["pk"] == .object(JSONObject([JSONMember("fld_note_id", .string("n-1"))])))
        #expect(outcome["outcome_schema"] == client.schemaReference)
        let row = try #require(outcome["server_row"]?.objectValue)
        let fields = try #require(client.manifest.table(id: "tbl_notes")).fields.map(\.fieldID)
        #expect(Set(row.keys) == Set(fields) && row.count == fields.count)
        #expect(row["fld_note_id"] == .string("n-1"))
        #expect(row["fld_note_owner"] == .string("alice"))
        #expect(row["fld_note_title"] == .string("Buy milk"))
        #expect(row["fld_note_body"] == .null)
        #expect(row["fld_note_score"] == .null)
        #expect(row["fld_note_deleted_at"] == .null)
        // Server-set lifecycle time is the request time, the response's server_time.
        #expect(row["fld_note_updated_at"] == reply.object["server_time"])
        #expect(WireFormats.isTimestamp(reply.object["server_time"]?.stringValue ?? ""))
        try expectVerifiedRow(outcome, manifest: client.manifest)
    }

    @Test("an applied update patches only authored fields, sets updated_at and returns a new version")
    func updateApplied() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let created = try client.createdNote("n-1", batch: 1, mutation: 1)
        server.clock.advance(microseconds: 1_500_000)
        let reply = try client.push(batch: 2, [client.updateNote(
            2, note: "n-1", base: created, columns: #"{"fld_note_body":"oat milk","fld_note_score":"12.5"}"#)])
        let outcome = try #require(reply.accepted.first, "\(reply.text)")
        #expect(outcome["status"] == .string("applied"))
        let version = try #require(outcome["server_version"]?.stringValue)
        #expect(version != created)
        let row = try #require(outcome["server_row"]?.objectValue)
        #expect(row["fld_note_body"] == .string("oat milk"))
        #expect(row["fld_note_score"] == .string("12.5"))
        #expect(row["fld_note_title"] == .string("Buy milk"))
        #expect(row["fld_note_pinned"] == .bool(false))
        #expect(row["fld_note_updated_at"] == reply.object["server_time"])
        try expectVerifiedRow(outcome, manifest: client.manifest)
    }

    @Test("a delete on a table with deleted_at leaves a source tombstone reported with its row and checksum")
    func deleteLeavesTombstone() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let created = try client.createdNote("n-1", batch: 1, mutation: 1)
        let reply = try client.push(batch: 2, [client.deleteNote(2, note: "n-1", base: created)])
        let outcome = try #require(reply.accepted.first, "\(reply.text)")
        #expect(memberNames(outcome) == outcomeHeader.union(["server_row", "row_checksum", "server_version"]))
        let row = try #require(outcome["server_row"]?.objectValue)
        #expect(row["fld_note_deleted_at"] == reply.object["server_time"])
        #expect(row["fld_note_title"] == .string("Buy milk"))
        try expectVerifiedRow(outcome, manifest: client.manifest)
    }

    @Test("a delete on a table without deleted_at leaves a fence: new version, no row, no checksum")
    func deleteLeavesFence() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let created = try client.createdTask("t-1", batch: 1, mutation: 1)
        let reply = try client.push(batch: 2, [client.deleteTask(2, task: "t-1", base: created)])
        let outcome = try #require(reply.accepted.first, "\(reply.text)")
        #expect(memberNames(outcome) == outcomeHeader.union(["server_version"]))
        #expect(outcome["server_version"] != .string(created))
    }

    @Test("a non-atomic batch partitions outcomes into accepted and rejected, each in request order")
    func partitionKeepsRequestOrder() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let reply = try client.push(batch: 1, [
            client.updateNote(1, note: "absent", base: "v-none"),
            client.insertNote(2, note: "n-2"),
            client.insertNote(3, note: "n-3", owner: "bob"),
            client.insertNote(4, note: "n-4"),
        ])
        #expect(reply.status == 200)
        #expect(reply.accepted.map { $0["mutation_id"] } == [.string(uuid(2)), .string(uuid(4))])
        #expect(reply.rejected.map { $0["mutation_id"] } == [.string(uuid(1)), .string(uuid(3))])
        #expect(reply.rejected.map { $0["code"] } == [.string("row_not_found"), .string("policy_rejected")])
    }

    // MARK: - Row-state matrix

    /// The state the target row is put in before the mutation under test.
    enum Existing: String, Sendable {
        case absent, live, tombstone, fence
    }

    struct MatrixCase: Sendable, CustomTestStringConvertible {
        let existing: Existing
        let op: String
        let staleBase: Bool
        /// `applied` or the conflict code.
        let expected: String
        /// Which of server_row/row_checksum/server_version the outcome carries.
        let state: Set<String>

        var testDescription: String {
            "\(existing.rawValue) row, \(op)\(staleBase ? " with a stale base" : "") → \(expected)"
        }
    }

    static let rowState: Set<String> = ["server_row", "row_checksum", "server_version"]
    static let versionOnly: Set<String> = ["server_version"]

    static let matrix: [MatrixCase] = [
        MatrixCase(existing: .absent, op: "insert", staleBase: false, expected: "applied", state: rowState),
        MatrixCase(existing: .absent, op: "update", staleBase: false, expected: "row_not_found", state: []),
        MatrixCase(existing: .absent, op: "delete", staleBase: false, expected: "row_not_found", state: []),
        MatrixCase(existing: .live, op: "insert", staleBase: false, expected: "row_already_exists", state: rowState),
        MatrixCase(existing: .live, op: "update", staleBase: false, expected: "applied", state: rowState),
        MatrixCase(existing: .live, op: "delete", staleBase: false, expected: "applied", state: rowState),
        MatrixCase(existing: .live, op: "update", staleBase: true, expected: "version_conflict", state: rowState),
        MatrixCase(existing: .live, op: "delete", staleBase: true, expected: "version_conflict", state: rowState),
        MatrixCase(existing: .tombstone, op: "insert", staleBase: false, expected: "row_deleted", state: rowState),
        MatrixCase(existing: .tombstone, op: "update", staleBase: false, expected: "row_deleted", state: rowState),
        MatrixCase(existing: .tombstone, op: "update", staleBase: true, expected: "row_deleted", state: rowState),
        MatrixCase(existing: .tombstone, op: "delete", staleBase: false, expected: "row_deleted", state: rowState),
        MatrixCase(existing: .fence, op: "insert", staleBase: false, expected: "row_deleted", state: versionOnly),
        MatrixCase(existing: .fence, op: "update", staleBase: false, expected: "row_deleted", state: versionOnly),
        MatrixCase(existing: .fence, op: "delete", staleBase: true, expected: "row_deleted", state: versionOnly),
    ]

    @Test("the row-state matrix: absent, live and deleted rows against insert, update and delete", arguments: matrix)
    func rowStateMatrix(_ testCase: MatrixCase) throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let onTasks = testCase.existing == .fence
        var current: String?
        switch testCase.existing {
        case .absent:
            break
        case .live:
            current = try client.createdNote("r-1", batch: 1, mutation: 1)
        case .tombstone:
            let created = try client.createdNote("r-1", batch: 1, mutation: 1)
            current = try client.push(batch: 2, [client.deleteNote(2, note: "r-1", base: created)])
                .accepted.first?["server_version"]?.stringValue
        case .fence:
            let created = try client.createdTask("r-1", batch: 1, mutation: 1)
            current = try client.push(batch: 2, [client.deleteTask(2, task: "r-1", base: created)])
                .accepted.first?["server_version"]?.stringValue
        }
        if testCase.existing != .absent { try #require(current != nil) }
        let base = testCase.staleBase || current == nil ? "v-stale" : current!
        let mutation: String
        switch (testCase.op, onTasks) {
        case ("insert", false): mutation = client.insertNote(9, note: "r-1")
        case ("update", false): mutation = client.updateNote(9, note: "r-1", base: base)
        case ("delete", false): mutation = client.deleteNote(9, note: "r-1", base: base)
        case ("insert", true): mutation = client.insertTask(9, task: "r-1")
        case ("update", true): mutation = client.updateTask(9, task: "r-1", base: base)
        default: mutation = client.deleteTask(9, task: "r-1", base: base)
        }

        let reply = try client.push(batch: 3, [mutation])
        #expect(reply.status == 200)
        let outcome = try #require(reply.outcomes.first, "\(reply.text)")
        if testCase.expected == "applied" {
            #expect(reply.accepted.count == 1)
            #expect(outcome["status"] == .string("applied"))
            #expect(memberNames(outcome) == outcomeHeader.union(testCase.state))
            #expect(outcome["server_version"] != current.map(JSONValue.string))
        } else {
            #expect(reply.rejected.count == 1)
            #expect(outcome["status"] == .string("conflict"))
            #expect(outcome["code"] == .string(testCase.expected))
            #expect(memberNames(outcome) == outcomeHeader.union(["code", "message"]).union(testCase.state))
            // A conflict reports the current state: the version the row has now.
            if let current, testCase.state.contains("server_version") {
                #expect(outcome["server_version"] == .string(current))
            }
        }
        if testCase.state.contains("server_row") { try expectVerifiedRow(outcome, manifest: client.manifest) }
        if testCase.existing == .tombstone {
            #expect(outcome["server_row"]?.objectValue?["fld_note_deleted_at"] != .null)
        }
    }

    // MARK: - Terminal outcomes

    enum TerminalCase: String, CaseIterable, Sendable {
        case unknownAuthoredSchema, removedField, deleteUnderUnknownSchema, incompatibleBeforePolicy
        case unknownTable
        case sharedTableReadOnly, foreignOwner, missingOwner, ownerChange, policyBeforeValidation
        case notWritableField, keyInColumns, wrongType, nullIntoNonNullable, missingRequiredField, decimalScale
        case nonCanonicalValue

        var code: String {
            switch self {
            case .unknownAuthoredSchema, .removedField, .deleteUnderUnknownSchema, .incompatibleBeforePolicy:
                "schema_incompatible"
            case .unknownTable: "table_not_synced"
            case .sharedTableReadOnly, .foreignOwner, .missingOwner, .ownerChange, .policyBeforeValidation:
                "policy_rejected"
            default: "validation_failed"
            }
        }

        /// `incompatible_field_ids` of a `schema_incompatible` outcome.
        var incompatibleFieldIDs: [String] {
            switch self {
            case .unknownAuthoredSchema: ["fld_note_owner", "fld_note_pinned", "fld_note_title"]
            case .removedField: ["fld_note_color"]
            case .incompatibleBeforePolicy: ["fld_category_color"]
            default: []
            }
        }

        static let strangerSchema = #"{"version":9,"hash":"\#(String(repeating: "ab", count: 32))"}"#

        func mutation(_ client: PushTestClient) -> String {
            let note = client.notePK("t-1")
            switch self {
            case .unknownAuthoredSchema:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":"x","fld_note_owner":"alice","fld_note_pinned":false}
                    """, authored: Self.strangerSchema)
            case .removedField:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":"x","fld_note_owner":"alice","fld_note_pinned":false,"fld_note_color":3}
                    """)
            case .deleteUnderUnknownSchema:
                return client.mutation(1, "delete", pk: note, base: "v1", authored: Self.strangerSchema)
            case .incompatibleBeforePolicy:
                return client.mutation(1, "update", table: "tbl_categories", pk: #"{"fld_category_id":1}"#,
                    base: "v1", columns: #"{"fld_category_color":"red"}"#)
            case .unknownTable:
                return client.mutation(1, "insert", table: "tbl_unknown", pk: #"{"fld_id":"x"}"#, columns: "{}")
            case .sharedTableReadOnly:
                return client.mutation(1, "update", table: "tbl_categories", pk: #"{"fld_category_id":1}"#,
                    base: "v1", columns: #"{"fld_category_name":"Tools"}"#)
            case .foreignOwner:
                return client.insertNote(1, note: "t-1", owner: "bob")
            case .missingOwner:
                return client.mutation(
                    1, "insert", pk: note, columns: #"{"fld_note_title":"x","fld_note_pinned":false}"#)
            case .ownerChange:
                return client.updateNote(1, note: "t-1", base: "v1", columns: #"{"fld_note_owner":"bob"}"#)
            case .policyBeforeValidation:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":"x","fld_note_owner":"bob","fld_note_pinned":"yes"}
                    """)
            case .notWritableField:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":"x","fld_note_owner":"alice","fld_note_pinned":false,\
                    "fld_note_updated_at":"2026-01-01T00:00:00.000000Z"}
                    """)
            case .keyInColumns:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_id":"t-1","fld_note_title":"x","fld_note_owner":"alice","fld_note_pinned":false}
                    """)
            case .wrongType:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":"x","fld_note_owner":"alice","fld_note_pinned":"yes"}
                    """)
            case .nullIntoNonNullable:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":null,"fld_note_owner":"alice","fld_note_pinned":false}
                    """)
            case .missingRequiredField:
                return client.mutation(
                    1, "insert", pk: note, columns: #"{"fld_note_owner":"alice","fld_note_title":"x"}"#)
            case .decimalScale:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":"x","fld_note_owner":"alice","fld_note_pinned":false,"fld_note_score":"1.234"}
                    """)
            case .nonCanonicalValue:
                return client.mutation(1, "insert", pk: note, columns: """
                    {"fld_note_title":"x","fld_note_owner":"alice","fld_note_pinned":false,"fld_note_score":"1.50"}
                    """)
            }
        }
    }

    @Test("terminal codes follow the classification order and carry no row, checksum or version",
          arguments: TerminalCase.allCases)
    func terminalOutcome(_ testCase: TerminalCase) throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let reply = try client.push(batch: 1, [testCase.mutation(client)])
        #expect(reply.status == 200)
        #expect(reply.accepted.isEmpty)
        let outcome = try #require(reply.rejected.first, "\(reply.text)")
        #expect(outcome["status"] == .string("rejected_terminal"))
        #expect(outcome["code"] == .string(testCase.code))
        #expect(outcome["outcome_schema"] == client.schemaReference)
        if testCase.code == "schema_incompatible" {
            #expect(memberNames(outcome) == outcomeHeader.union([
                "code", "message", "retryable", "authored_schema", "current_schema", "incompatible_field_ids",
            ]))
            #expect(outcome["retryable"] == .bool(false))
            #expect(outcome["current_schema"] == client.schemaReference)
            #expect(outcome["incompatible_field_ids"] == .array(testCase.incompatibleFieldIDs.map(JSONValue.string)))
            let authored = try StrictJSONParser().parse(Array(testCase.mutation(client).utf8))
                .objectValue?["authored_schema"]
            #expect(try SchemaReference(json: try #require(outcome["authored_schema"]))
                == SchemaReference(json: try #require(authored)))
        } else {
            #expect(memberNames(outcome) == outcomeHeader.union(["code", "message"]))
        }
        // Nothing was written: the same key is still free for a valid insert.
        let later = try client.push(batch: 2, [client.insertNote(2, note: "t-1")])
        #expect(later.accepted.first?["status"] == .string("applied"), "\(later.text)")
    }

    @Test("another user's live row is invisible: every operation on it is policy_rejected without row data")
    func foreignRowIsHidden() throws {
        let server = try RunningServer()
        let bob = try PushTestClient.connect(server, user: "bob", clientID: "ios-bob")
        let version = try bob.createdNote("shared-key", batch: 1, mutation: 1)
        let alice = try PushTestClient.connect(server)
        let reply = try alice.push(batch: 1, [
            alice.insertNote(1, note: "shared-key"),
            alice.updateNote(2, note: "shared-key", base: version, columns: #"{"fld_note_owner":"alice"}"#),
            alice.deleteNote(3, note: "shared-key", base: version),
        ])
        #expect(reply.rejected.count == 3, "\(reply.text)")
        for outcome in reply.rejected {
            #expect(outcome["code"] == .string("policy_rejected"))
            #expect(memberNames(outcome) == outcomeHeader.union(["code", "message"]))
        }
        // Bob's row is untouched: his compare-and-swap on the same version still succeeds.
        let check = try bob.push(batch: 2, [bob.updateNote(2, note: "shared-key", base: version)])
        #expect(check.accepted.first?["status"] == .string("applied"), "\(check.text)")
    }

    // MARK: - Whole-request 400s

    static let structuralCases: [(name: String, rule: String)] = [
        ("insert with base_version", "base_version_forbidden"),
        ("update without base_version", "missing_base_version"),
        ("delete with columns", "columns_forbidden"),
        ("update with empty columns", "empty_update_columns"),
        ("insert without columns", "missing_columns"),
        ("null base_version", "invalid_base_version"),
        ("upsert operation", "invalid_operation"),
        ("pk with two members", "invalid_pk"),
        ("pk naming another field", "invalid_pk"),
        ("pk of the wrong type", "invalid_pk"),
        ("null pk", "null_pk"),
        ("duplicate mutation_id", "duplicate_mutation_id"),
        ("atomic false", "invalid_atomic"),
        ("atomic batch addressing one row twice", "duplicate_atomic_row"),
        ("unknown mutation member", "unknown_member"),
        ("upper-case mutation_id", "invalid_mutation_id"),
        ("fresh-client sentinel as schema", "invalid_schema_reference"),
        ("duplicate column member", "duplicate_member"),
        ("no mutations", "no_mutations"),
    ]

    static func structuralBody(_ name: String, _ client: PushTestClient) -> String {
        let note = client.notePK("p-1")
        let insert = client.insertNote(1, note: "p-1")
        switch name {
        case "insert with base_version":
            return client.body(batch: 1, [client.mutation(1, "insert", pk: note, base: "v1", columns: "{}")])
        case "update without base_version":
            return client.body(batch: 1, [client.mutation(1, "update", pk: note, columns: #"{"fld_note_title":"x"}"#)])
        case "delete with columns":
            return client.body(batch: 1, [client.mutation(1, "delete", pk: note, base: "v1", columns: "{}")])
        case "update with empty columns":
            return client.body(batch: 1, [client.mutation(1, "update", pk: note, base: "v1", columns: "{}")])
        case "insert without columns":
            return client.body(batch: 1, [client.mutation(1, "insert", pk: note)])
        case "null base_version":
            return client.body(batch: 1, [client.deleteNote(1, note: "p-1", base: "v1")
                .replacingOccurrences(of: #""v1""#, with: "null")])
        case "upsert operation":
            return client.body(batch: 1, [client.mutation(1, "upsert", pk: note, columns: "{}")])
        case "pk with two members":
            return client.body(batch: 1, [
                client.mutation(1, "delete", pk: #"{"fld_note_id":"p-1","x":1}"#, base: "v1"),
            ])
        case "pk naming another field":
            return client.body(batch: 1, [client.mutation(1, "delete", pk: #"{"fld_task_id":"p-1"}"#, base: "v1")])
        case "pk of the wrong type":
            return client.body(batch: 1, [client.mutation(1, "delete", pk: #"{"fld_note_id":5}"#, base: "v1")])
        case "null pk":
            return client.body(batch: 1, [client.mutation(1, "delete", pk: #"{"fld_note_id":null}"#, base: "v1")])
        case "duplicate mutation_id":
            return client.body(batch: 1, [insert, client.insertNote(1, note: "p-2")])
        case "atomic false":
            return client.body(batch: 1, [insert])
                .replacingOccurrences(of: #""mutations""#, with: #""atomic":false,"mutations""#)
        case "atomic batch addressing one row twice":
            return client.body(batch: 1, [insert, client.deleteNote(2, note: "p-1", base: "v1")], atomic: true)
        case "unknown mutation member":
            return client.body(batch: 1, [
                insert.replacingOccurrences(of: #""op""#, with: #""depends_on_mutation_id":null,"op""#),
            ])
        case "upper-case mutation_id":
            return client.body(batch: 1, [insert.replacingOccurrences(of: "8e4d", with: "8E4D")])
        case "fresh-client sentinel as schema":
            return client.body(batch: 1, [insert], schema: #"{"version":0,"hash":""}"#)
        case "duplicate column member":
            return client.body(batch: 1, [insert.replacingOccurrences(
                of: #""fld_note_pinned":false"#, with: #""fld_note_pinned":false,"fld_note_pinned":true"#)])
        default:
            return client.body(batch: 1, [])
        }
    }

    @Test("structural and presence-matrix violations are 400 invalid_request naming the rule, with nothing changed",
          arguments: structuralCases.map(\.name))
    func structuralViolation(_ name: String) throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let rule = try #require(Self.structuralCases.first { $0.name == name }?.rule)
        let reply = try client.push(Self.structuralBody(name, client))
        #expect(reply.status == 400)
        #expect(reply.errorCode == "invalid_request")
        #expect(reply.error?["retryable"] == .bool(false))
        #expect(reply.error?["message"]?.stringValue?.contains(rule) == true, "\(reply.text)")
        #expect(reply.object["accepted"] == nil)
        // No ledger and no row: the same batch and mutation IDs with other content first-execute.
        let valid = try client.push(batch: 1, [client.insertNote(1, note: "p-1", title: "valid")])
        #expect(valid.status == 200)
        #expect(valid.accepted.first?["status"] == .string("applied"), "\(valid.text)")
    }

    @Test("over-limit requests are 400: a body over 1,048,576 octets and 1001 mutations")
    func limits() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let big = client.insertNote(1, note: "big").replacingOccurrences(
            of: #""fld_note_pinned":false"#,
            with: #""fld_note_pinned":false,"fld_note_body":"\#(String(repeating: "x", count: 1_048_576))""#)
        let oversized = try client.push(client.body(batch: 1, [big]))
        #expect(oversized.status == 400)
        #expect(oversized.errorCode == "invalid_request")
        let many = (0..<1001).map { client.insertNote(100 + $0, note: "m-\($0)") }
        let tooMany = try client.push(client.body(batch: 2, many))
        #expect(tooMany.status == 400)
        #expect(tooMany.error?["message"]?.stringValue?.contains("too_many_mutations") == true)
        let oneThousand = try client.push(client.body(batch: 3, Array(many.prefix(1000))))
        #expect(oneThousand.status == 200)
        #expect(oneThousand.accepted.count == 1000)
    }

    // MARK: - Identity, replay and reuse

    @Test("an exact replay returns the original status and body bytes, after other pushes and a generation change")
    func exactReplay() throws {
        let server = try RunningServer()
        var client = try PushTestClient.connect(server)
        let body = client.body(batch: 1, [
            client.insertNote(1, note: "n-1"), client.updateNote(2, note: "absent", base: "v-x"),
        ])
        let first = try client.push(body)
        #expect(first.status == 200)
        #expect(first.accepted.count == 1 && first.rejected.count == 1)
        let version = try #require(first.accepted.first?["server_version"]?.stringValue)

        // Change the row, move time and renew the generation: none of it may show in the replay.
        _ = try client.push(batch: 2, [client.updateNote(3, note: "n-1", base: version)])
        server.clock.advance(hours: 1)
        #expect(try client.push(body).body == first.body)
        client = try client.reconnect(presentedGeneration: 99)
        #expect(client.generation == 2)
        let replay = try client.push(body)
        #expect(replay.status == first.status)
        #expect(replay.body == first.body)

        // Fingerprints cover parsed content: another layout of the same request is the same batch.
        let relaid = try CanonicalJSON.encode(try StrictJSONParser().parse(Array(body.utf8)))
        #expect(relaid != Array(body.utf8))
        let relaidReply = try server.post("/sync/push", bytes: relaid, as: "alice")
        #expect(relaidReply.body == first.body)
    }

    @Test("a batch_id or mutation_id reused with different content is 409 idempotency_conflict with no work")
    func idempotencyConflict() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let first = try client.push(batch: 1, [client.insertNote(1, note: "n-1")])
        #expect(first.status == 200)

        let changedBatch = try client.push(batch: 1, [client.insertNote(1, note: "n-1", title: "changed")])
        #expect(changedBatch.status == 409)
        #expect(changedBatch.errorCode == "idempotency_conflict")
        #expect(changedBatch.error?["retryable"] == .bool(false))

        let reusedMutation = try client.push(batch: 2, [
            client.insertNote(2, note: "n-2"), client.insertNote(1, note: "n-9"),
        ])
        #expect(reusedMutation.status == 409)
        #expect(reusedMutation.errorCode == "idempotency_conflict")
        // No work: the other mutation of the rejected request did not apply, batch 2 is still free.
        let after = try client.push(batch: 2, [client.insertNote(3, note: "n-2")])
        #expect(after.accepted.first?["status"] == .string("applied"), "\(after.text)")
    }

    @Test("an unchanged completed mutation in a new batch contributes its exact stored outcome without re-execution")
    func completedMutationIsReused() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let insert = client.insertNote(1, note: "n-1")
        let first = try client.push(batch: 1, [insert])
        let stored = try #require(first.accepted.first)
        let version = try #require(stored["server_version"]?.stringValue)
        _ = try client.push(batch: 2, [client.updateNote(2, note: "n-1", base: version)])
        server.clock.advance(microseconds: 10)

        let successor = try client.push(batch: 3, [insert, client.insertNote(3, note: "n-3")])
        #expect(successor.status == 200)
        #expect(successor.accepted.count == 2, "\(successor.text)")
        // Re-executing the insert would now be row_already_exists; the stored outcome is returned instead.
        #expect(successor.accepted.first == stored)
        #expect(successor.text.contains(try CanonicalJSON.string(.object(stored))))
        #expect(successor.object["server_time"] != first.object["server_time"])
    }

    @Test("an atomic request with an owned mutation, or reuse of an atomic_batch_rejected one, is 400")
    func atomicReuseRules() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let insert = client.insertNote(1, note: "n-1")
        #expect(try client.push(batch: 1, [insert]).status == 200)
        let owned = try client.push(batch: 2, [insert, client.insertNote(2, note: "n-2")], atomic: true)
        #expect(owned.status == 400)
        #expect(owned.errorCode == "invalid_request")

        let failed = try client.push(batch: 3, [
            client.insertNote(3, note: "n-3"), client.updateNote(4, note: "absent", base: "v-x"),
        ], atomic: true)
        #expect(failed.rejected.first?["code"] == .string("atomic_batch_rejected"), "\(failed.text)")
        let reuse = try client.push(batch: 4, [client.insertNote(3, note: "n-3")])
        #expect(reuse.status == 400)
        #expect(reuse.errorCode == "invalid_request")
        // The failing mutation of that batch has an ordinary stored outcome, which may be reused.
        let reuseFailing = try client.push(batch: 5, [client.updateNote(4, note: "absent", base: "v-x")])
        #expect(reuseFailing.rejected.first?["code"] == .string("row_not_found"), "\(reuseFailing.text)")
    }

    // MARK: - Gates

    @Test("identity gates: another user's client_id is 401, a never-connected one 409 client_generation_expired")
    func identityGates() throws {
        let server = try RunningServer()
        let bob = try PushTestClient.connect(server, user: "bob", clientID: "ios-bob")
        let stolen = try bob.push(bob.body(batch: 1, [bob.insertNote(1, note: "n-1")]), as: "alice")
        #expect(stolen.status == 401)
        #expect(stolen.errorCode == "auth_required")

        let unknown = try bob.push(bob.body(batch: 1, [bob.insertNote(1, note: "n-1")])
            .replacingOccurrences(of: "ios-bob", with: "ios-never-connected"))
        #expect(unknown.status == 409)
        #expect(unknown.errorCode == "client_generation_expired")
        #expect(unknown.error?["current_client_generation"]?.numberValue != nil)
    }

    @Test("a stale generation is 409 client_generation_expired with the current generation and no ledger state")
    func generationGate() throws {
        let server = try RunningServer()
        let old = try PushTestClient.connect(server)
        let renewed = try old.reconnect(presentedGeneration: 7)
        #expect(renewed.generation == 2)
        let reply = try old.push(batch: 1, [old.insertNote(1, note: "n-1")])
        #expect(reply.status == 409)
        #expect(reply.errorCode == "client_generation_expired")
        #expect(reply.error?["current_client_generation"] == .number(JSONNumber(2)))
        #expect(reply.error?["retryable"] == .bool(false))
        let successor = try renewed.push(batch: 1, [renewed.insertNote(1, note: "n-1")])
        #expect(successor.accepted.first?["status"] == .string("applied"), "\(successor.text)")
    }

    @Test("a non-current schema is 422 schema_mismatch with both references and no ledger state")
    func schemaGate() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let stale = #"{"version":1,"hash":"\#(String(repeating: "0f", count: 32))"}"#
        let reply = try client.push(client.body(batch: 1, [client.insertNote(1, note: "n-1")], schema: stale))
        #expect(reply.status == 422)
        #expect(reply.errorCode == "schema_mismatch")
        #expect(reply.error?["current_schema"] == client.schemaReference)
        let received = try SchemaReference(json: try #require(reply.error?["received_schema"]))
        #expect(received == (try SchemaReference(json: try StrictJSONParser().parse(Array(stale.utf8)))))
        let current = try client.push(batch: 1, [client.insertNote(1, note: "n-1")])
        #expect(current.accepted.first?["status"] == .string("applied"), "\(current.text)")
    }

    // MARK: - Atomic batches

    @Test("a failing atomic batch rolls back earlier writes and reports the committed state of the failing row")
    func atomicAllOrNothing() throws {
        let server = try RunningServer()
        let client = try PushTestClient.connect(server)
        let version = try client.createdNote("n-1", batch: 1, mutation: 1)

        let reply = try client.push(batch: 2, [
            client.insertNote(10, note: "n-4"),
            client.updateNote(11, note: "n-1", base: "v-stale"),
            client.insertNote(12, note: "n-5"),
        ], atomic: true)
        #expect(reply.status == 200)
        #expect(reply.accepted.isEmpty)
        #expect(reply.rejected.map { $0["code"] } == [
            .string("atomic_batch_rejected"), .string("version_conflict"), .string("atomic_batch_rejected"),
        ])
        try #require(reply.rejected.count == 3, "\(reply.text)")
        for index in [0, 2] {
            let outcome = reply.rejected[index]
            #expect(memberNames(outcome) == outcomeHeader.union(["code", "message"]))
            #expect(outcome["status"] == .string("rejected_terminal"))
            #expect(outcome["message"] == .string("atomic batch rejected"))
            #expect(outcome["outcome_schema"] == client.schemaReference)
        }
        let failing = reply.rejected[1]
        #expect(failing["server_version"] == .string(version))
        try expectVerifiedRow(failing, manifest: client.manifest)

        // The insert of n-4 was rolled back: the row is absent.
        let later = try client.push(batch: 3, [client.updateNote(20, note: "n-4", base: "v-any")])
        #expect(later.rejected.first?["code"] == .string("row_not_found"), "\(later.text)")

        let terminalMiddle = try client.push(batch: 4, [
            client.insertNote(30, note: "n-6"), client.insertNote(31, note: "n-7", owner: "bob"),
        ], atomic: true)
        #expect(terminalMiddle.rejected.map { $0["code"] } == [
            .string("atomic_batch_rejected"), .string("policy_rejected"),
        ])

        let success = try client.push(batch: 5, [
            client.insertNote(40, note: "n-6"), client.updateNote(41, note: "n-1", base: version),
        ], atomic: true)
        #expect(success.rejected.isEmpty)
        #expect(success.accepted.map { $0["status"] } == [.string("applied"), .string("applied")])
        for outcome in success.accepted { try expectVerifiedRow(outcome, manifest: client.manifest) }
    }
}
