import Testing

@testable import SynchroProtocol

@Suite("Push limits")
struct PushLimitsTests {
    typealias Ex = PushSpecExamples

    @Test("the limit constants are those of integrity §5.1")
    func constants() {
        #expect(PushLimits.maxRequestBodyOctets == 1_048_576)
        #expect(PushLimits.maxCanonicalRequestOctets == 1_048_576)
        #expect(PushLimits.maxNormalizedMutationOctets == 65_536)
        #expect(PushLimits.maxAuthoredColumns == 256)
        #expect(PushLimits.maxMutationsPerRequest == 1000)
        #expect(PushLimits.baseVersionPlaceholder.utf8.count == 64)
        #expect(PushLimits.reservedBatchID.utf8.count == 36)
    }

    @Test("the reserved envelope of ios-device-9 is 242 octets, 256 with atomic (integrity §8.6)")
    func reservedEnvelope() throws {
        let envelope = try PushLimits.reservedEnvelope(clientID: Ex.client)
        #expect(envelope.canonicalOctets == 242)
        #expect(envelope.atomicCanonicalOctets == 256)
        #expect(envelope.bodyOctets == 242)
        #expect(envelope.atomicBodyOctets == 256)
        // 230 + the escaped client ID content, as §5.2 states.
        #expect(try PushLimits.reservedEnvelope(clientID: "a\"b").canonicalOctets == 230 + 4)
        #expect(throws: PushValidationError.invalidClientID) { try PushLimits.reservedEnvelope(clientID: "") }
    }

    @Test("B1's insert element is 339 canonical octets and normalizes to 273 with 2 columns (integrity §8.6)")
    func b1Insert() throws {
        let insert = try Ex.mutation(Ex.b1Insert)
        let measurement = PushLimits.measure(insert)
        #expect(measurement.elementCanonicalOctets == 339)
        #expect(measurement.elementBodyOctets == 339)
        #expect(measurement.normalizedOctets == 273)
        #expect(measurement.authoredColumns == 2)

        let request = try PushRequest(
            clientID: Ex.client, clientGeneration: 12, batchID: "0b9f4c1e-8d2a-4f6b-9c3d-5e7a1b2c3d4e",
            schema: SchemaReference(version: 3, hash: Ex.hash3), isAtomic: false, mutations: [insert])
        let total = PushLimits.measure(request)
        #expect(total.reservedCanonicalOctets == 581)
        #expect(total.reservedBodyOctets == 581)
        // The real envelope is shorter than the reserve: "12" and "3" instead of 2^53 − 1 twice.
        #expect(total.canonicalOctets == 581 - 14 - 15)
        #expect(total.isWithinSealLimits)
    }

    @Test("a received body is measured by its exact octets and its elements by their exact spans")
    func receivedMeasures() throws {
        let body = Ex.b1()
        let received = try ReceivedPushBody.parse(Array(body.utf8), shape: .wire)
        let measurement = PushLimits.measure(received)
        #expect(measurement.bodyOctets == body.utf8.count)
        #expect(measurement.mutations.map(\.elementBodyOctets) == [Ex.b1Insert.utf8.count, Ex.m1.utf8.count])
        #expect(measurement.mutations.map(\.elementCanonicalOctets)[0] == 339)
        #expect(measurement.mutations.map(\.normalizedOctets) == [273, 282])
        #expect(measurement.mutations.map(\.authoredColumns) == [2, 2])
        #expect(measurement.canonicalOctets == (try CanonicalJSON.encode(received.request.wireJSON)).count)
        let elements = measurement.mutations.map(\.elementCanonicalOctets)
        #expect(measurement.reservedCanonicalOctets == 256 + elements[0] + elements[1] + 1)
        #expect(measurement.isAtomic)
    }

