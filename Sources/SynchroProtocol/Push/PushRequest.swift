/// A validated push request (`spec/wire-protocol.md` §4.1, `spec/integrity.md` §3.4).
///
/// Holding one means every structural rule that precedes fingerprinting holds: exact envelope,
/// 1…1000 valid mutations, no `mutation_id` twice and, when atomic, no row addressed twice.
/// The body-size limits need the received octets; ``ReceivedPushBody`` checks those.
public struct PushRequest: Sendable, Hashable, CustomStringConvertible {
    /// The client installation, scoped to the authenticated user.
    public let clientID: String
    /// The current client generation, 1…2^53−1.
    public let clientGeneration: Int64
    /// Canonical lowercase UUID, fixed before first transmission.
    public let batchID: String
    /// The request (current) schema: wire `schema`, vector `request_schema`.
    public let schema: SchemaReference
    /// True exactly when the request carries `"atomic": true`.
    public let isAtomic: Bool
    /// The mutations in sealed (request) order, which the batch fingerprint covers.
    public let mutations: [PushMutation]

    /// Validates and builds a request from already validated mutations, as a client does when it
    /// seals a batch.
    public init(
        clientID: String, clientGeneration: Int64, batchID: String, schema: SchemaReference,
        isAtomic: Bool, mutations: [PushMutation]
    ) throws(PushValidationError) {
        try Self.check(clientID: clientID)
        guard (1...SchemaReference.maxProtocolInteger).contains(clientGeneration) else {
            throw .invalidClientGeneration
        }
        guard WireFormats.isCanonicalUUID(batchID) else { throw .invalidBatchID }
        guard !mutations.isEmpty else { throw .noMutations }
        guard mutations.count <= PushLimits.maxMutationsPerRequest else {
            throw .tooManyMutations(count: mutations.count)
        }
        try Self.checkDistinct(mutations, atomic: isAtomic)
        self.clientID = clientID
        self.clientGeneration = clientGeneration
        self.batchID = batchID
        self.schema = schema
        self.isAtomic = isAtomic
        self.mutations = mutations
    }

    /// Parses and validates a request body, including both body-size limits.
    public static func parse(body: [UInt8], shape: PushShape) throws(PushValidationError) -> PushRequest {
        try ReceivedPushBody.parse(body, shape: shape).request
    }

    /// The request object in the given input shape, envelope members in wire order.
    public func json(shape: PushShape) -> JSONValue {
        var members = [
            JSONMember("client_id", .string(clientID)),
            JSONMember("client_generation", .number(JSONNumber(clientGeneration))),
            JSONMember("batch_id", .string(batchID)),
            JSONMember(shape.schemaMember, schema.json),
        ]
        if isAtomic { members.append(JSONMember("atomic", .bool(true))) }
        members.append(JSONMember("mutations", .array(mutations.map { $0.json(shape: shape) })))
        return .object(JSONObject(members))
    }

    /// The wire object a client sends.
    public var wireJSON: JSONValue { json(shape: .wire) }

    /// The body a client stores at seal time and sends byte for byte on every retry: compact JSON in
    /// wire member order with RFC 8785 strings and numbers.
    public func wireBody() -> [UInt8] {
        PushWireWriter.encodeValidated(wireJSON)
    }

    /// Names the batch and its size only: never client content.
    public var description: String {
        "PushRequest(batch \(batchID), \(mutations.count) mutations\(isAtomic ? ", atomic" : ""))"
    }

    public static func == (lhs: PushRequest, rhs: PushRequest) -> Bool {
        lhs.clientID.exactlyEquals(rhs.clientID) && lhs.clientGeneration == rhs.clientGeneration
            && lhs.batchID.exactlyEquals(rhs.batchID) && lhs.schema == rhs.schema && lhs.isAtomic == rhs.isAtomic
            && lhs.mutations == rhs.mutations
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(clientID.utf8))
        hasher.combine(clientGeneration)
        hasher.combine(Array(batchID.utf8))
        hasher.combine(isAtomic)
        hasher.combine(mutations)
    }
}

// MARK: - Rules

extension PushRequest {
    static func check(clientID: String) throws(PushValidationError) {
        guard clientID.isCleanPushIdentity else { throw .invalidClientID }
    }

    /// An atomic row is (table, pk field ID, RFC 8785 pk value): `"a-b"` and `"a\u002db"` coincide.
    private struct RowKey: Hashable {
        let table: [UInt8]
        let fieldID: [UInt8]
        let canonicalValue: [UInt8]
    }

    private static func checkDistinct(_ mutations: [PushMutation], atomic: Bool) throws(PushValidationError) {
        var mutationIDs = Set<[UInt8]>(minimumCapacity: mutations.count)
        var rows = Set<RowKey>()
        for (index, mutation) in mutations.enumerated() {
            guard mutationIDs.insert(Array(mutation.mutationID.utf8)).inserted else {
                throw .duplicateMutationID(mutationIndex: index)
            }
            guard atomic else { continue }
            let canonicalValue: [UInt8]
            do {
                canonicalValue = try CanonicalJSON.encode(mutation.pkValue)
            } catch {
                throw .valueNotIJSON(mutationIndex: index)
            }
            let key = RowKey(
                table: Array(mutation.table.utf8), fieldID: Array(mutation.pkFieldID.utf8),
                canonicalValue: canonicalValue)
            guard rows.insert(key).inserted else { throw .duplicateAtomicRow(mutationIndex: index) }
        }
    }
}

