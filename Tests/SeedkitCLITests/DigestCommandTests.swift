import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit digest …` run as a user runs it, on the worked examples of `spec/integrity.md` §8.
@Suite("seedkit digest")
struct DigestCommandTests {
    static func example(_ name: String) -> String {
        RepositoryLayout.root.appendingPathComponent("docs/examples/\(name)").path
    }

    static func object(_ run: SeedkitProcess.Outcome) throws -> JSONObject {
        try #require(try StrictJSONParser().parse(run.stdout).objectValue)
    }

    static func errorRule(_ run: SeedkitProcess.Outcome) throws -> String? {
        try object(run)["error"]?.objectValue?["rule"]?.stringValue
    }

    /// RFC 8785 text of a value: member order does not matter to the comparison.
    static func canonical(_ value: JSONValue?) throws -> String {
        try CanonicalJSON.string(try #require(value))
    }

    static func checksum(_ hex: String) -> JSONValue {
        .object(JSONObject([
            "algorithm": .string("sha256"), "version": .number(JSONNumber(1)),
            "encoding": .string("hex"), "digest": .string(hex),
        ]))
    }

    @Test("digest manifest gives the schema hash of §8.1")
    func manifestHash() throws {
        let run = try SeedkitProcess.run(["digest", "manifest", Self.example("manifest.json")])
        #expect(run.status == 0)
        let result = try Self.object(run)
        #expect(result["schema_hash"] == .string("a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"))
        #expect(result["canonical_body_octets"] == .number(JSONNumber(2278)))
        #expect(result["schema_version"] == .number(JSONNumber(3)))
    }

    @Test("digest manifest reads standard input and computes the hash of a manifest without one")
    func manifestWithoutHashFromStdin() throws {
        var manifest = try #require(try StrictJSONParser().parse(
            Array(try Data(contentsOf: URL(fileURLWithPath: Self.example("manifest.json"))))).objectValue)
        manifest = JSONObject(manifest.members.filter { $0.key != "schema_hash" })
        let run = try SeedkitProcess.run(["digest", "manifest"], stdin: try CanonicalJSON.encode(.object(manifest)))
        #expect(run.status == 0)
        #expect(try Self.object(run)["schema_hash"]
                == .string("a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729"))
    }

    @Test("a manifest whose declared hash differs is rejected with status 2")
    func manifestHashMismatch() throws {
        let text = try String(contentsOfFile: Self.example("manifest.json"), encoding: .utf8)
            .replacingOccurrences(of: "\"name\": \"tasks\"", with: "\"name\": \"chores\"")
        let run = try SeedkitProcess.run(["digest", "manifest", "-"], stdin: Array(text.utf8))
        #expect(try Self.errorRule(run) == "schema_hash_mismatch")
        #expect(run.status == 2)
    }

    @Test("digest row gives R1's identity and checksum")
    func rowDigest() throws {
        let run = try SeedkitProcess.run(["digest", "row", Self.example("row.json")])
        #expect(run.status == 0)
        let result = try Self.object(run)
        #expect(result["row_identity"] == .string(
            "73796e6368726f3a76333a726f772d6964656e746974793a763100000000000000000974626c5f7461736b73"
            + "000000000000000b666c645f7461736b5f6964010100000000000000087461736b2d303031"))
        #expect(try Self.canonical(result["row_checksum"]) == Self.canonical(Self.checksum(
            "315e138202f6817530f9dc40f210d57c506910712442777515a88178729fb090")))
    }

    @Test("a row with a non-canonical value is rejected without echoing the value")
    func rowInvalidValue() throws {
        let text = try String(contentsOfFile: Self.example("row.json"), encoding: .utf8)
            .replacingOccurrences(of: "\"3.5\"", with: "\"3.50\"")
        let run = try SeedkitProcess.run(["digest", "row"], stdin: Array(text.utf8))
        #expect(run.status == 2)
        #expect(try Self.errorRule(run) != nil)
        #expect(!run.stdoutText.contains("3.50") && !run.stderrText.contains("3.50"))
    }

    @Test("digest scope gives S1's checksum and cardinality")
    func scopeDigest() throws {
        let run = try SeedkitProcess.run(["digest", "scope", Self.example("scope.json")])
        #expect(run.status == 0)
        let result = try Self.object(run)
        #expect(result["cardinality"] == .number(JSONNumber(3)))
        #expect(result["scope_id"] == .string("catalog:eu"))
        #expect(try Self.canonical(result["checksum"]) == Self.canonical(Self.checksum(
            "4ad6bb6c9eae29d6c5fe33f48b42ed50e3c9fe3fecb0510a7beb57a4105822c0")))
    }

    @Test("digest push gives B1's fingerprints and the §8.6 measures")
    func pushDigest() throws {
        let run = try SeedkitProcess.run(["digest", "push", Self.example("push.json"), "--user", "user-7f3a"])
        #expect(run.status == 0)
        let result = try Self.object(run)
        #expect(result["batch_fingerprint"]
                == .string("098e76e29b672364107efe3fc2803dcb88f5ab8ee0a8f4bc5c64ad10bf99d9da"))
        let mutations = try #require(result["mutations"]?.arrayValue)
        #expect(mutations.count == 2)
        #expect(mutations[0].objectValue?["normalized_mutation_octets"] == .number(JSONNumber(273)))
        #expect(mutations[0].objectValue?["authored_columns"] == .number(JSONNumber(2)))
        #expect(mutations[1].objectValue?["mutation_fingerprint"]
                == .string("3f4cf5bebb9e8661d8ede6e5c74cca6a527a309f790c58fa6cb0cee0d1adc3b3"))
        #expect(mutations[1].objectValue?["normalized_mutation_octets"] == .number(JSONNumber(282)))
        let limits = try #require(result["limits"]?.objectValue)
        #expect(limits["reserved_envelope_canonical_octets"] == .number(JSONNumber(256)))
    }

    @Test("digest push without --user is a usage error")
    func pushNeedsUser() throws {
        #expect(try SeedkitProcess.run(["digest", "push", Self.example("push.json")]).status == 2)
    }

    @Test("invalid JSON input names the rule and the byte offset", arguments: ["manifest", "row", "scope"])
    func invalidJSON(command: String) throws {
        let run = try SeedkitProcess.run(["digest", command], stdin: Array("{\"a\":1,\"a\":2}".utf8))
        #expect(try Self.errorRule(run) == "invalid_json")
        #expect(run.stdoutText.contains("duplicate_member at byte 7"))
        #expect(run.status == 2)
    }

    @Test("an invalid push body is rejected with the rule it broke")
    func invalidPush() throws {
        let text = try String(contentsOfFile: Self.example("push.json"), encoding: .utf8)
            .replacingOccurrences(of: "\"atomic\": true", with: "\"atomic\": false")
        let run = try SeedkitProcess.run(["digest", "push", "--user", "u"], stdin: Array(text.utf8))
        #expect(run.status == 2)
        #expect(try Self.errorRule(run) != nil)
    }

    @Test("an unknown digest kind and an unreadable file exit with status 2")
    func usage() throws {
        #expect(try SeedkitProcess.run(["digest", "table"]).status == 2)
        #expect(try SeedkitProcess.run(["digest"]).status == 2)
        let run = try SeedkitProcess.run(["digest", "row", "/nonexistent/row.json"])
        #expect(try Self.errorRule(run) == "unreadable_input")
        #expect(run.status == 2)
    }
}