    @Test("element spans are found behind an escaped member name and inside strings with brackets")
    func escapedSpans() throws {
        let first = PushTemplate.mutation().setting("columns", #"{"fld_text":"]},\"[{"}"#).text
        let second = PushTemplate.mutation(id: "00000000-0000-4000-8000-000000000002").text
        let body = #"{"client_id":"c","client_generation":1,"batch_id":"00000000-0000-4000-8000-000000000010","#
            + #""schema":\#(PushTemplate.schema),"\u006dutations" : [ "# + first + " ,\n\t" + second + " ] }"
        let received = try ReceivedPushBody.parse(Array(body.utf8), shape: .wire)
        #expect(received.elementBodyOctets == [first.utf8.count, second.utf8.count])
    }

    @Test("an unknown base version is measured as the 64-octet placeholder")
    func placeholderBaseVersion() throws {
        let m1 = try Ex.mutation(Ex.m1)
        let known = PushLimits.measure(m1)
        let unknown = PushLimits.measure(m1, baseVersionKnown: false)
        let growth = 64 - "v-101".utf8.count
        #expect(unknown.elementCanonicalOctets == known.elementCanonicalOctets + growth)
        #expect(unknown.elementBodyOctets == known.elementBodyOctets + growth)
        #expect(unknown.normalizedOctets == 282 + growth)
        let insert = try Ex.mutation(Ex.b1Insert)
        #expect(PushLimits.measure(insert, baseVersionKnown: false) == PushLimits.measure(insert))
    }

    /// A canonical UUID numbered `n`.
    static func uuid(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - hex.utf8.count) + hex
    }

    /// An insert whose one string column is `length` octets long.
    static func payloadInsert(length: Int, id: Int = 1) -> PushTemplate {
        PushTemplate.mutation(id: uuid(id), op: "insert", pk: #"{"fld_id":"k-\#(id)"}"#)
            .setting("base_version", nil)
            .setting("columns", #"{"payload":"\#(String(repeating: "x", count: length))"}"#)
    }

    @Test("a normalized mutation of 65,536 octets is accepted and one of 65,537 refused")
    func normalizedBoundary() throws {
        let base = try PushMutation.parse(bytes: Self.payloadInsert(length: 0).bytes, shape: .wire)
        let fitting = PushLimits.maxNormalizedMutationOctets - base.normalizedMutationOctets
        let accepted = try PushMutation.parse(bytes: Self.payloadInsert(length: fitting).bytes, shape: .wire)
        #expect(accepted.normalizedMutationOctets == 65_536)
        #expect(throws: PushValidationError.normalizedMutationTooLarge(octets: 65_537, mutationIndex: nil)) {
            try PushMutation.parse(bytes: Self.payloadInsert(length: fitting + 1).bytes, shape: .wire)
        }
    }

    static func columns(_ count: Int) -> String {
        "{" + (0..<count).map { #""f\#($0)":\#($0)"# }.joined(separator: ",") + "}"
    }

    @Test("256 authored columns are accepted and 257 refused")
    func columnBoundary() throws {
        let accepted = try PushMutation.parse(
            bytes: PushTemplate.mutation().setting("columns", Self.columns(256)).bytes, shape: .wire)
        #expect(accepted.authoredColumnCount == 256)
        #expect(PushLimits.measure(accepted).authoredColumns == 256)
        #expect(throws: PushValidationError.tooManyColumns(count: 257, mutationIndex: nil)) {
            let bytes = PushTemplate.mutation().setting("columns", Self.columns(257)).bytes
            return try PushMutation.parse(bytes: bytes, shape: .wire)
        }
    }

    static func deletes(_ count: Int) -> [PushTemplate] {
        (0..<count).map { i in
            PushTemplate.mutation(id: uuid(i + 1), op: "delete", pk: #"{"fld_id":"k-\#(i)"}"#).setting("columns", nil)
        }
    }

    @Test("1000 mutations are accepted and 1001 refused")
    func mutationCountBoundary() throws {
        let body = PushTemplate.request(Self.deletes(1000), atomic: true).bytes
        let accepted = try PushRequest.parse(body: body, shape: .wire)
        #expect(accepted.mutations.count == 1000)
        #expect(throws: PushValidationError.tooManyMutations(count: 1001)) {
            try PushRequest.parse(body: PushTemplate.request(Self.deletes(1001)).bytes, shape: .wire)
        }
    }

    @Test("a body of 1,048,576 octets is accepted and one of 1,048,577 refused, whitespace included")
    func bodyBoundary() throws {
        let text = PushTemplate.request([PushTemplate.mutation()]).text
        let padding = PushLimits.maxRequestBodyOctets - text.utf8.count
        let exact = Array((text + String(repeating: " ", count: padding)).utf8)
        let received = try ReceivedPushBody.parse(exact, shape: .wire)
        #expect(received.bodyOctets == 1_048_576)
        #expect(received.canonicalOctets < 1000)
        #expect(throws: PushValidationError.requestBodyTooLarge(octets: 1_048_577)) {
            try ReceivedPushBody.parse(exact + [0x20], shape: .wire)
        }
    }

