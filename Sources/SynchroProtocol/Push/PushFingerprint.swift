/// A push batch or mutation fingerprint (`spec/integrity.md` §3.2–§3.3): the normalized array that is
/// hashed, its preimage `domain || 0x00 || RFC8785_UTF8(array)` and the SHA-256 digest.
///
/// The server uses these to replay a completed batch exactly and to detect identifier reuse; the
/// client must keep every input so that a retry reproduces the same batch fingerprint.
public struct PushFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// Domain of the batch fingerprint.
    public static let batchDomain = "synchro:v3:push-batch-fingerprint:v1"
    /// Domain of the mutation fingerprint.
    public static let mutationDomain = "synchro:v3:push-mutation-fingerprint:v1"

    /// The hashed array: `normalized_batch` or `normalized_mutation_scope`.
    public let normalized: JSONValue
    /// The full hash preimage, domain and zero octet included (the vectors' `canonical_bytes_hex`).
    public let preimage: [UInt8]
    /// SHA-256 of ``preimage``.
    public let digest: [UInt8]

    private init(domain: String, normalized: JSONValue) throws(PushValidationError) {
        var writer = OctetWriter(domain: domain, capacity: 512)
        do {
            writer.append(try CanonicalJSON.encode(normalized))
        } catch {
            throw .valueNotIJSON(mutationIndex: nil)
        }
        self.normalized = normalized
        self.preimage = writer.bytes
        self.digest = SHA256.hash(writer.bytes)
    }

    /// The digest in lowercase hex.
    public var hex: String { Hex.encode(digest) }

    /// The digest only: the hashed content stays out of logs.
    public var description: String { hex }

    /// Two fingerprints are equal when their preimages are: arrays that differ only in number
    /// spelling (`0.25` and `2.5e-1`) hash the same.
    public static func == (lhs: PushFingerprint, rhs: PushFingerprint) -> Bool {
        lhs.preimage == rhs.preimage
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    /// The mutation fingerprint, scoped by the server-side user identity and the client ID.
    public static func mutation(
        _ mutation: PushMutation, authenticatedUserID: String, clientID: String
    ) throws(PushValidationError) -> PushFingerprint {
        guard authenticatedUserID.isCleanPushIdentity else { throw .invalidAuthenticatedUserID }
        try PushRequest.check(clientID: clientID)
        return try PushFingerprint(
            domain: mutationDomain,
            normalized: normalizedMutationScope(mutation, authenticatedUserID: authenticatedUserID, clientID: clientID))
    }

    /// The batch fingerprint of a validated request.
    public static func batch(_ request: PushRequest, authenticatedUserID: String) throws(PushValidationError)
        -> PushFingerprint
    {
        guard authenticatedUserID.isCleanPushIdentity else { throw .invalidAuthenticatedUserID }
        return try PushFingerprint(
            domain: batchDomain, normalized: normalizedBatch(request, authenticatedUserID: authenticatedUserID))
    }

    /// Every mutation fingerprint of a request, in request order.
    public static func mutations(of request: PushRequest, authenticatedUserID: String) throws(PushValidationError)
        -> [PushFingerprint]
    {
        var result: [PushFingerprint] = []
        result.reserveCapacity(request.mutations.count)
        for mutation in request.mutations {
            let fingerprint = try PushFingerprint.mutation(
                mutation, authenticatedUserID: authenticatedUserID, clientID: request.clientID)
            result.append(fingerprint)
        }
        return result
    }
}

// MARK: - Normalized arrays

extension PushFingerprint {
    /// `schema_ref(s) = ["<version as decimal string>", "<hash>"]`.
    public static func schemaRef(_ schema: SchemaReference) -> JSONValue {
        .array([.string(String(schema.version)), .string(schema.hash)])
    }

    /// `normalized_mutation`: the array whose RFC 8785 octets the 65,536-octet limit measures.
    public static func normalizedMutation(_ mutation: PushMutation) -> JSONValue {
        normalizedMutation(
            mutationID: mutation.mutationID, table: mutation.table, pkFieldID: mutation.pkFieldID,
            pkValue: mutation.pkValue, authoredSchema: mutation.authoredSchema, operation: mutation.operation,
            baseVersion: mutation.baseVersion, clientVersion: mutation.clientVersion, columns: mutation.columns)
    }

    /// `["mutation-scope-v1", authenticated_user_id, client_id, normalized_mutation]`.
    public static func normalizedMutationScope(
        _ mutation: PushMutation, authenticatedUserID: String, clientID: String
    ) -> JSONValue {
        .array([
            .string("mutation-scope-v1"), .string(authenticatedUserID), .string(clientID),
            normalizedMutation(mutation),
        ])
    }

    /// `normalized_batch`; the tag is `atomic-batch-v1` exactly when the request is atomic, and the
    /// mutations keep request order.
    public static func normalizedBatch(_ request: PushRequest, authenticatedUserID: String) -> JSONValue {
        .array([
            .string(request.isAtomic ? "atomic-batch-v1" : "batch-v1"),
            .string(authenticatedUserID),
            .string(request.clientID),
            .string(String(request.clientGeneration)),
            .string(request.batchID),
            schemaRef(request.schema),
            .array(request.mutations.map(normalizedMutation)),
        ])
    }

    static func normalizedMutation(
        mutationID: String, table: String, pkFieldID: String, pkValue: JSONValue,
        authoredSchema: SchemaReference, operation: PushOperation, baseVersion: String?,
        clientVersion: String, columns: [JSONMember]?
    ) -> JSONValue {
        let base: JSONValue = baseVersion.map { .array([.number(JSONNumber(1)), .string($0)]) }
            ?? .array([.number(JSONNumber(0))])
        let normalizedColumns: JSONValue
        if let columns {
            // Pairs in unsigned UTF-8 octet order of the field ID (not the UTF-16 order of RFC 8785).
            let pairs = columns.sorted { $0.key.utf8Precedes($1.key) }
                .map { JSONValue.array([.string($0.key), $0.value]) }
            normalizedColumns = .array([.number(JSONNumber(1)), .array(pairs)])
        } else {
            normalizedColumns = .array([.number(JSONNumber(0))])
        }
        return .array([
            .string("mutation-v1"),
            .string(mutationID),
            .string(table),
            .array([.string(pkFieldID), pkValue]),
            schemaRef(authoredSchema),
            .string(operation.rawValue),
            base,
            .string(clientVersion),
            normalizedColumns,
        ])
    }
}