// MARK: - Parsing

extension PushRequest {
    /// Validates a parsed request object of the given shape (no body-size limits).
    public static func parse(json: JSONValue, shape: PushShape) throws(PushValidationError) -> PushRequest {
        guard case .object(let object) = json else { throw .requestNotObject }
        let reader = PushMemberReader(object: object)
        if let missing = reader.firstMissing(shape.requiredEnvelopeMembers) {
            throw .missingMember(missing, mutationIndex: nil)
        }
        guard !reader.hasUnknownMember(allowed: shape.allowedEnvelopeMembers) else {
            throw .unknownMember(mutationIndex: nil)
        }

        guard let clientID = reader["client_id"]?.stringValue else { throw .invalidClientID }
        try check(clientID: clientID)
        let clientGeneration = try parseClientGeneration(reader["client_generation"])
        guard let batchID = reader["batch_id"]?.stringValue, WireFormats.isCanonicalUUID(batchID) else {
            throw .invalidBatchID
        }
        let schema = try PushMutation.parseSchemaReference(
            reader[shape.schemaMember], member: shape.schemaMember, nil)
        let isAtomic = try parseAtomic(reader["atomic"])
        guard case .array(let elements)? = reader["mutations"] else { throw .mutationsNotArray }
        guard !elements.isEmpty else { throw .noMutations }
        guard elements.count <= PushLimits.maxMutationsPerRequest else {
            throw .tooManyMutations(count: elements.count)
        }

        var mutations: [PushMutation] = []
        mutations.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            mutations.append(try PushMutation.parse(json: element, shape: shape, index: index))
        }
        return try PushRequest(
            clientID: clientID, clientGeneration: clientGeneration, batchID: batchID, schema: schema,
            isAtomic: isAtomic, mutations: mutations)
    }

    /// A plain integer literal (no fraction, exponent or `-0`) in 1…2^53−1 (`spec/wire-protocol.md` §2.2).
    private static func parseClientGeneration(_ value: JSONValue?) throws(PushValidationError) -> Int64 {
        guard case .number(let number)? = value, !number.isNegativeZeroLiteral, let generation = number.exactInt64,
            (1...SchemaReference.maxProtocolInteger).contains(generation)
        else { throw .invalidClientGeneration }
        return generation
    }

    /// One encoding per meaning: absent is non-atomic, `false` is invalid.
    private static func parseAtomic(_ value: JSONValue?) throws(PushValidationError) -> Bool {
        switch value {
        case nil: return false
        case .bool(true)?: return true
        default: throw .invalidAtomic
        }
    }
}

/// A request body as received, validated against every structural rule and both body limits, with
/// the octet measures the limits use (`spec/integrity.md` §5.1).
public struct ReceivedPushBody: Sendable, Hashable {
    /// The validated request.
    public let request: PushRequest
    /// The input shape the body was parsed as.
    public let shape: PushShape
    /// Exact octets of the body, whitespace included.
    public let bodyOctets: Int
    /// Octets of the RFC 8785 form of the parsed body (integers as binary64, no safe-integer check).
    public let canonicalOctets: Int
    /// E.body per mutation: octets of each `mutations` element exactly as it appears in the body.
    public let elementBodyOctets: [Int]
    /// E.canon per mutation: RFC 8785 octets of each element as parsed (in the input shape).
    public let elementCanonicalOctets: [Int]

    /// Checks the body limit first (as the adapter does while reading), then parses strictly,
    /// validates the structure and finally measures the canonical form.
    public static func parse(_ body: [UInt8], shape: PushShape) throws(PushValidationError) -> ReceivedPushBody {
        guard body.count <= PushLimits.maxRequestBodyOctets else {
            throw .requestBodyTooLarge(octets: body.count)
        }
        let json: JSONValue
        do {
            json = try StrictJSONParser().parse(body)
        } catch {
            throw PushValidationError(error)
        }
        let request = try PushRequest.parse(json: json, shape: shape)

        let canonicalOctets: Int
        var elementCanonical: [Int] = []
        do {
            canonicalOctets = try CanonicalJSON.encode(json).count
            for element in json.objectValue?["mutations"]?.arrayValue ?? [] {
                elementCanonical.append(try CanonicalJSON.encode(element).count)
            }
        } catch {
            throw .valueNotIJSON(mutationIndex: nil)
        }
        guard canonicalOctets <= PushLimits.maxCanonicalRequestOctets else {
            throw .canonicalRequestTooLarge(octets: canonicalOctets)
        }
        let elementBody = PushBodyScanner.mutationElementLengths(in: body)
        precondition(elementBody?.count == request.mutations.count, "a validated body must scan")
        return ReceivedPushBody(
            request: request, shape: shape, bodyOctets: body.count, canonicalOctets: canonicalOctets,
            elementBodyOctets: elementBody ?? [], elementCanonicalOctets: elementCanonical)
    }
}