    @Test("the canonical measure counts integers as binary64 and refuses 1,048,577 octets")
    func canonicalBoundary() throws {
        // `1e20` is 4 octets in the body but `100000000000000000000` (21) in RFC 8785 form.
        let wide = "{" + (0..<250).map { #""f\#($0)":1e20"# }.joined(separator: ",") + "}"
        func body(wideCount: Int, padding: Int) -> [UInt8] {
            let pad = Self.payloadInsert(length: padding, id: 1)
            let wides = (0..<wideCount).map { i in
                Self.payloadInsert(length: 0, id: i + 2).setting("columns", wide)
            }
            return PushTemplate.request([pad] + wides).bytes
        }
        func canonical(_ bytes: [UInt8]) throws -> Int {
            try CanonicalJSON.encode(StrictJSONParser().parse(bytes)).count
        }
        let one = try canonical(body(wideCount: 1, padding: 0))
        let perWide = try canonical(body(wideCount: 2, padding: 0)) - one
        let wideCount = (PushLimits.maxCanonicalRequestOctets - one) / perWide + 1
        let fitting = try PushLimits.maxCanonicalRequestOctets - canonical(body(wideCount: wideCount, padding: 0))

        let exact = body(wideCount: wideCount, padding: fitting)
        let received = try ReceivedPushBody.parse(exact, shape: .wire)
        #expect(received.canonicalOctets == 1_048_576)
        #expect(received.bodyOctets < 600_000)
        #expect(throws: PushValidationError.canonicalRequestTooLarge(octets: 1_048_577)) {
            try ReceivedPushBody.parse(body(wideCount: wideCount, padding: fitting + 1), shape: .wire)
        }
    }

    @Test("a request that fits exactly but not with the worst-case envelope reserve cannot be sealed")
    func sealLimits() throws {
        let schema = try SchemaReference(version: 1, hash: PushTemplate.hash)
        func request(lengths: [Int]) throws -> PushRequest {
            let mutations = try lengths.enumerated().map { i, length in
                try PushMutation.parse(bytes: Self.payloadInsert(length: length, id: i + 1).bytes, shape: .wire)
            }
            return try PushRequest(
                clientID: "c", clientGeneration: 1, batchID: Self.uuid(0x10), schema: schema, isAtomic: false,
                mutations: mutations)
        }
        let empty = PushLimits.measure(try request(lengths: Array(repeating: 0, count: 16))).canonicalOctets
        let share = (PushLimits.maxCanonicalRequestOctets - empty) / 16
        let remainder = (PushLimits.maxCanonicalRequestOctets - empty) % 16
        let full = try request(lengths: Array(repeating: share, count: 15) + [share + remainder])
        let measurement = PushLimits.measure(full)

        #expect(measurement.canonicalOctets == 1_048_576)
        #expect(measurement.bodyOctets == 1_048_576)
        #expect(measurement.isWithinServerLimits)
        // Generation and schema version grow to 16 digits and the batch ID is reserved: 30 more octets.
        #expect(measurement.reservedCanonicalOctets == 1_048_576 + 30)
        #expect(!measurement.isWithinSealLimits)
    }
}
