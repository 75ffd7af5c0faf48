import Testing

@testable import SynchroProtocol

/// Builds mutation and request JSON text member by member, so a test can drop or replace exactly one.
struct PushTemplate: Sendable {
    static let hash = "a97280b716fe0f8a9553ba7c3b31b00dd03f7c7aacf0ff01a703d73182f3df31"
    static let schema = #"{"version":1,"hash":"\#(hash)"}"#

    var members: [(String, String)]

    static func mutation(
        id: String = "00000000-0000-4000-8000-000000000001", op: String = "update", pk: String = #"{"fld_id":"k-1"}"#
    ) -> PushTemplate {
        PushTemplate(members: [
            ("mutation_id", "\"\(id)\""),
            ("table", #""tbl_records""#),
            ("pk", pk),
            ("authored_schema", schema),
            ("op", "\"\(op)\""),
            ("base_version", #""sv-1""#),
            ("client_version", #""2024-02-29T12:34:56.123456Z""#),
            ("columns", #"{"fld_text":"z"}"#),
        ])
    }

    static func request(_ mutations: [PushTemplate], atomic: Bool = false) -> PushTemplate {
        var members = [
            ("client_id", #""client-canonical""#),
            ("client_generation", "7"),
            ("batch_id", #""00000000-0000-4000-8000-000000000010""#),
            ("schema", schema),
        ]
        if atomic { members.append(("atomic", "true")) }
        members.append(("mutations", "[" + mutations.map(\.text).joined(separator: ",") + "]"))
        return PushTemplate(members: members)
    }

    /// Replaces (or appends) a member's raw JSON; nil removes it.
    func setting(_ name: String, _ raw: String?) -> PushTemplate {
        var copy = self
        if let i = copy.members.firstIndex(where: { $0.0 == name }) {
            if let raw { copy.members[i].1 = raw } else { copy.members.remove(at: i) }
        } else if let raw {
            copy.members.append((name, raw))
        }
        return copy
    }

    var text: String { "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}" }
    var bytes: [UInt8] { Array(text.utf8) }
}

/// One row of the presence matrix, rendered for either input shape.
struct PresenceCase: Sendable, CustomTestStringConvertible {
    enum Base: Sendable { case absent, null, empty, number, token }
    enum Columns: Sendable { case absent, null, empty, one, oneNull, wrongType }

    let op: String
    let base: Base
    let columns: Columns
    let expected: PushValidationError?

    var testDescription: String { "\(op) base=\(base) columns=\(columns) → \(expected?.rule ?? "valid")" }

    func text(shape: PushShape) -> String {
        var t = PushTemplate.mutation(op: op)
        switch base {
        case .absent: t = t.setting("base_version", nil)
        case .null: t = t.setting("base_version", "null")
        case .empty: t = t.setting("base_version", #""""#)
        case .number: t = t.setting("base_version", "7")
        case .token: t = t.setting("base_version", #""sv-1""#)
        }
        let wire = shape == .wire
        switch columns {
        case .absent: t = t.setting("columns", nil)
        case .null: t = t.setting("columns", "null")
        case .empty: t = t.setting("columns", wire ? "{}" : "[]")
        case .one: t = t.setting("columns", wire ? #"{"fld_text":"z"}"# : #"[{"field_id":"fld_text","value":"z"}]"#)
        case .oneNull:
            t = t.setting("columns", wire ? #"{"fld_text":null}"# : #"[{"field_id":"fld_text","value":null}]"#)
        case .wrongType: t = t.setting("columns", wire ? "[]" : "{}")
        }
        return wire ? t.text : PushValidationTests.vectorize(t).text
    }
}

@Suite("Push request validation")
struct PushValidationTests {
    /// Renames the wire members of a mutation template to the vector spelling (pk and columns
    /// are set by the caller in vector form when they matter).
    static func vectorize(_ t: PushTemplate) -> PushTemplate {
        var copy = t
        copy.members = t.members.map { name, raw in
            switch name {
            case "table": ("table_id", raw)
            case "op": ("operation", raw)
            case "pk": ("pk", #"{"field_id":"fld_id","value":"k-1"}"#)
            default: (name, raw)
            }
        }
        return copy
    }

    static let presenceRows: [PresenceCase] = [
        PresenceCase(op: "insert", base: .absent, columns: .one, expected: nil),
        PresenceCase(op: "insert", base: .absent, columns: .empty, expected: nil),
        PresenceCase(op: "insert", base: .absent, columns: .oneNull, expected: nil),
        PresenceCase(op: "insert", base: .token, columns: .one, expected: .baseVersionForbidden(mutationIndex: nil)),
        PresenceCase(op: "insert", base: .null, columns: .one, expected: .baseVersionForbidden(mutationIndex: nil)),
        PresenceCase(op: "insert", base: .absent, columns: .absent, expected: .missingColumns(mutationIndex: nil)),
        PresenceCase(op: "insert", base: .absent, columns: .null, expected: .invalidColumns(mutationIndex: nil)),
        PresenceCase(op: "insert", base: .absent, columns: .wrongType, expected: .invalidColumns(mutationIndex: nil)),
        PresenceCase(op: "update", base: .token, columns: .one, expected: nil),
        PresenceCase(op: "update", base: .token, columns: .oneNull, expected: nil),
        PresenceCase(op: "update", base: .absent, columns: .one, expected: .missingBaseVersion(mutationIndex: nil)),
        PresenceCase(op: "update", base: .null, columns: .one, expected: .invalidBaseVersion(mutationIndex: nil)),
        PresenceCase(op: "update", base: .empty, columns: .one, expected: .invalidBaseVersion(mutationIndex: nil)),
        PresenceCase(op: "update", base: .number, columns: .one, expected: .invalidBaseVersion(mutationIndex: nil)),
        PresenceCase(op: "update", base: .token, columns: .empty, expected: .emptyUpdateColumns(mutationIndex: nil)),
        PresenceCase(op: "update", base: .token, columns: .absent, expected: .missingColumns(mutationIndex: nil)),
        PresenceCase(op: "update", base: .token, columns: .null, expected: .invalidColumns(mutationIndex: nil)),
        PresenceCase(op: "delete", base: .token, columns: .absent, expected: nil),
        PresenceCase(op: "delete", base: .absent, columns: .absent, expected: .missingBaseVersion(mutationIndex: nil)),
        PresenceCase(op: "delete", base: .null, columns: .absent, expected: .invalidBaseVersion(mutationIndex: nil)),
        PresenceCase(op: "delete", base: .empty, columns: .absent, expected: .invalidBaseVersion(mutationIndex: nil)),
        PresenceCase(op: "delete", base: .token, columns: .empty, expected: .columnsForbidden(mutationIndex: nil)),
        PresenceCase(op: "delete", base: .token, columns: .null, expected: .columnsForbidden(mutationIndex: nil)),
        PresenceCase(op: "delete", base: .token, columns: .one, expected: .columnsForbidden(mutationIndex: nil)),
    ]

    @Test("the presence matrix holds in both input shapes; null never counts as absent",
          arguments: presenceRows, PushShape.allCases)
    func presenceMatrix(row: PresenceCase, shape: PushShape) throws {
        let bytes = Array(row.text(shape: shape).utf8)
        if let expected = row.expected {
            #expect(throws: expected) { try PushMutation.parse(bytes: bytes, shape: shape) }
        } else {
            let mutation = try PushMutation.parse(bytes: bytes, shape: shape)
            #expect(mutation.operation.rawValue == row.op)
            #expect((mutation.columns == nil) == (row.columns == .absent))
            #expect((mutation.baseVersion == nil) == (row.base == .absent))
        }
    }

    static let mutationRules: [(String, String?, PushValidationError)] = [
        ("mutation_id", #""00000000-0000-4000-8000-00000000000A""#, .invalidMutationID(mutationIndex: nil)),
        ("mutation_id", #""00000000-0000-0000-0000-000000000000""#, .invalidMutationID(mutationIndex: nil)),
        ("mutation_id", #""{00000000-0000-4000-8000-000000000001}""#, .invalidMutationID(mutationIndex: nil)),
        ("mutation_id", "1", .invalidMutationID(mutationIndex: nil)),
        ("table", #""""#, .invalidTable(mutationIndex: nil)),
        ("table", "null", .invalidTable(mutationIndex: nil)),
        ("table", #""tbl\uFDD0""#, .invalidTable(mutationIndex: nil)),
        ("pk", "{}", .invalidPrimaryKey(mutationIndex: nil)),
        ("pk", #"{"fld_id":"k-1","other":"k-2"}"#, .invalidPrimaryKey(mutationIndex: nil)),
        ("pk", #"{"":"k-1"}"#, .invalidPrimaryKey(mutationIndex: nil)),
        ("pk", #"{"fld_id":null}"#, .nullPrimaryKey(mutationIndex: nil)),
        ("pk", #""k-1""#, .invalidPrimaryKey(mutationIndex: nil)),
        ("authored_schema", #"{"version":0,"hash":""}"#,
         .invalidSchemaReference(member: "authored_schema", mutationIndex: nil)),
        ("authored_schema", #"{"version":1.0,"hash":"\#(PushTemplate.hash)"}"#,
         .invalidSchemaReference(member: "authored_schema", mutationIndex: nil)),
        ("authored_schema", #"{"version":1,"hash":"\#(PushTemplate.hash.uppercased())"}"#,
         .invalidSchemaReference(member: "authored_schema", mutationIndex: nil)),
        ("authored_schema", #"{"version":1,"hash":"\#(PushTemplate.hash)","x":1}"#,
         .invalidSchemaReference(member: "authored_schema", mutationIndex: nil)),
        ("op", #""upsert""#, .invalidOperation(mutationIndex: nil)),
        ("op", #""UPDATE""#, .invalidOperation(mutationIndex: nil)),
        ("op", #""create""#, .invalidOperation(mutationIndex: nil)),
        ("op", "null", .invalidOperation(mutationIndex: nil)),
        ("client_version", #""2024-02-29T12:34:56Z""#, .invalidClientVersion(mutationIndex: nil)),
        ("client_version", #""2024-02-29T12:34:56.123456+00:00""#, .invalidClientVersion(mutationIndex: nil)),
        ("client_version", #""2023-02-29T12:34:56.123456Z""#, .invalidClientVersion(mutationIndex: nil)),
        ("client_version", #""2024-02-29T23:59:60.000000Z""#, .invalidClientVersion(mutationIndex: nil)),
        ("client_version", #""2024-02-29t12:34:56.123456z""#, .invalidClientVersion(mutationIndex: nil)),
        ("depends_on_mutation_id", #""00000000-0000-4000-8000-000000000002""#, .unknownMember(mutationIndex: nil)),
        ("pk", nil, .missingMember("pk", mutationIndex: nil)),
        ("client_version", nil, .missingMember("client_version", mutationIndex: nil)),
        ("columns", #"{"":"z"}"#, .invalidFieldID(mutationIndex: nil)),
        ("columns", #"{"fld\uFFFF":"z"}"#, .invalidFieldID(mutationIndex: nil)),
        ("columns", #"{"fld_text":"z\uDBFF\uDFFF"}"#, .valueNotIJSON(mutationIndex: nil)),
        ("columns", #"{"fld_text":1e400}"#, .valueNotIJSON(mutationIndex: nil)),
        ("columns", #"{"fld_text":"a","fld_text":"b"}"#, .duplicateMember(offset: 0)),
    ]

    @Test("each mutation rule rejects its input with its own error", arguments: mutationRules)
    func mutationRule(member: String, raw: String?, expected: PushValidationError) {
        let bytes = PushTemplate.mutation().setting(member, raw).bytes
        #expect {
            try PushMutation.parse(bytes: bytes, shape: .wire)
        } throws: { error in
            guard let error = error as? PushValidationError else { return false }
            // The parser reports the duplicate's byte offset; only the rule matters here.
            return error.rule == expected.rule && (error == expected || expected.rule == "duplicate_member")
        }
    }

    static let envelopeRules: [(String, String?, PushValidationError)] = [
        ("client_id", #""""#, .invalidClientID),
        ("client_id", "null", .invalidClientID),
        ("client_id", "17", .invalidClientID),
        ("client_id", #""c\uFFFE""#, .invalidClientID),
        ("client_generation", "0", .invalidClientGeneration),
        ("client_generation", "-1", .invalidClientGeneration),
        ("client_generation", "-0", .invalidClientGeneration),
        ("client_generation", "7.0", .invalidClientGeneration),
        ("client_generation", "7e0", .invalidClientGeneration),
        ("client_generation", "9007199254740992", .invalidClientGeneration),
        ("client_generation", #""7""#, .invalidClientGeneration),
        ("client_generation", "null", .invalidClientGeneration),
        ("batch_id", #""00000000-0000-4000-8000-00000000001A""#, .invalidBatchID),
        ("batch_id", #""00000000-0000-0000-0000-000000000000""#, .invalidBatchID),
        ("batch_id", #""urn:uuid:00000000-0000-4000-8000-000000000010""#, .invalidBatchID),
        ("schema", #"{"version":0,"hash":""}"#, .invalidSchemaReference(member: "schema", mutationIndex: nil)),
        ("schema", #"{"version":9007199254740992,"hash":"\#(PushTemplate.hash)"}"#,
         .invalidSchemaReference(member: "schema", mutationIndex: nil)),
        ("atomic", "false", .invalidAtomic),
        ("atomic", #""true""#, .invalidAtomic),
        ("atomic", "null", .invalidAtomic),
        ("mutations", "{}", .mutationsNotArray),
        ("mutations", "[]", .noMutations),
        ("mutations", "[1]", .mutationNotObject(mutationIndex: 0)),
        ("schema", nil, .missingMember("schema", mutationIndex: nil)),
        ("mutations", nil, .missingMember("mutations", mutationIndex: nil)),
        ("request_schema", PushTemplate.schema, .unknownMember(mutationIndex: nil)),
        ("depends_on_mutation_id", "null", .unknownMember(mutationIndex: nil)),
    ]

    @Test("each envelope rule rejects its input with its own error", arguments: envelopeRules)
    func envelopeRule(member: String, raw: String?, expected: PushValidationError) {
        let body = PushTemplate.request([PushTemplate.mutation()]).setting(member, raw).bytes
        #expect(throws: expected) { try PushRequest.parse(body: body, shape: .wire) }
    }

    @Test("the largest client generation and schema version are accepted")
    func largestIntegers() throws {
        let body = PushTemplate.request([PushTemplate.mutation()])
            .setting("client_generation", "9007199254740991")
            .setting("schema", #"{"version":9007199254740991,"hash":"\#(PushTemplate.hash)"}"#).bytes
        let request = try PushRequest.parse(body: body, shape: .wire)
        #expect(request.clientGeneration == 9_007_199_254_740_991)
        #expect(request.schema.version == 9_007_199_254_740_991)
    }

    @Test("bodies that are not JSON objects are rejected before any member rule", arguments: [
        (#"{"client_id":}"#, "invalid_json"),
        ("[]", "request_not_object"),
        (#"{"client_id":"a","\u0063lient_id":"b"}"#, "duplicate_member"),
        ("{} x", "invalid_json"),
        (#"{"client_id":"\uD800"}"#, "invalid_json"),
    ])
    func notAnObject(body: String, rule: String) {
        #expect {
            try PushRequest.parse(body: Array(body.utf8), shape: .wire)
        } throws: { ($0 as? PushValidationError)?.rule == rule }
    }

    @Test("invalid UTF-8 in the body is rejected")
    func invalidUTF8() {
        var body = PushTemplate.request([PushTemplate.mutation()]).bytes
        body.insert(0xFF, at: 15)
        #expect { try PushRequest.parse(body: body, shape: .wire) } throws: {
            ($0 as? PushValidationError)?.rule == "invalid_json"
        }
    }

    @Test("an error inside the second mutation names index 1")
    func errorIndex() {
        let body = PushTemplate.request([
            PushTemplate.mutation(),
            PushTemplate.mutation(id: "00000000-0000-4000-8000-000000000002").setting("op", #""upsert""#),
        ]).bytes
        #expect(throws: PushValidationError.invalidOperation(mutationIndex: 1)) {
            try PushRequest.parse(body: body, shape: .wire)
        }
    }

    @Test("a mutation_id may not occur twice in one request")
    func duplicateMutationID() {
        let body = PushTemplate.request([PushTemplate.mutation(), PushTemplate.mutation(pk: #"{"fld_id":"k-2"}"#)])
        #expect(throws: PushValidationError.duplicateMutationID(mutationIndex: 1)) {
            try PushRequest.parse(body: body.bytes, shape: .wire)
        }
    }

    static let sameRowKeys: [(String, String, Bool)] = [
        (#"{"fld_id":"a-b"}"#, #"{"fld_id":"a\u002db"}"#, true),
        (#"{"fld_id":43}"#, #"{"fld_id":43.0}"#, true),
        (#"{"fld_id":43}"#, #"{"fld_id":"43"}"#, false),
        (#"{"fld_id":"a-b"}"#, #"{"other_id":"a-b"}"#, false),
        (#"{"fld_id":"\u00e9"}"#, #"{"fld_id":"e\u0301"}"#, false),
    ]

    @Test("an atomic request may not address the same (table, pk field, RFC 8785 pk value) twice",
          arguments: sameRowKeys)
    func atomicRows(first: String, second: String, sameRow: Bool) throws {
        let mutations = [
            PushTemplate.mutation(pk: first),
            PushTemplate.mutation(id: "00000000-0000-4000-8000-000000000002", pk: second),
        ]
        let atomic = PushTemplate.request(mutations, atomic: true).bytes
        if sameRow {
            #expect(throws: PushValidationError.duplicateAtomicRow(mutationIndex: 1)) {
                try PushRequest.parse(body: atomic, shape: .wire)
            }
        } else {
            #expect(try PushRequest.parse(body: atomic, shape: .wire).isAtomic)
        }
        // The rule is for atomic requests only.
        #expect(try PushRequest.parse(body: PushTemplate.request(mutations).bytes, shape: .wire).mutations.count == 2)
    }

    @Test("canonically equivalent field IDs are different columns, exact repeats are duplicates")
    func exactFieldIdentity() throws {
        let distinct = PushTemplate.mutation().setting("columns", #"{"\u00e9":1,"e\u0301":2}"#)
        #expect(try PushMutation.parse(bytes: distinct.bytes, shape: .wire).authoredColumnCount == 2)
        let vector = Self.vectorize(
            PushTemplate.mutation().setting("columns", #"[{"field_id":"x","value":1},{"field_id":"x","value":1}]"#))
        #expect(throws: PushValidationError.duplicateColumn(mutationIndex: nil)) {
            try PushMutation.parse(bytes: vector.bytes, shape: .conformanceVector)
        }
    }

    static let vectorShapeRules: [(String, String, PushValidationError)] = [
        ("pk", #"{"field_id":"fld_id"}"#, .invalidPrimaryKey(mutationIndex: nil)),
        ("pk", #"{"field_id":"fld_id","value":"k","x":1}"#, .invalidPrimaryKey(mutationIndex: nil)),
        ("pk", #"{"fld_id":"k-1"}"#, .invalidPrimaryKey(mutationIndex: nil)),
        ("pk", #"{"field_id":"fld_id","value":null}"#, .nullPrimaryKey(mutationIndex: nil)),
        ("columns", #"[{"field_id":"x"}]"#, .invalidColumns(mutationIndex: nil)),
        ("columns", #"[{"field_id":"x","value":1,"y":2}]"#, .invalidColumns(mutationIndex: nil)),
        ("columns", #"[{"field_id":1,"value":1}]"#, .invalidColumns(mutationIndex: nil)),
        ("columns", #"[["x",1]]"#, .invalidColumns(mutationIndex: nil)),
        ("columns", #"{"x":1}"#, .invalidColumns(mutationIndex: nil)),
        ("columns", #"[{"field_id":"","value":1}]"#, .invalidFieldID(mutationIndex: nil)),
        ("op", #""update""#, .unknownMember(mutationIndex: nil)),
    ]

    @Test("the vector shape has its own exact members", arguments: vectorShapeRules)
    func vectorShape(member: String, raw: String, expected: PushValidationError) {
        let bytes = Self.vectorize(PushTemplate.mutation()).setting("operation", #""update""#)
            .setting(member, raw).bytes
        #expect(throws: expected) { try PushMutation.parse(bytes: bytes, shape: .conformanceVector) }
    }

    @Test("a wire body is not a vector body and vice versa")
    func shapesDoNotMix() {
        let wire = PushTemplate.request([PushTemplate.mutation()]).bytes
        #expect(throws: PushValidationError.missingMember("request_schema", mutationIndex: nil)) {
            try PushRequest.parse(body: wire, shape: .conformanceVector)
        }
        #expect(throws: PushValidationError.missingMember("table_id", mutationIndex: nil)) {
            try PushMutation.parse(bytes: PushTemplate.mutation().bytes, shape: .conformanceVector)
        }
    }

    @Test("error descriptions never contain submitted values")
    func privacy() {
        let secret = "SECRET-4711"
        let inputs: [[UInt8]] = [
            PushTemplate.mutation(op: "insert").setting("base_version", "\"\(secret)\"").bytes,
            PushTemplate.mutation().setting("columns", #"{"fld":"\#(secret)\uFFFF"}"#).bytes,
            PushTemplate.mutation().setting("pk", #"{"\#(secret)":null}"#).bytes,
            PushTemplate.mutation().setting("\(secret)", "1").bytes,
            PushTemplate.mutation().setting("client_version", "\"\(secret)\"").bytes,
            Array(#"{"\#(secret)":1,"\#(secret)":2}"#.utf8),
        ]
        for input in inputs {
            do {
                _ = try PushMutation.parse(bytes: input, shape: .wire)
                Issue.record("expected a validation error")
            } catch {
                #expect(!error.description.contains(secret))
                #expect(!error.description.contains("4711"))
            }
        }
        let mutation = try? PushMutation.parse(
            bytes: PushTemplate.mutation().setting("columns", #"{"fld":"\#(secret)"}"#).bytes, shape: .wire)
        #expect(mutation.map { !"\($0)".contains(secret) } == true)
    }

    @Test("the memberwise initializers apply the same rules as the parsers")
    func memberwiseRules() throws {
        let schema = try SchemaReference(version: 1, hash: PushTemplate.hash)
        func make(
            _ op: PushOperation, base: String?, columns: [JSONMember]?,
            id: String = "00000000-0000-4000-8000-000000000001"
        ) throws(PushValidationError) -> PushMutation {
            try PushMutation(
                mutationID: id, table: "t", pkFieldID: "id", pkValue: .string("k"), authoredSchema: schema,
                operation: op, baseVersion: base, clientVersion: "2024-02-29T12:34:56.123456Z", columns: columns)
        }
        let column = JSONMember("c", .null)
        #expect(throws: PushValidationError.duplicateColumn(mutationIndex: nil)) {
            try make(.insert, base: nil, columns: [column, column])
        }
        #expect(throws: PushValidationError.missingBaseVersion(mutationIndex: nil)) {
            try make(.update, base: nil, columns: [column])
        }
        #expect(throws: PushValidationError.invalidMutationID(mutationIndex: nil)) {
            try make(.delete, base: "v", columns: nil, id: "X")
        }
        let insert = try make(.insert, base: nil, columns: [column])
        #expect(throws: PushValidationError.duplicateMutationID(mutationIndex: 1)) {
            try PushRequest(
                clientID: "c", clientGeneration: 1, batchID: "00000000-0000-4000-8000-000000000010", schema: schema,
                isAtomic: false, mutations: [insert, insert])
        }
        #expect(throws: PushValidationError.noMutations) {
            try PushRequest(
                clientID: "c", clientGeneration: 1, batchID: "00000000-0000-4000-8000-000000000010", schema: schema,
                isAtomic: false, mutations: [])
        }
        #expect(throws: PushValidationError.invalidClientGeneration) {
            try PushRequest(
                clientID: "c", clientGeneration: 0, batchID: "00000000-0000-4000-8000-000000000010", schema: schema,
                isAtomic: false, mutations: [insert])
        }
    }

    @Test("the stored wire body parses back to the same request, in both shapes")
    func wireBodyRoundTrip() throws {
        let request = try PushRequest.parse(body: Array(PushSpecExamples.b1().utf8), shape: .wire)
        let body = request.wireBody()
        #expect(try PushRequest.parse(body: body, shape: .wire) == request)
        #expect(body.count == (try CanonicalJSON.encode(request.wireJSON)).count)
        #expect(String(decoding: body.prefix(28), as: UTF8.self) == #"{"client_id":"ios-device-9","#)
        let vectorBody = try CanonicalJSON.encode(request.json(shape: .conformanceVector))
        #expect(try PushRequest.parse(body: vectorBody, shape: .conformanceVector) == request)
    }

    @Test("rule names are unique snake_case")
    func ruleNames() {
        let samples: [PushValidationError] = [
            .requestBodyTooLarge(octets: 0), .invalidJSON(JSONParseError(.unexpectedEnd, at: 0)),
            .duplicateMember(offset: 0), .valueNotIJSON(mutationIndex: nil), .canonicalRequestTooLarge(octets: 0),
            .requestNotObject, .missingMember("x", mutationIndex: nil), .unknownMember(mutationIndex: nil),
            .invalidClientID, .invalidClientGeneration, .invalidBatchID,
            .invalidSchemaReference(member: "schema", mutationIndex: nil), .invalidAtomic, .mutationsNotArray,
            .noMutations, .tooManyMutations(count: 0), .mutationNotObject(mutationIndex: nil),
            .invalidMutationID(mutationIndex: nil), .invalidTable(mutationIndex: nil),
            .invalidPrimaryKey(mutationIndex: nil), .nullPrimaryKey(mutationIndex: nil),
            .invalidOperation(mutationIndex: nil), .invalidClientVersion(mutationIndex: nil),
            .baseVersionForbidden(mutationIndex: nil), .missingBaseVersion(mutationIndex: nil),
            .invalidBaseVersion(mutationIndex: nil), .missingColumns(mutationIndex: nil),
            .columnsForbidden(mutationIndex: nil), .invalidColumns(mutationIndex: nil),
            .emptyUpdateColumns(mutationIndex: nil), .invalidFieldID(mutationIndex: nil),
            .duplicateColumn(mutationIndex: nil), .tooManyColumns(count: 0, mutationIndex: nil),
            .normalizedMutationTooLarge(octets: 0, mutationIndex: nil), .duplicateMutationID(mutationIndex: nil),
            .duplicateAtomicRow(mutationIndex: nil), .invalidAuthenticatedUserID,
        ]
        let rules = samples.map(\.rule)
        #expect(Set(rules).count == rules.count)
        #expect(rules.allSatisfy { $0.utf8.allSatisfy { c in (0x61...0x7A).contains(c) || c == 0x5F } })
    }
}
