import Testing

@testable import SynchroProtocol

/// Worked examples quoted from `spec/integrity.md` §8.5 and `spec/wire-protocol.md` §2.11/§4.10.
enum PushSpecExamples {
    static let user = "user-7f3a"
    static let client = "ios-device-9"
    static let hash3 = "a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"

    /// M1 (update), wire shape, exactly as printed in §8.5 (line breaks are JSON whitespace).
    static let m1 = #"""
        {"mutation_id":"3c0f6a52-9d1e-4b7a-8f20-6e5d4c3b2a19","table":"tbl_tasks",
         "pk":{"fld_task_id":"task-001"},
         "authored_schema":{"version":3,"hash":"a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"},
         "op":"update","base_version":"v-101","client_version":"2026-01-02T03:05:00.000000Z",
         "columns":{"fld_task_title":"Buy oat milk","fld_task_points":null}}
        """#

    /// The insert element of B1.
    static let b1Insert = #"""
        {"mutation_id":"8e4b2d10-7c6a-4f59-b3e2-1a0d9c8b7f65","table":"tbl_counters","pk":{"fld_counter_id":43},
           "authored_schema":{"version":3,"hash":"a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"},
           "op":"insert","client_version":"2026-01-02T03:04:59.500000Z",
           "columns":{"fld_counter_ratio":0.25,"fld_counter_day":"2026-03-02"}}
        """#

    /// B1 (atomic batch, generation 12) with M1 substituted for `<M1>`.
    static func b1(atomic: Bool = true) -> String {
        """
        {"client_id":"ios-device-9","client_generation":12,"batch_id":"0b9f4c1e-8d2a-4f6b-9c3d-5e7a1b2c3d4e",
         "schema":{"version":3,"hash":"\(hash3)"},
         \(atomic ? #""atomic":true,"# : "")
         "mutations":[
          \(b1Insert),
          \(m1)]}
        """
    }

    /// B1 in the conformance-vector shape (§0), written by hand from the same content.
    static func b1Vector(atomic: Bool = true) -> String {
        #"""
        {"client_id":"ios-device-9","client_generation":12,"batch_id":"0b9f4c1e-8d2a-4f6b-9c3d-5e7a1b2c3d4e",
         "request_schema":{"version":3,"hash":"a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"},
        """# + (atomic ? #""atomic":true,"# : "") + #"""
         "mutations":[
          {"mutation_id":"8e4b2d10-7c6a-4f59-b3e2-1a0d9c8b7f65","table_id":"tbl_counters",
           "pk":{"field_id":"fld_counter_id","value":43},
           "authored_schema":{"version":3,"hash":"a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"},
           "operation":"insert","client_version":"2026-01-02T03:04:59.500000Z",
           "columns":[{"field_id":"fld_counter_ratio","value":0.25},
                      {"field_id":"fld_counter_day","value":"2026-03-02"}]},
          {"mutation_id":"3c0f6a52-9d1e-4b7a-8f20-6e5d4c3b2a19","table_id":"tbl_tasks",
           "pk":{"field_id":"fld_task_id","value":"task-001"},
           "authored_schema":{"version":3,"hash":"a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"},
           "operation":"update","base_version":"v-101","client_version":"2026-01-02T03:05:00.000000Z",
           "columns":[{"field_id":"fld_task_title","value":"Buy oat milk"},
                      {"field_id":"fld_task_points","value":null}]}]}
        """#
    }

    /// The spec's one-line texts, split after commas only to respect the line limit.
    static let m1Normalized = [
        #"["mutation-v1","3c0f6a52-9d1e-4b7a-8f20-6e5d4c3b2a19","tbl_tasks",["fld_task_id","task-001"],["3","#,
        #""a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"],"update",[1,"v-101"],"#,
        #""2026-01-02T03:05:00.000000Z",[1,[["fld_task_points",null],["fld_task_title","Buy oat milk"]]]]"#,
    ].joined()

    static let b1Normalized = [
        #"["atomic-batch-v1","user-7f3a","ios-device-9","12","0b9f4c1e-8d2a-4f6b-9c3d-5e7a1b2c3d4e",["3","#,
        #""a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"],[["mutation-v1","#,
        #""8e4b2d10-7c6a-4f59-b3e2-1a0d9c8b7f65","tbl_counters",["fld_counter_id",43],["3","#,
        #""a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"],"insert",[0],"#,
        #""2026-01-02T03:04:59.500000Z",[1,[["fld_counter_day","2026-03-02"],["fld_counter_ratio",0.25]]]],"#,
        #"["mutation-v1","3c0f6a52-9d1e-4b7a-8f20-6e5d4c3b2a19","tbl_tasks",["fld_task_id","task-001"],["3","#,
        #""a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"],"update",[1,"v-101"],"#,
        #""2026-01-02T03:05:00.000000Z",[1,[["fld_task_points",null],["fld_task_title","Buy oat milk"]]]]]]"#,
    ].joined()

    /// The update of `spec/wire-protocol.md` §4.10.
    static let notesUpdate = #"""
        {
          "mutation_id": "0193f0a4-5c1e-7b21-8e4d-2f6a9b3c1d01",
          "table": "tbl_notes",
          "pk": {"fld_notes_id": "n-1"},
          "authored_schema": {"version": 2, "hash": "6562ef76e180120473ff41101886b1ff5d9bcd9f80af504b399ddd3f32244eb8"},
          "op": "update",
          "base_version": "rv-000101",
          "client_version": "2026-10-12T09:29:40.118000Z",
          "columns": {"fld_notes_body": "Buy oat milk", "fld_notes_pinned": true, "fld_notes_score": "12.5"}
        }
        """#

    static let notesUpdateNormalized = [
        #"["mutation-v1","0193f0a4-5c1e-7b21-8e4d-2f6a9b3c1d01","tbl_notes",["fld_notes_id","n-1"],["2","#,
        #""6562ef76e180120473ff41101886b1ff5d9bcd9f80af504b399ddd3f32244eb8"],"update",[1,"rv-000101"],"#,
        #""2026-10-12T09:29:40.118000Z",[1,[["fld_notes_body","Buy oat milk"],["fld_notes_pinned",true],"#,
        #"["fld_notes_score","12.5"]]]]"#,
    ].joined()

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func text(_ bytes: some Sequence<UInt8>) -> String { String(decoding: Array(bytes), as: UTF8.self) }

    static func mutation(_ text: String, shape: PushShape = .wire) throws -> PushMutation {
        try PushMutation.parse(bytes: bytes(text), shape: shape)
    }

    static func request(_ text: String, shape: PushShape = .wire) throws -> PushRequest {
        try PushRequest.parse(body: bytes(text), shape: shape)
    }

    /// The octets after `domain || 0x00` in a preimage.
    static func hashedText(_ fingerprint: PushFingerprint, domain: String) -> String {
        text(fingerprint.preimage.dropFirst(domain.utf8.count + 1))
    }
}

@Suite("Push fingerprints")
struct PushFingerprintTests {
    typealias Ex = PushSpecExamples

    @Test("M1's normalized mutation is the 282-octet text of integrity §8.5")
    func m1Normalized() throws {
        let m1 = try Ex.mutation(Ex.m1)
        let canonical = try CanonicalJSON.encode(PushFingerprint.normalizedMutation(m1))
        #expect(Ex.text(canonical) == Ex.m1Normalized)
        #expect(canonical.count == 282)
        #expect(m1.normalizedMutationOctets == 282)
    }

    @Test("M1's mutation fingerprint and 371-octet preimage match integrity §8.5")
    func m1Fingerprint() throws {
        let fingerprint = try PushFingerprint.mutation(
            Ex.mutation(Ex.m1), authenticatedUserID: Ex.user, clientID: Ex.client)
        #expect(fingerprint.hex == "3f4cf5bebb9e8661d8ede6e5c74cca6a527a309f790c58fa6cb0cee0d1adc3b3")
        #expect(fingerprint.preimage.count == 371)
        let domain = PushFingerprint.mutationDomain
        #expect(Array(fingerprint.preimage.prefix(domain.utf8.count + 1)) == Array(domain.utf8) + [0])
        #expect(
            Ex.hashedText(fingerprint, domain: domain)
                == #"["mutation-scope-v1","user-7f3a","ios-device-9",\#(Ex.m1Normalized)]"#)
        #expect(fingerprint.digest == SHA256.hash(fingerprint.preimage))
    }

    @Test("B1's atomic batch fingerprint and 759-octet preimage match integrity §8.5")
    func b1Atomic() throws {
        let fingerprint = try PushFingerprint.batch(Ex.request(Ex.b1()), authenticatedUserID: Ex.user)
        #expect(Ex.hashedText(fingerprint, domain: PushFingerprint.batchDomain) == Ex.b1Normalized)
        #expect(fingerprint.preimage.count == 759)
        #expect(fingerprint.hex == "098e76e29b672364107efe3fc2803dcb88f5ab8ee0a8f4bc5c64ad10bf99d9da")
    }

    @Test("B1 without atomic is tagged batch-v1 and gives the control fingerprint")
    func b1NonAtomic() throws {
        let fingerprint = try PushFingerprint.batch(Ex.request(Ex.b1(atomic: false)), authenticatedUserID: Ex.user)
        #expect(fingerprint.normalized.arrayValue?.first == .string("batch-v1"))
        #expect(fingerprint.hex == "6d308e036e8843013152f4bb3ba6fff24e621d7bcc4929de4e0d908114d21a6f")
    }

    @Test("the §4.10 update normalizes to the 310-octet text of wire-protocol §2.11")
    func notesUpdate() throws {
        let canonical = try CanonicalJSON.encode(PushFingerprint.normalizedMutation(Ex.mutation(Ex.notesUpdate)))
        #expect(Ex.text(canonical) == Ex.notesUpdateNormalized)
        #expect(canonical.count == 310)
    }

    @Test("the vector shape and the wire shape give identical batch and mutation fingerprints",
          arguments: [true, false])
    func shapesAgree(atomic: Bool) throws {
        let wire = try Ex.request(Ex.b1(atomic: atomic))
        let vector = try Ex.request(Ex.b1Vector(atomic: atomic), shape: .conformanceVector)
        #expect(vector == wire)
        let wireBatch = try PushFingerprint.batch(wire, authenticatedUserID: Ex.user)
        let vectorBatch = try PushFingerprint.batch(vector, authenticatedUserID: Ex.user)
        #expect(vectorBatch.preimage == wireBatch.preimage)
        #expect(
            try PushFingerprint.mutations(of: vector, authenticatedUserID: Ex.user)
                == PushFingerprint.mutations(of: wire, authenticatedUserID: Ex.user))
        #expect(
            try PushFingerprint.mutations(of: vector, authenticatedUserID: Ex.user)[1].hex
                == "3f4cf5bebb9e8661d8ede6e5c74cca6a527a309f790c58fa6cb0cee0d1adc3b3")
    }

    @Test("a lone vector-shape mutation fingerprints like its wire twin")
    func loneVectorMutation() throws {
        let vectorM1 = #"""
            {"mutation_id":"3c0f6a52-9d1e-4b7a-8f20-6e5d4c3b2a19","table_id":"tbl_tasks",
             "pk":{"field_id":"fld_task_id","value":"task-001"},
             "authored_schema":{"version":3,"hash":"a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"},
             "operation":"update","base_version":"v-101","client_version":"2026-01-02T03:05:00.000000Z",
             "columns":[{"field_id":"fld_task_points","value":null},
                        {"field_id":"fld_task_title","value":"Buy oat milk"}]}
            """#
        let fingerprint = try PushFingerprint.mutation(
            Ex.mutation(vectorM1, shape: .conformanceVector), authenticatedUserID: Ex.user, clientID: Ex.client)
        #expect(fingerprint.hex == "3f4cf5bebb9e8661d8ede6e5c74cca6a527a309f790c58fa6cb0cee0d1adc3b3")
    }

    @Test("reordering the mutations changes the batch fingerprint")
    func orderMatters() throws {
        let request = try Ex.request(Ex.b1(atomic: false))
        let reversed = try PushRequest(
            clientID: request.clientID, clientGeneration: request.clientGeneration, batchID: request.batchID,
            schema: request.schema, isAtomic: false, mutations: request.mutations.reversed())
        #expect(
            try PushFingerprint.batch(reversed, authenticatedUserID: Ex.user)
                != PushFingerprint.batch(request, authenticatedUserID: Ex.user))
    }

    @Test("a successor batch with a new generation and schema keeps every mutation fingerprint")
    func successorBatch() throws {
        let request = try Ex.request(Ex.b1(atomic: false))
        let successor = try PushRequest(
            clientID: request.clientID, clientGeneration: 13, batchID: "0b9f4c1e-8d2a-4f6b-9c3d-5e7a1b2c3d4f",
            schema: SchemaReference(version: 4, hash: String(repeating: "a", count: 64)), isAtomic: false,
            mutations: request.mutations)
        #expect(
            try PushFingerprint.mutations(of: successor, authenticatedUserID: Ex.user)
                == PushFingerprint.mutations(of: request, authenticatedUserID: Ex.user))
        #expect(
            try PushFingerprint.batch(successor, authenticatedUserID: Ex.user)
                != PushFingerprint.batch(request, authenticatedUserID: Ex.user))
    }

    @Test("absent columns normalize to [0] and present-empty columns to [1,[]]")
    func absentVersusEmpty() throws {
        let insert = try Ex.mutation(
            #"{"mutation_id":"00000000-0000-4000-8000-000000000011","table":"t","pk":{"id":"k"},"authored_schema":"#
                + #"{"version":1,"hash":"\#(Ex.hash3)"},"op":"insert","client_version":"2024-02-29T12:34:56.123456Z","#
                + #""columns":{}}"#)
        let delete = try Ex.mutation(
            #"{"mutation_id":"00000000-0000-4000-8000-000000000011","table":"t","pk":{"id":"k"},"authored_schema":"#
                + #"{"version":1,"hash":"\#(Ex.hash3)"},"op":"delete","base_version":"v","#
                + #""client_version":"2024-02-29T12:34:56.123456Z"}"#)
        let absent = JSONValue.array([.number(JSONNumber(0))])
        let presentEmpty = JSONValue.array([.number(JSONNumber(1)), .array([])])
        #expect(PushFingerprint.normalizedMutation(insert).arrayValue?.last == presentEmpty)
        #expect(PushFingerprint.normalizedMutation(delete).arrayValue?.last == absent)
        #expect(PushFingerprint.normalizedMutation(insert).arrayValue?[6] == absent)
    }

    @Test("escaped input text fingerprints like its decoded form")
    func escapesAreDecoded() throws {
        let escaped = Ex.m1.replacing("task-001", with: #"task\u002d001"#)
        #expect(escaped != Ex.m1)
        #expect(
            try PushFingerprint.mutation(Ex.mutation(escaped), authenticatedUserID: Ex.user, clientID: Ex.client).hex
                == "3f4cf5bebb9e8661d8ede6e5c74cca6a527a309f790c58fa6cb0cee0d1adc3b3")
    }

    @Test("column pairs are ordered by UTF-8 octets, not by the UTF-16 order of RFC 8785")
    func utf8ColumnOrder() throws {
        let mutation = try PushMutation(
            mutationID: "00000000-0000-4000-8000-000000000001", table: "t", pkFieldID: "id", pkValue: .string("k"),
            authoredSchema: SchemaReference(version: 1, hash: Ex.hash3), operation: .insert, baseVersion: nil,
            clientVersion: "2024-02-29T12:34:56.123456Z",
            columns: [JSONMember("\u{10000}", .number(JSONNumber(1))), JSONMember("\u{E000}", .number(JSONNumber(2)))])
        let text = try CanonicalJSON.string(PushFingerprint.normalizedMutation(mutation))
        #expect(text.hasSuffix("[1,[[\"\u{E000}\",2],[\"\u{10000}\",1]]]]"))
    }

    @Test("numbers are fingerprinted in their RFC 8785 form")
    func numbersAreCanonicalized() throws {
        let request = try Ex.request(Ex.b1())
        let rewritten = try Ex.request(Ex.b1().replacing("0.25", with: "2.5e-1"))
        #expect(
            try PushFingerprint.batch(rewritten, authenticatedUserID: Ex.user)
                == PushFingerprint.batch(request, authenticatedUserID: Ex.user))
    }

    @Test("an empty or noncharacter authenticated user ID or client ID is refused", arguments: ["", "u\u{FFFE}"])
    func identityStrings(identity: String) throws {
        let m1 = try Ex.mutation(Ex.m1)
        #expect(throws: PushValidationError.invalidAuthenticatedUserID) {
            try PushFingerprint.mutation(m1, authenticatedUserID: identity, clientID: Ex.client)
        }
        #expect(throws: PushValidationError.invalidClientID) {
            try PushFingerprint.mutation(m1, authenticatedUserID: Ex.user, clientID: identity)
        }
        #expect(throws: PushValidationError.invalidAuthenticatedUserID) {
            try PushFingerprint.batch(Ex.request(Ex.b1()), authenticatedUserID: identity)
        }
    }
}
