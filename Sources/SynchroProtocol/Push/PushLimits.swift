/// The push limits and their measures (`spec/integrity.md` §5, `spec/wire-protocol.md` §9).
///
/// The server rejects a request that breaks any limit with 400 `invalid_request` and never clamps;
/// the client applies the same measures when it seals a batch or validates an atomic group.
public enum PushLimits {
    /// Largest request body, counted as the exact octets sent (whitespace included).
    public static let maxRequestBodyOctets = 1_048_576
    /// Largest RFC 8785 form of the parsed request body.
    public static let maxCanonicalRequestOctets = 1_048_576
    /// Largest RFC 8785 form of one `normalized_mutation` (no domain, no scope wrapper).
    public static let maxNormalizedMutationOctets = 65_536
    /// Most authored columns in one mutation.
    public static let maxAuthoredColumns = 256
    /// Most mutations in one request (at least one is required).
    public static let maxMutationsPerRequest = 1000

    /// Worst-case envelope integers: `client_generation` and `schema.version` at 2^53 − 1.
    public static let reservedEnvelopeInteger: Int64 = SchemaReference.maxProtocolInteger
    /// A 36-octet stand-in for the batch UUID of a future (successor) batch.
    public static let reservedBatchID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
    /// A 64-octet stand-in for the schema hash of a future manifest.
    public static let reservedSchemaHash = String(repeating: "f", count: 64)
    /// The 64-octet `base_version` used when the real one is not known yet (the longest a server
    /// version can be, `spec/wire-protocol.md` §2.8).
    public static let baseVersionPlaceholder = String(repeating: "~", count: 64)

    /// The request measured with an empty `mutations` array and worst-case envelope values, so that
    /// any successor batch of the same mutations also fits (`spec/integrity.md` §5.2).
    public struct ReservedEnvelope: Sendable, Hashable {
        /// Octets of the envelope in the client's body form (compact, wire member order).
        public let bodyOctets: Int
        /// Octets of its RFC 8785 form.
        public let canonicalOctets: Int
        /// ``bodyOctets`` with `"atomic":true` added.
        public let atomicBodyOctets: Int
        /// ``canonicalOctets`` with `"atomic":true` added.
        public let atomicCanonicalOctets: Int

        /// The body measure for an atomic or ordinary request.
        public func bodyOctets(atomic: Bool) -> Int { atomic ? atomicBodyOctets : bodyOctets }

        /// The canonical measure for an atomic or ordinary request.
        public func canonicalOctets(atomic: Bool) -> Int { atomic ? atomicCanonicalOctets : canonicalOctets }
    }

    /// Per-mutation measures: N, C, E.body and E.canon.
    public struct MutationMeasurement: Sendable, Hashable {
        /// N: RFC 8785 octets of the normalized mutation.
        public let normalizedOctets: Int
        /// C: number of authored columns (0 when `columns` is absent).
        public let authoredColumns: Int
        /// E.body: octets of the mutation object as it appears (or will appear) in the body.
        public let elementBodyOctets: Int
        /// E.canon: RFC 8785 octets of the mutation object.
        public let elementCanonicalOctets: Int

        /// N ≤ 65,536 and C ≤ 256.
        public var isWithinMutationLimits: Bool {
            normalizedOctets <= maxNormalizedMutationOctets && authoredColumns <= maxAuthoredColumns
        }
    }

    /// Every measure of one request.
    public struct RequestMeasurement: Sendable, Hashable {
        /// Exact body octets (received bytes, or the client body form for an in-memory request).
        public let bodyOctets: Int
        /// RFC 8785 octets of the body.
        public let canonicalOctets: Int
        /// Whether the request is atomic, which selects the atomic reserved envelope.
        public let isAtomic: Bool
        /// One measurement per mutation, in request order.
        public let mutations: [MutationMeasurement]
        /// The worst-case envelope for this request's client ID.
        public let reservedEnvelope: ReservedEnvelope

        /// `envelope + Σ E.body + (n − 1)` with the worst-case envelope (atomic when the request is).
        public var reservedBodyOctets: Int {
            reservedEnvelope.bodyOctets(atomic: isAtomic) + mutations.reduce(0) { $0 + $1.elementBodyOctets }
                + mutations.count - 1
        }

        /// `envelope + Σ E.canon + (n − 1)` with the worst-case envelope.
        public var reservedCanonicalOctets: Int {
            reservedEnvelope.canonicalOctets(atomic: isAtomic)
                + mutations.reduce(0) { $0 + $1.elementCanonicalOctets } + mutations.count - 1
        }

        /// Every server limit holds for the request as it is.
        public var isWithinServerLimits: Bool {
            bodyOctets <= maxRequestBodyOctets && canonicalOctets <= maxCanonicalRequestOctets
                && (1...maxMutationsPerRequest).contains(mutations.count)
                && mutations.allSatisfy(\.isWithinMutationLimits)
        }

