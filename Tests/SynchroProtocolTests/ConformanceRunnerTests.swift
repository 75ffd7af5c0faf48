import Foundation
@testable import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The conformance runner's verdicts, and every upstream vector run in-process.
@Suite("Conformance runner")
struct ConformanceRunnerTests {
    static func vector(valid: Bool, bytes: [UInt8]?, digest: String? = nil) throws -> ConformanceVector {
        func hexOrNull(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let json = JSONValue.object(JSONObject([
            "vector_id": .string("VEC-T-001"), "kind": .string("typed_value"), "valid": .bool(valid),
            "input": .object(JSONObject([])),
            "expected": .object(JSONObject([
                "canonical_bytes_hex": hexOrNull(bytes.map(Hex.encode)),
                "expected_bytes_sha256": hexOrNull(bytes.map { Hex.encode(SHA256.hash($0)) }),
                "expected_sha256": hexOrNull(digest),
            ])),
        ]))
        return try ConformanceVector(json: json, index: 0)
    }

    @Test("a valid vector passes only when bytes and digest both match")
    func validVerdicts() throws {
        let v = try Self.vector(valid: true, bytes: [6, 1, 0])
        #expect(ConformanceRunner.judge(v, evaluation: .produced(bytes: [6, 1, 0], digest: nil)).passed)
        #expect(!ConformanceRunner.judge(v, evaluation: .produced(bytes: [6, 1, 1], digest: nil)).passed)
        #expect(!ConformanceRunner.judge(v, evaluation: .produced(bytes: [6, 1, 0], digest: [1])).passed)
        #expect(!ConformanceRunner.judge(v, evaluation: .rejected(rule: "x")).passed)
        #expect(!ConformanceRunner.judge(v, evaluation: .unsupportedKind).passed)
        let d = try Self.vector(valid: true, bytes: [1], digest: "ab")
        #expect(ConformanceRunner.judge(d, evaluation: .produced(bytes: [1], digest: [0xab])).passed)
        #expect(!ConformanceRunner.judge(d, evaluation: .produced(bytes: [1], digest: [0xac])).passed)
        #expect(!ConformanceRunner.judge(d, evaluation: .produced(bytes: [1], digest: nil)).passed)
    }

    @Test("an invalid vector passes only when its input is rejected")
    func invalidVerdicts() throws {
        let v = try Self.vector(valid: false, bytes: nil)
        #expect(ConformanceRunner.judge(v, evaluation: .rejected(rule: "int_not_canonical")).passed)
        #expect(!ConformanceRunner.judge(v, evaluation: .produced(bytes: [], digest: nil)).passed)
    }

    static let upstream: [ConformanceVector] = {
        guard let url = RepositoryLayout.canonicalVectors, let data = try? Data(contentsOf: url),
              let file = try? ConformanceVectorFile(bytes: Array(data))
        else { return [] }
        return file.vectors
    }()

    @Test("every upstream vector is reproduced", .enabled(if: !upstream.isEmpty), arguments: upstream)
    func upstreamVector(_ vector: ConformanceVector) {
        let outcome = ConformanceRunner.judge(vector, evaluation: ConformanceRunner.evaluate(vector))
        #expect(outcome.passed, "\(vector.id): \(outcome.detail)")
    }

    /// The rule each invalid upstream vector must be rejected for: a rejection for another
    /// reason (a typo in the input, a parse error before the rule under test) would hide a gap.
    static let intendedRejections: [(String, String)] = [
        ("VEC-BATCH-ATOMIC-DUPLICATE-ROW-001", "duplicate_atomic_row"),
        ("VEC-BATCH-ATOMIC-FALSE-001", "invalid_atomic"),
        ("VEC-BATCH-DUPLICATE-MUTATION-001", "duplicate_mutation_id"),
        ("VEC-BATCH-MALFORMED-JSON-001", "invalid_json"),
        ("VEC-BATCH-MISSING-MEMBER-001", "missing_member"),
        ("VEC-BATCH-MUTATION-LIMIT-1001-001", "too_many_mutations"),
        ("VEC-BATCH-SOURCE-LIMIT-1048577-001", "request_body_too_large"),
        ("VEC-MANIFEST-DUPLICATE-FIELD-001", "manifest.duplicate_field"),
        ("VEC-MANIFEST-DUPLICATE-TABLE-001", "manifest.duplicate_table"),
        ("VEC-MANIFEST-HASH-MISMATCH-001", "manifest.hash_mismatch"),
        ("VEC-MANIFEST-WRITABLE-PRIMARY-KEY-001", "manifest.primary_key_writable"),
        ("VEC-MUTATION-CLIENT-VERSION-MISSING-MICROSECONDS-001", "invalid_client_version"),
        ("VEC-MUTATION-CLIENT-VERSION-OFFSET-001", "invalid_client_version"),
        ("VEC-MUTATION-COLUMN-LIMIT-257-001", "too_many_columns"),
        ("VEC-MUTATION-DUPLICATE-COLUMNS-001", "duplicate_column"),
        ("VEC-MUTATION-DUPLICATE-OBJECT-MEMBER-001", "duplicate_member"),
        ("VEC-MUTATION-INVALID-UUID-001", "invalid_mutation_id"),
        ("VEC-MUTATION-MALFORMED-JSON-001", "invalid_json"),
        ("VEC-MUTATION-MISSING-MEMBER-001", "missing_member"),
        ("VEC-MUTATION-NORMALIZED-LIMIT-65537-001", "normalized_mutation_too_large"),
        ("VEC-MUTATION-PRESENCE-NULL-BASE-001", "invalid_base_version"),
        ("VEC-MUTATION-PRESENCE-NULL-COLUMNS-001", "columns_forbidden"),
        ("VEC-MUTATION-UPDATE-EMPTY-COLUMNS-001", "empty_update_columns"),
        ("VEC-ROW-DIGEST-DUPLICATE-FIELD-001", "invalid_json.duplicate_member"),
        ("VEC-ROW-DIGEST-EMPTY-SERVER-VERSION-001", "empty_server_version"),
        ("VEC-ROW-DIGEST-MISSING-FIELD-001", "missing_field"),
        ("VEC-ROW-DIGEST-PK-MISMATCH-001", "pk_mismatch"),
        ("VEC-ROW-DIGEST-UNKNOWN-FIELD-001", "unknown_field"),
        ("VEC-ROW-IDENTITY-NULL-PK-001", "invalid_primary_key"),
        ("VEC-ROW-IDENTITY-TYPE-MISMATCH-001", "invalid_primary_key"),
        ("VEC-SCOPE-DUPLICATE-IDENTITY-001", "duplicate_identity"),
        ("VEC-SCOPE-EMPTY-SCOPE-ID-001", "empty_scope_id"),
        ("VEC-SCOPE-INVALID-IDENTITY-TAG-001", "invalid_identity"),
        ("VEC-SCOPE-MALFORMED-DIGEST-001", "invalid_row_digest"),
        ("VEC-SCOPE-TRAILING-IDENTITY-BYTES-001", "invalid_identity"),
        ("VEC-SCOPE-TRUNCATED-IDENTITY-001", "invalid_identity"),
        ("VEC-TYPED-BOOLEAN-NUMBER-001", "type_mismatch"),
        ("VEC-TYPED-BYTES-PADDING-001", "bytes_not_canonical"),
        ("VEC-TYPED-BYTES-STANDARD-BASE64-001", "bytes_not_canonical"),
        ("VEC-TYPED-DATE-INVALID-001", "date_invalid"),
        ("VEC-TYPED-DATETIME-LEAP-SECOND-001", "datetime_invalid"),
        ("VEC-TYPED-DATETIME-OFFSET-001", "datetime_invalid"),
        ("VEC-TYPED-DECIMAL-EXPONENT-001", "decimal_not_canonical"),
        ("VEC-TYPED-DECIMAL-NEGATIVE-ZERO-001", "decimal_not_canonical"),
        ("VEC-TYPED-DECIMAL-PLUS-001", "decimal_not_canonical"),
        ("VEC-TYPED-DECIMAL-PRECISION-001", "decimal_precision_exceeded"),
        ("VEC-TYPED-DECIMAL-SCALE-001", "decimal_scale_exceeded"),
        ("VEC-TYPED-DECIMAL-TRAILING-ZERO-001", "decimal_not_canonical"),
        ("VEC-TYPED-FLOAT-NEGATIVE-ZERO-001", "float_negative_zero"),
        ("VEC-TYPED-FLOAT-NONCANONICAL-001", "float_not_canonical"),
        ("VEC-TYPED-FLOAT-NONFINITE-001", "float_not_finite"),
        ("VEC-TYPED-INT-EXPONENT-001", "int_not_canonical"),
        ("VEC-TYPED-INT-FRACTION-001", "int_not_canonical"),
        ("VEC-TYPED-INT-NEGATIVE-ZERO-001", "int_not_canonical"),
        ("VEC-TYPED-INT-RANGE-001", "int_out_of_range"),
        ("VEC-TYPED-INT64-LEADING-ZERO-001", "int64_not_canonical"),
        ("VEC-TYPED-INT64-NEGATIVE-ZERO-001", "int64_not_canonical"),
        ("VEC-TYPED-INT64-NUMBER-001", "type_mismatch"),
        ("VEC-TYPED-INT64-PLUS-001", "int64_not_canonical"),
        ("VEC-TYPED-INT64-RANGE-001", "int64_out_of_range"),
        ("VEC-TYPED-JSON-DUPLICATE-001", "json_duplicate_member"),
        ("VEC-TYPED-JSON-INCOMPLETE-001", "json_malformed"),
        ("VEC-TYPED-JSON-NONCANONICAL-001", "json_not_canonical"),
        ("VEC-TYPED-JSON-UNSAFE-NUMBER-001", "json_unsafe_integer"),
        ("VEC-TYPED-NULL-NONNULL-STRING-001", "null_not_allowed"),
        ("VEC-TYPED-STRING-SURROGATE-001", "invalid_json.lone_surrogate"),
        ("VEC-TYPED-TIME-LEAP-SECOND-001", "time_invalid"),
        ("VEC-TYPED-TIME-PRECISION-001", "time_invalid"),
        ("VEC-TYPED-TIME-ZONE-001", "time_invalid"),
    ]

    @Test("each invalid upstream vector is rejected for its intended rule",
          .enabled(if: !upstream.isEmpty), arguments: intendedRejections)
    func intendedRejection(vectorID: String, rule: String) throws {
        let vector = try #require(Self.upstream.first { $0.id == vectorID })
        #expect(!vector.valid)
        #expect(ConformanceRunner.evaluate(vector) == .rejected(rule: rule))
    }

    @Test("every invalid upstream vector has an intended rule pinned", .enabled(if: !upstream.isEmpty))
    func everyInvalidVectorPinned() {
        let pinned = Set(Self.intendedRejections.map(\.0))
        #expect(Set(Self.upstream.filter { !$0.valid }.map(\.id)) == pinned)
    }

    @Test("the upstream file's aggregate matches its vectors", .enabled(if: RepositoryLayout.canonicalVectors != nil))
    func upstreamAggregate() throws {
        let file = try ConformanceVectorFile(bytes: Array(try Data(contentsOf: RepositoryLayout.canonicalVectors!)))
        #expect(file.vectors.count == 129)
        #expect(ConformanceRunner.checkAggregate(file) == .matches)
    }
}

extension ConformanceVector: CustomTestStringConvertible {
    public var testDescription: String { id }
}
