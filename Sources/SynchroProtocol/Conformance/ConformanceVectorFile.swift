/// A file in the upstream conformance vector format (`spec/integrity.md` §8.7):
/// `{vector_set_id, vectors: [...], aggregate: {...}}`.
public struct ConformanceVectorFile: Sendable {
    public let vectorSetId: String
    public let vectors: [ConformanceVector]
    public let aggregate: Aggregate?

    /// The declared aggregate over every vector's expected hashes.
    public struct Aggregate: Sendable {
        public let algorithm: String
        public let vectorCount: Int64
        /// The aggregate members exactly as the file holds them, re-hashed to check `sha256`.
        public let hashedBody: JSONValue
        public let sha256: String
    }

    /// Why a file is not in the vector format at all (as opposed to a vector that fails).
    public struct FormatError: Error, Sendable, Equatable, CustomStringConvertible {
        public let rule: String
        public let detail: String

        init(_ rule: String, _ detail: String) {
            self.rule = rule
            self.detail = detail
        }

        public var description: String { "malformed vector file: \(rule): \(detail)" }
    }

    /// Parses and checks the structure of a vector file (not the vectors' content).
    public init(bytes: [UInt8]) throws(FormatError) {
        let root: JSONValue
        do {
            root = try StrictJSONParser().parse(bytes)
        } catch {
            throw FormatError("invalid_json", error.description)
        }
        guard case .object(let object) = root else { throw FormatError("not_an_object", "the file is not a JSON object") }
        guard case .string(let setId)? = object["vector_set_id"] else {
            throw FormatError("missing_member", "vector_set_id must be a string")
        }
        guard case .array(let items)? = object["vectors"] else {
            throw FormatError("missing_member", "vectors must be an array")
        }
        var vectors: [ConformanceVector] = []
        vectors.reserveCapacity(items.count)
        var seen = Set<String>()
        for (index, item) in items.enumerated() {
            let vector = try ConformanceVector(json: item, index: index)
            guard seen.insert(vector.id).inserted else {
                throw FormatError("duplicate_vector_id", "vector \(index) repeats vector_id \(vector.id)")
            }
            vectors.append(vector)
        }
        self.vectorSetId = setId
        self.vectors = vectors
        self.aggregate = try object["aggregate"].map { value throws(FormatError) in try Self.aggregate(value) }
    }

    private static func aggregate(_ value: JSONValue) throws(FormatError) -> Aggregate {
        guard case .object(let object) = value,
              case .string(let algorithm)? = object["algorithm"],
              case .number(let count)? = object["vector_count"], let vectorCount = count.exactInt64,
              case .array? = object["vector_hashes"],
              case .string(let sha256)? = object["sha256"]
        else {
            throw FormatError("invalid_aggregate", "aggregate needs algorithm, vector_count, vector_hashes, sha256")
        }
        let body = JSONObject(object.members.filter { !$0.key.exactlyEquals("sha256") })
        return Aggregate(algorithm: algorithm, vectorCount: vectorCount, hashedBody: .object(body), sha256: sha256)
    }
}

/// One vector: an input of a given kind, whether it is valid, and what it must produce.
public struct ConformanceVector: Sendable {
    public let id: String
    public let kind: String
    public let valid: Bool
    public let input: JSONObject
    /// Hex of the exact octets a valid vector produces (the full preimage for digest kinds).
    public let canonicalBytesHex: String?
    /// SHA-256 hex of those octets.
    public let expectedBytesSHA256: String?
    /// The digest for digest kinds (schema hash, row/scope digest, fingerprints); null otherwise.
    public let expectedSHA256: String?

    init(json: JSONValue, index: Int) throws(ConformanceVectorFile.FormatError) {
        typealias Failure = ConformanceVectorFile.FormatError
        guard case .object(let object) = json else { throw Failure("invalid_vector", "vector \(index) is not an object") }
        guard case .string(let id)? = object["vector_id"], !id.isEmpty else {
            throw Failure("invalid_vector", "vector \(index) has no vector_id")
        }
        guard case .string(let kind)? = object["kind"] else { throw Failure("invalid_vector", "\(id) has no kind") }
        guard case .bool(let valid)? = object["valid"] else { throw Failure("invalid_vector", "\(id) has no valid flag") }
        guard case .object(let input)? = object["input"] else { throw Failure("invalid_vector", "\(id) has no input") }
        guard case .object(let expected)? = object["expected"] else {
            throw Failure("invalid_vector", "\(id) has no expected object")
        }
        func optionalString(_ name: String) throws(Failure) -> String? {
            switch expected[name] {
            case nil, .null?: return nil
            case .string(let s)?: return s
            default: throw Failure("invalid_vector", "\(id) expected.\(name) is neither a string nor null")
            }
        }
        self.id = id
        self.kind = kind
        self.valid = valid
        self.input = input
        self.canonicalBytesHex = try optionalString("canonical_bytes_hex")
        self.expectedBytesSHA256 = try optionalString("expected_bytes_sha256")
        self.expectedSHA256 = try optionalString("expected_sha256")
        if valid && (canonicalBytesHex == nil || expectedBytesSHA256 == nil) {
            throw Failure("invalid_vector", "\(id) is valid but has no expected bytes")
        }
    }
}
