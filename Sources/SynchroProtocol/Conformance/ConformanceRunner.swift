/// Runs conformance vectors: each vector's input goes through the same code the client, server
/// and seed tools use, and the produced octets and digests are compared with the expected ones.
public enum ConformanceRunner {
    /// What running one vector's input produced.
    public enum Evaluation: Sendable, Equatable {
        /// The input was accepted and gave these octets (and, for digest kinds, this digest).
        case produced(bytes: [UInt8], digest: [UInt8]?)
        /// The input was refused for the named rule.
        case rejected(rule: String)
        /// The vector's kind is not one this runner knows.
        case unsupportedKind
        /// The vector's `input` lacks a member its kind needs (a broken vector, never a pass).
        case malformedInput(String)
    }

    /// Runs every vector of `file` and checks the file's aggregate.
    public static func run(_ file: ConformanceVectorFile) -> ConformanceReport {
        let outcomes = file.vectors.map { judge($0, evaluation: evaluate($0)) }
        return ConformanceReport(vectorSetId: file.vectorSetId, outcomes: outcomes, aggregate: checkAggregate(file))
    }

    /// Compares what a vector produced with what it expects.
    static func judge(_ vector: ConformanceVector, evaluation: Evaluation) -> VectorOutcome {
        func outcome(_ passed: Bool, _ detail: String) -> VectorOutcome {
            VectorOutcome(vectorId: vector.id, kind: vector.kind, valid: vector.valid, passed: passed, detail: detail)
        }
        switch evaluation {
        case .unsupportedKind:
            return outcome(false, "unsupported kind \(vector.kind)")
        case .malformedInput(let why):
            return outcome(false, "malformed input: \(why)")
        case .rejected(let rule):
            return vector.valid ? outcome(false, "valid vector rejected: \(rule)") : outcome(true, "rejected: \(rule)")
        case .produced(let bytes, let digest):
            guard vector.valid else { return outcome(false, "invalid vector accepted") }
            if Hex.encode(bytes) != vector.canonicalBytesHex {
                return outcome(false, "canonical bytes differ (\(bytes.count) octets produced)")
            }
            if Hex.encode(SHA256.hash(bytes)) != vector.expectedBytesSHA256 {
                return outcome(false, "expected_bytes_sha256 differs")
            }
            if digest.map(Hex.encode) != vector.expectedSHA256 {
                return outcome(false, "digest differs")
            }
            return outcome(true, "bytes and digest match")
        }
    }

    static let aggregateDomain = "synchro:v3:vector-set-aggregate:v1"

    /// Recomputes `SHA-256(domain || 0x00 || RFC8785({algorithm, vector_count, vector_hashes}))`
    /// and checks that the listed hashes are the vectors' own expectations.
    static func checkAggregate(_ file: ConformanceVectorFile) -> ConformanceReport.AggregateCheck {
        guard let aggregate = file.aggregate else { return .absent }
        guard aggregate.algorithm == "sha-256" else { return .mismatch("unknown aggregate algorithm") }
        guard aggregate.vectorCount == Int64(file.vectors.count) else {
            return .mismatch("vector_count \(aggregate.vectorCount) but the file holds \(file.vectors.count) vectors")
        }
        guard case .object(let body) = aggregate.hashedBody, case .array(let listed)? = body["vector_hashes"],
              listed.count == file.vectors.count
        else { return .mismatch("vector_hashes does not list every vector") }
        for (entry, vector) in zip(listed, file.vectors) {
            let expected = JSONValue.object(JSONObject([
                JSONMember("vector_id", .string(vector.id)),
                JSONMember("expected_bytes_sha256", vector.expectedBytesSHA256.map(JSONValue.string) ?? .null),
                JSONMember("expected_sha256", vector.expectedSHA256.map(JSONValue.string) ?? .null),
            ]))
            guard let lhs = try? CanonicalJSON.encode(entry), let rhs = try? CanonicalJSON.encode(expected), lhs == rhs
            else { return .mismatch("vector_hashes entry for \(vector.id) differs from the vector") }
        }
        var preimage = OctetWriter(domain: aggregateDomain)
        guard let canonical = try? CanonicalJSON.encode(aggregate.hashedBody) else {
            return .mismatch("aggregate body is not I-JSON")
        }
        preimage.append(canonical)
        let computed = Hex.encode(SHA256.hash(preimage.bytes))
        return computed == aggregate.sha256 ? .matches : .mismatch("aggregate sha256 differs from the recomputed value")
    }
}

/// The verdict on one vector.
public struct VectorOutcome: Sendable, Equatable {
    public let vectorId: String
    public let kind: String
    public let valid: Bool
    public let passed: Bool
    /// Why it passed or failed: a rule name or which comparison differed, never input values.
    public let detail: String
}

/// The result of running a vector file.
public struct ConformanceReport: Sendable {
    /// Whether the file's declared aggregate agrees with its vectors.
    public enum AggregateCheck: Sendable, Equatable {
        case absent
        case matches
        case mismatch(String)
    }

    public let vectorSetId: String
    public let outcomes: [VectorOutcome]
    public let aggregate: AggregateCheck

    public var passedCount: Int { outcomes.count { $0.passed } }
    public var failedCount: Int { outcomes.count { !$0.passed } }

    /// The machine-readable report printed by `seedkit conformance vectors --json`.
    public var json: JSONValue {
        let aggregateValue: JSONValue = switch aggregate {
        case .absent: .object(JSONObject(["status": .string("absent")]))
        case .matches: .object(JSONObject(["status": .string("matches")]))
        case .mismatch(let why): .object(JSONObject(["status": .string("mismatch"), "detail": .string(why)]))
        }
        let vectors = outcomes.map { outcome -> JSONValue in
            .object(JSONObject([
                "vector_id": .string(outcome.vectorId),
                "kind": .string(outcome.kind),
                "valid": .bool(outcome.valid),
                "passed": .bool(outcome.passed),
                "detail": .string(outcome.detail),
            ]))
        }
        return .object(JSONObject([
            "vector_set_id": .string(vectorSetId),
            "passed": .number(JSONNumber(Int64(passedCount))),
            "failed": .number(JSONNumber(Int64(failedCount))),
            "aggregate": aggregateValue,
            "vectors": .array(vectors),
        ]))
    }
}
