import Foundation
import SeedArtifacts
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport
@testable import SeedPipeline

/// A delta pipeline's publication is a release artifact like a Synchro one (issue #22, "evidence and publication are
/// the same"): signed with the same key handling and provenance statement, a patch against the previous seed, the
/// summary's export, verification and rehearsal filled, and the Synchro-only members refused by name.
@Suite(.serialized) struct PipelineDeltaParityTests {
    static let token = "delta-parity-secret"
    let directory: TemporaryDirectory
    let server: DeltaReferenceServer
    let trusted: Ed25519PublicKey

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-delta-parity")
        server = try DeltaReferenceServer(storePath: directory.path("store.db"), entities: ["articles"], token: Self.token)
        trusted = try SigningKeyFile.generate(privatePath: directory.path("release.key"))
        try server.start()
        try write((1...40).map { "a\($0)" })
        _ = try directory.write("source.json", Array("""
            {"format": "seedkit-delta-source/1", "base_url": "http://127.0.0.1:9", "auth": {"bearer_env": "TOKEN"},
             "entities": [{"name": "articles", "table": "articles", "primary_key": "id",
               "columns": [{"name": "id", "type": "string"}, {"name": "title", "type": "string"},
                           {"name": "words", "type": "int64"}],
               "paging": {"shape": "changes", "path": "/v1/sync/articles", "limit": 7}}]}
            """.utf8))
    }

    var publish: String { directory.path("out") }

    func write(_ ids: [String]) throws {
        _ = try server.store.write(entity: "articles", ids.map { id in
            (id, JSONObject([JSONMember("id", .string(id)), JSONMember("title", .string("Title of \(id)")),
                             JSONMember("words", .number(JSONNumber(Int64(id.count * 10))))]))
        })
    }

    func definition(
        _ extra: String = "", overrides: [PipelineOverride] = []
    ) throws(PipelineDefinitionError) -> PipelineDefinition {
        try PipelineDefinition(bytes: Array("""
            {"source": {"delta": {"definition": "source.json", "base_url": "\(server.baseURL)"}},
             "pack": {"level": 3}, "publish": {"directory": "out"}\(extra)}
            """.utf8), baseDirectory: directory.url.path, environment: ["TOKEN": Self.token], overrides: overrides)
    }

    func signed() throws -> PipelineDefinition {
        try definition(#", "sign": {"key_file": "release.key"}"#)
    }

    func rules(_ artifact: String, keys: [Ed25519PublicKey]) -> [String] {
        PublicationSignature.verify(artifact: publish + "/" + artifact, trustedKeys: keys).map(\.rule.rawValue)
    }

    @Test func scopesPageLimitAndRehearsalAreRefusedByNameWithADeltaSource() throws {
        for (extra, member) in [
            (#", "scopes": ["catalog"]"#, "scopes"), (#", "page_limit": 50"#, "page_limit"),
            (#", "rehearsal": {"user": "alice"}"#, "rehearsal"), (#", "rehearsal": {}"#, "rehearsal"),
        ] {
            do throws(PipelineDefinitionError) {
                _ = try definition(extra)
                Issue.record("\(member) was accepted with a delta source")
            } catch {
                #expect(error.rule == "invalid_value" && error.member == member, "\(error)")
                #expect(error.message.contains("delta source"), "\(error)")
            }
        }
        // Through `--set` as well, and the same members still load with a Synchro source.
        #expect(throws: PipelineDefinitionError.self) {
            try definition(overrides: [try PipelineOverride(parsing: "page_limit=10")])
        }
        _ = try PipelineDefinition(bytes: Array(#"""
            {"source": {"embedded": {"dataset": "d"}}, "scopes": ["catalog"], "page_limit": 50,
             "rehearsal": {"user": "alice"}, "publish": {"directory": "out"}}
            """#.utf8), baseDirectory: directory.url.path, environment: [:])
    }

    @Test func aSignedDeltaRunPublishesAVerifiableEnvelopeWithDeltaProvenance() throws {
        let pipeline = try signed()
        #expect(pipeline.steps.contains(.sign))
        let report = try PipelineRunner.run(pipeline)
        #expect(report.outcome == .published, "\(report.steps.map { ($0.step, $0.outcome, $0.failure?.message) })")
        #expect(report.steps.first { $0.step == .sign }?.outcome == .passed)
        let names = try FileManager.default.contentsOfDirectory(atPath: publish).sorted()
        #expect(names == ["SHA256SUMS", "evidence.json", "provenance.intoto.jsonl", "seed.db", "seed.db.zst"])
        #expect(rules("seed.db", keys: [trusted]).isEmpty && rules("seed.db.zst", keys: [trusted]).isEmpty)
        #expect(rules("seed.db", keys: [try Ed25519PrivateKey.generate().publicKey]) == ["signature_untrusted"])

        let bytes = try #require(FileManager.default.contents(atPath: publish + "/provenance.intoto.jsonl"))
        let envelope = try #require(DSSEEnvelope(bytes: Array(bytes)))
        let subjects = try #require(ProvenanceStatement.subjects(ofPayload: envelope.payload))
        #expect(subjects.map(\.name) == ["SHA256SUMS", "evidence.json", "seed.db", "seed.db.zst"])
        let statement = String(decoding: envelope.payload, as: UTF8.self)
        #expect(statement.contains("\"kind\":\"delta\"") && statement.contains("delta/source.json"))
        #expect(statement.contains("\"entity\":\"articles\"") && statement.contains("\"rows\":40"))
        #expect(!statement.contains(Self.token) && !statement.contains("cursor"))

        // A changed seed under the signature is its own finding; the file is restored afterwards by a forced run.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: publish + "/seed.db"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        #expect(rules("seed.db.zst", keys: [trusted]).contains("artifact_digest_mismatch"))

        // A key that cannot be read fails the sign step, before anything is published.
        try FileManager.default.removeItem(atPath: directory.path("release.key"))
        let missing = try PipelineRunner.run(pipeline, options: PipelineRunOptions(force: true))
        #expect(missing.outcome == .failed && missing.failedStep?.step == .sign, "\(missing.steps)")
    }

    @Test func aNewDeltaReleasePublishesASignedPatchAgainstThePreviousSeed() throws {
        #expect(try PipelineRunner.run(try signed()).outcome == .published)
        #expect(!FileManager.default.fileExists(atPath: publish + "/seed.db.patch.zst"))
        let previous = directory.path("previous.db")
        try FileManager.default.copyItem(atPath: publish + "/seed.db", toPath: previous)

        try write(["a7", "a41"])
        let report = try PipelineRunner.run(try signed())
        #expect(report.outcome == .published && report.seed?.rows == 41)
        #expect(report.steps.allSatisfy { $0.warnings.isEmpty }, "no no_patch warning any more")
        let names = try FileManager.default.contentsOfDirectory(atPath: publish).sorted()
        #expect(names.contains("seed.db.patch.zst"))
        #expect(rules("seed.db.patch.zst", keys: [trusted]).isEmpty)

        let seedDigest = try FileDigest.sha256(path: publish + "/seed.db").hex
        let signedDigest = PublicationSignature.signedDigest(
            of: "seed.db", beside: publish + "/seed.db.patch.zst", trustedKeys: [trusted])
        #expect(signedDigest == seedDigest)
        var options = UnpackOptions(requireSQLiteDatabase: true)
        options.patchFrom = previous
        options.expectedSHA256 = signedDigest
        let rebuilt = directory.path("rebuilt.db")
        let applied = try SeedPacker.unpack(publish + "/seed.db.patch.zst", to: rebuilt, options: options)
        #expect(applied.uncompressedSHA256 == seedDigest)
        let full = try #require(FileManager.default.attributesOfItem(atPath: publish + "/seed.db.zst")[.size] as? Int)
        #expect(applied.compressedBytes < Int64(full), "patch \(applied.compressedBytes), full \(full)")

        let evidence = try StrictJSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: publish + "/evidence.json"))))
        let patch = evidence.objectValue?["pipeline"]?.objectValue?["patch"]?.objectValue
        #expect(patch?["from_sha256"]?.stringValue == (try FileDigest.sha256(path: previous).hex))
        #expect(try PipelineRunner.run(try signed()).outcome == .upToDate, "the patch does not stop reuse")
    }

    @Test func theSummaryCarriesTheDeltaExportVerificationAndRehearsal() throws {
        let report = try PipelineRunner.run(try definition())
        #expect(report.outcome == .published)
        let summary = try #require(report.summaryJSON.objectValue)
        let export = try #require(summary["export"]?.objectValue, "\(summary)")
        #expect(export["rows"]?.numberValue?.exactInt64 == 40)
        let entity = try #require(export["entities"]?.arrayValue?.first?.objectValue)
        #expect(entity["entity"]?.stringValue == "articles" && (entity["pages"]?.numberValue?.exactInt64 ?? 0) >= 6)
        #expect(entity["digest"]?.stringValue == report.seed?.scopes.first?.checksum)

        let verification = try #require(summary["verification"]?.objectValue)
        #expect(verification["ok"]?.boolValue == true && verification["findings"]?.arrayValue?.isEmpty == true)
        #expect(verification["entities"]?.arrayValue?.first?.objectValue?["digest_verified"]?.boolValue == true)

        let rehearsal = try #require(summary["rehearsal"]?.objectValue)
        #expect(rehearsal["passed"]?.boolValue == true && rehearsal["differences"]?.arrayValue?.isEmpty == true)
        #expect(rehearsal["entities"]?.arrayValue?.first?.objectValue?["full_rows"]?.numberValue?.exactInt64 == 40)
        let text = String(decoding: try CanonicalJSON.encode(report.summaryJSON), as: UTF8.self)
        #expect(!text.contains(Self.token) && !text.contains("cursor"))

        // The evidence records the same verification and rehearsal.
        let evidence = try StrictJSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: publish + "/evidence.json"))))
        let pipeline = evidence.objectValue?["pipeline"]?.objectValue
        for member in ["verification", "rehearsal"] {
            let recorded = try CanonicalJSON.encode(try #require(pipeline?[member]))
            #expect(recorded == (try CanonicalJSON.encode(try #require(summary[member]))), "\(member)")
        }
    }
}