        /// The client's seal-time rule: the server limits and both worst-case totals hold.
        public var isWithinSealLimits: Bool {
            isWithinServerLimits && reservedBodyOctets <= maxRequestBodyOctets
                && reservedCanonicalOctets <= maxCanonicalRequestOctets
        }
    }

    /// The reserved envelope for `clientID` (`spec/integrity.md` §5.2, §8.6).
    public static func reservedEnvelope(clientID: String) throws(PushValidationError) -> ReservedEnvelope {
        try PushRequest.check(clientID: clientID)
        return reservedEnvelope(validClientID: clientID)
    }

    static func reservedEnvelope(validClientID clientID: String) -> ReservedEnvelope {
        func envelope(atomic: Bool) -> JSONValue {
            var members = [
                JSONMember("client_id", .string(clientID)),
                JSONMember("client_generation", .number(JSONNumber(reservedEnvelopeInteger))),
                JSONMember("batch_id", .string(reservedBatchID)),
                JSONMember("schema", .object(JSONObject([
                    JSONMember("version", .number(JSONNumber(reservedEnvelopeInteger))),
                    JSONMember("hash", .string(reservedSchemaHash)),
                ]))),
            ]
            if atomic { members.append(JSONMember("atomic", .bool(true))) }
            members.append(JSONMember("mutations", .array([])))
            return .object(JSONObject(members))
        }
        let plain = envelope(atomic: false)
        let atomic = envelope(atomic: true)
        return ReservedEnvelope(
            bodyOctets: PushWireWriter.encodeValidated(plain).count,
            canonicalOctets: canonicalCount(plain),
            atomicBodyOctets: PushWireWriter.encodeValidated(atomic).count,
            atomicCanonicalOctets: canonicalCount(atomic))
    }

    /// Measures one mutation in its wire form. With `baseVersionKnown: false` an update or delete is
    /// measured with the 64-octet placeholder instead of its base version, as at seal time before the
    /// predecessor's outcome has fixed it.
    public static func measure(_ mutation: PushMutation, baseVersionKnown: Bool = true) -> MutationMeasurement {
        var element = mutation.wireJSON
        var normalized = PushFingerprint.normalizedMutation(mutation)
        if !baseVersionKnown && mutation.baseVersion != nil {
            element = replacingBaseVersion(in: element)
            normalized = PushFingerprint.normalizedMutation(
                mutationID: mutation.mutationID, table: mutation.table, pkFieldID: mutation.pkFieldID,
                pkValue: mutation.pkValue, authoredSchema: mutation.authoredSchema, operation: mutation.operation,
                baseVersion: baseVersionPlaceholder, clientVersion: mutation.clientVersion, columns: mutation.columns)
        }
        return MutationMeasurement(
            normalizedOctets: canonicalCount(normalized),
            authoredColumns: mutation.authoredColumnCount,
            elementBodyOctets: PushWireWriter.encodeValidated(element).count,
            elementCanonicalOctets: canonicalCount(element))
    }

    /// Measures a request built in memory, whose body is ``PushRequest/wireBody()``.
    public static func measure(_ request: PushRequest) -> RequestMeasurement {
        RequestMeasurement(
            bodyOctets: request.wireBody().count,
            canonicalOctets: canonicalCount(request.wireJSON),
            isAtomic: request.isAtomic,
            mutations: request.mutations.map { measure($0) },
            reservedEnvelope: reservedEnvelope(validClientID: request.clientID))
    }

    /// Measures a received body: exact body and element octets, canonical measures of the input as
    /// parsed, N and C from the validated mutations.
    public static func measure(_ received: ReceivedPushBody) -> RequestMeasurement {
        let request = received.request
        let mutations = request.mutations.indices.map { i in
            MutationMeasurement(
                normalizedOctets: request.mutations[i].normalizedMutationOctets,
                authoredColumns: request.mutations[i].authoredColumnCount,
                elementBodyOctets: received.elementBodyOctets[i],
                elementCanonicalOctets: received.elementCanonicalOctets[i])
        }
        return RequestMeasurement(
            bodyOctets: received.bodyOctets, canonicalOctets: received.canonicalOctets,
            isAtomic: request.isAtomic, mutations: mutations,
            reservedEnvelope: reservedEnvelope(validClientID: request.clientID))
    }

    private static func replacingBaseVersion(in element: JSONValue) -> JSONValue {
        guard case .object(let object) = element else { return element }
        return .object(JSONObject(object.members.map { member in
            member.key.exactlyEquals("base_version") ? JSONMember(member.key, .string(baseVersionPlaceholder)) : member
        }))
    }

    /// Canonical length of data that validation (or this file) built from I-JSON-clean parts.
    private static func canonicalCount(_ value: JSONValue) -> Int {
        do {
            return try CanonicalJSON.encode(value).count
        } catch {
            preconditionFailure("validated push data has an RFC 8785 form")
        }
    }
}
