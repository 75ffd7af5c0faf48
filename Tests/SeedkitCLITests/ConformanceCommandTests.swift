import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit conformance vectors` run as a user runs it.
@Suite("seedkit conformance vectors")
struct ConformanceCommandTests {
    static let hasVectors = RepositoryLayout.canonicalVectors != nil

    static func upstreamFile() throws -> JSONObject {
        let bytes = Array(try Data(contentsOf: RepositoryLayout.canonicalVectors!))
        return try #require(try StrictJSONParser().parse(bytes).objectValue)
    }

    static func vectors(of file: JSONObject) throws -> [JSONValue] {
        try #require(file["vectors"]?.arrayValue)
    }

    /// A vector file with the given vectors and, when asked, an aggregate computed for them.
    static func file(_ vectors: [JSONValue], withAggregate: Bool) throws -> [UInt8] {
        var members = [JSONMember("vector_set_id", .string("VSET-TEST")), JSONMember("vectors", .array(vectors))]
        if withAggregate {
            let hashes = vectors.map { v -> JSONValue in
                let expected = v.objectValue!["expected"]!.objectValue!
                return .object(JSONObject([
                    "vector_id": v.objectValue!["vector_id"]!,
                    "expected_bytes_sha256": expected["expected_bytes_sha256"]!,
                    "expected_sha256": expected["expected_sha256"]!,
                ]))
            }
            let body = JSONValue.object(JSONObject([
                "algorithm": .string("sha-256"),
                "vector_count": .number(JSONNumber(Int64(vectors.count))),
                "vector_hashes": .array(hashes),
            ]))
            var preimage = Array("synchro:v3:vector-set-aggregate:v1".utf8) + [0]
            preimage += try CanonicalJSON.encode(body)
            var aggregate = body.objectValue!.members
            aggregate.append(JSONMember("sha256", .string(Hex.encode(SHA256.hash(preimage)))))
            members.append(JSONMember("aggregate", .object(JSONObject(aggregate))))
        }
        return try CanonicalJSON.encode(.object(JSONObject(members)))
    }

    /// Replaces member `name` of `object` (a JSON object value) with `value`.
    static func replacing(_ object: JSONValue, _ name: String, with value: JSONValue) -> JSONValue {
        .object(JSONObject(object.objectValue!.members.map { $0.key == name ? JSONMember(name, value) : $0 }))
    }

    @Test("the upstream vector file passes 129 of 129 with status 0", .enabled(if: hasVectors))
    func upstreamVectorsPass() throws {
        let run = try SeedkitProcess.run(["conformance", "vectors", RepositoryLayout.canonicalVectors!.path])
        #expect(run.stdoutText == "129 passed, 0 failed\n")
        #expect(run.status == 0)
    }

    @Test("--json reports every vector, the counts and the matching aggregate", .enabled(if: hasVectors))
    func jsonReport() throws {
        let run = try SeedkitProcess.run(["conformance", "vectors", "--json", RepositoryLayout.canonicalVectors!.path])
        #expect(run.status == 0)
        let report = try #require(try StrictJSONParser().parse(run.stdout).objectValue)
        #expect(report["passed"] == .number(JSONNumber(129)))
        #expect(report["failed"] == .number(JSONNumber(0)))
        #expect(report["aggregate"]?.objectValue?["status"] == .string("matches"))
        #expect(report["vectors"]?.arrayValue?.count == 129)
    }

    @Test("any file of the format runs: a subset with its own aggregate passes", .enabled(if: hasVectors))
    func subsetWithAggregate() throws {
        let subset = Array(try Self.vectors(of: Self.upstreamFile()).prefix(12))
        let dir = try TemporaryDirectory()
        let path = try dir.write("subset.json", Self.file(subset, withAggregate: true))
        let run = try SeedkitProcess.run(["conformance", "vectors", path])
        #expect(run.stdoutText == "12 passed, 0 failed\n")
        #expect(run.status == 0)
    }

    @Test("a tampered expectation fails that vector by name with status 1", .enabled(if: hasVectors))
    func tamperedVectorFails() throws {
        var vectors = Array(try Self.vectors(of: Self.upstreamFile()).prefix(5))
        let target = try #require(vectors.firstIndex { $0.objectValue?["valid"] == .bool(true) })
        let expected = vectors[target].objectValue!["expected"]!
        let bytesHex = expected.objectValue!["canonical_bytes_hex"]!.stringValue!
        let altered = String(bytesHex.dropLast()) + (bytesHex.hasSuffix("0") ? "1" : "0")
        vectors[target] = Self.replacing(vectors[target], "expected",
                                         with: Self.replacing(expected, "canonical_bytes_hex", with: .string(altered)))
        let dir = try TemporaryDirectory()
        let path = try dir.write("tampered.json", Self.file(vectors, withAggregate: false))
        let run = try SeedkitProcess.run(["conformance", "vectors", path])
        let id = vectors[target].objectValue!["vector_id"]!.stringValue!
        #expect(run.stdoutText.contains("FAIL \(id) "))
        #expect(run.stdoutText.hasSuffix("4 passed, 1 failed\n"))
        #expect(run.status == 1)
    }

    @Test("a vector marked valid whose input is invalid fails", .enabled(if: hasVectors))
    func invalidInputMarkedValidFails() throws {
        let all = try Self.vectors(of: Self.upstreamFile())
        let invalid = try #require(all.first { $0.objectValue?["valid"] == .bool(false) })
        let valid = try #require(all.first { $0.objectValue?["valid"] == .bool(true) })
        let flipped = Self.replacing(Self.replacing(invalid, "valid", with: .bool(true)), "expected",
                                     with: valid.objectValue!["expected"]!)
        let dir = try TemporaryDirectory()
        let path = try dir.write("flipped.json", Self.file([flipped], withAggregate: false))
        let run = try SeedkitProcess.run(["conformance", "vectors", path])
        #expect(run.stdoutText.contains("valid vector rejected"))
        #expect(run.status == 1)
    }

    @Test("a kind the runner does not know fails with status 1")
    func unknownKindFails() throws {
        let vector = JSONValue.object(JSONObject([
            "vector_id": .string("VEC-X-001"), "kind": .string("teleport"), "valid": .bool(false),
            "input": .object(JSONObject([])),
            "expected": .object(JSONObject([
                "canonical_bytes_hex": .null, "expected_bytes_sha256": .null, "expected_sha256": .null,
            ])),
        ]))
        let dir = try TemporaryDirectory()
        let path = try dir.write("unknown.json", Self.file([vector], withAggregate: true))
        let run = try SeedkitProcess.run(["conformance", "vectors", path])
        #expect(run.stdoutText == "FAIL VEC-X-001 (teleport): unsupported kind teleport\n0 passed, 1 failed\n")
        #expect(run.status == 1)
    }

    @Test("an aggregate that does not match its vectors makes the file malformed", .enabled(if: hasVectors))
    func aggregateMismatch() throws {
        let subset = Array(try Self.vectors(of: Self.upstreamFile()).prefix(3))
        var file = try #require(try StrictJSONParser().parse(Self.file(subset, withAggregate: true)).objectValue)
        let aggregate = Self.replacing(file["aggregate"]!, "sha256", with: .string(String(repeating: "0", count: 64)))
        file = JSONObject(file.members.map { $0.key == "aggregate" ? JSONMember("aggregate", aggregate) : $0 })
        let dir = try TemporaryDirectory()
        let path = try dir.write("aggregate.json", try CanonicalJSON.encode(.object(file)))
        let run = try SeedkitProcess.run(["conformance", "vectors", path])
        #expect(run.stdoutText.contains("FAIL aggregate: aggregate sha256 differs"))
        #expect(run.status == 2)
    }

    @Test("malformed files exit with status 2 and name the rule", arguments: [
        ("{\"vector_set_id\":", "invalid_json"),
        ("[1,2]", "not_an_object"),
        ("{\"vector_set_id\":\"x\"}", "missing_member"),
        ("{\"vector_set_id\":\"x\",\"vectors\":[{\"vector_id\":\"a\"}]}", "invalid_vector"),
        ("{\"vector_set_id\":\"x\",\"vectors\":[],\"vectors\":[]}", "invalid_json"),
    ])
    func malformedFile(text: String, rule: String) throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("bad.json", Array(text.utf8))
        let run = try SeedkitProcess.run(["conformance", "vectors", "--json", path])
        let error = try StrictJSONParser().parse(run.stdout).objectValue?["error"]?.objectValue
        #expect(error?["rule"] == .string(rule))
        #expect(run.status == 2)
    }

    @Test("a missing file and a bad command line exit with status 2")
    func usageErrors() throws {
        #expect(try SeedkitProcess.run(["conformance", "vectors", "/nonexistent/vectors.json"]).status == 2)
        #expect(try SeedkitProcess.run(["conformance", "vectors"]).status == 2)
        #expect(try SeedkitProcess.run(["conformance", "vectors", "a.json", "--fast"]).status == 2)
        #expect(try SeedkitProcess.run(["conformance"]).status == 2)
        #expect(try SeedkitProcess.run(["frobnicate"]).status == 2)
        #expect(try SeedkitProcess.run([]).status == 2)
        #expect(try SeedkitProcess.run(["help"]).status == 0)
    }
}
