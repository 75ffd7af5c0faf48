import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts
@testable import SeedPipeline

/// Issue #20, signatures and provenance: a pipeline run with a key publishes a DSSE envelope over an in-toto
/// statement with SLSA provenance; `PublicationSignature.verify` passes on it and refuses, each with its own rule,
/// an untrusted re-signature, a changed `SHA256SUMS`, a changed artifact, a truncated signature, a statement whose
/// subject digest does not match, a changed statement and a missing envelope.
@Suite(.serialized) struct SignedPublicationTests {
    let directory: TemporaryDirectory
    let trusted: Ed25519PublicKey
    let other: Ed25519PrivateKey

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-signed")
        trusted = try SigningKeyFile.generate(privatePath: directory.path("release.key"))
        other = try Ed25519PrivateKey.generate()
    }

    var publishDirectory: String { directory.path("out/seed") }

    func signedPipeline(
        sign: String = #"{"key_file": "release.key"}"#, environment: [String: String] = [:], rows: Int = 120
    ) throws -> PipelineDefinition {
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        let json = """
            {"name": "signed", "source": {"embedded": {"dataset": "\(dataset)", "rows": \(rows)}},
             "scopes": ["catalog"], "page_limit": 100, "pack": {"level": 3},
             "publish": {"directory": "out/seed"}, "sign": \(sign),
             "steps": ["export", "verify", "pack", "sign", "publish"]}
            """
        return try PipelineDefinition(
            bytes: Array(json.utf8), baseDirectory: directory.url.path, environment: environment)
    }

    /// A copy of the publication to tamper with.
    func copy(_ name: String) throws -> String {
        let target = directory.path("tampered-\(name)")
        try FileManager.default.copyItem(atPath: publishDirectory, toPath: target)
        return target
    }

    func envelope(in publication: String) throws -> DSSEEnvelope {
        let bytes = try #require(read(publication + "/" + PublicationSignature.fileName))
        return try #require(DSSEEnvelope(bytes: bytes))
    }

    func rules(_ publication: String, keys: [Ed25519PublicKey]? = nil) -> [String] {
        PublicationSignature.verify(artifact: publication + "/seed.db.zst", trustedKeys: keys ?? [trusted])
            .map(\.rule.rawValue)
    }

    func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    @Test func aSignedRunPublishesAnEnvelopeThatVerifiesAndEachTamperingHasItsOwnFinding() throws {
        let report = try PipelineRunner.run(try signedPipeline())
        #expect(report.outcome == .published, "\(report.failedStep?.failure?.message ?? "")")
        let files = try FileManager.default.contentsOfDirectory(atPath: publishDirectory).sorted()
        #expect(files == ["SHA256SUMS", "evidence.json", "provenance.intoto.jsonl", "seed.db", "seed.db.zst"])
        #expect(rules(publishDirectory).isEmpty)
        #expect(rules(publishDirectory, keys: [other.publicKey, trusted]).isEmpty, "a second trusted key (rotation)")
        #expect(PublicationSignature.verify(artifact: publishDirectory + "/seed.db", trustedKeys: [trusted]).isEmpty)

        // The statement: every published file a subject, with its digest; the build definition's inputs.
        let signed = try envelope(in: publishDirectory)
        #expect(signed.payloadType == "application/vnd.in-toto+json")
        #expect(signed.signatures.map(\.keyID) == [trusted.keyID])
        let statement = try #require(try StrictJSONParser().parse(signed.payload).objectValue)
        #expect(try CanonicalJSON.encode(.object(statement)) == signed.payload, "canonical JSON")
        let subjects = try #require(ProvenanceStatement.subjects(ofPayload: signed.payload))
        #expect(subjects.map(\.name) == ["SHA256SUMS", "evidence.json", "seed.db", "seed.db.zst"])
        for subject in subjects {
            #expect(try FileDigest.sha256(path: publishDirectory + "/" + subject.name).hex == subject.sha256)
        }
        let predicate = try #require(statement["predicate"]?.objectValue)
        let parameters = try #require(predicate["buildDefinition"]?.objectValue?["externalParameters"]?.objectValue)
        #expect(parameters["source"]?.objectValue?["kind"]?.stringValue == "embedded")
        #expect(parameters["export"]?.objectValue?["export_id"]?.stringValue == report.export?.exportID)
        #expect(parameters["export"]?.objectValue?["scopes"] == .array([.string("catalog")]))
        #expect(parameters["levels"]?.objectValue?["pack"]?.numberValue?.exactInt64 == 3)
        let builder = try #require(predicate["runDetails"]?.objectValue?["builder"]?.objectValue)
        #expect(builder["version"]?.objectValue?["seedkit"]?.stringValue == SeedArtifacts.toolVersion)

        // Re-signed by a key that is not trusted.
        let resigned = try copy("resigned")
        try write(try DSSEEnvelope.sign(payload: signed.payload, key: other).encoded(),
                  resigned + "/" + PublicationSignature.fileName)
        #expect(rules(resigned) == ["signature_untrusted"])
        #expect(rules(resigned, keys: [trusted, other.publicKey]).isEmpty)

        // SHA256SUMS rewritten (a line for a file that is not there).
        let sums = try copy("sums")
        let original = try #require(read(sums + "/SHA256SUMS"))
        try write(original + Array("\(String(repeating: "0", count: 64))  extra.bin\n".utf8), sums + "/SHA256SUMS")
        #expect(rules(sums) == ["checksums_mismatch"])

        // An artifact changed after signing.
        let artifact = try copy("artifact")
        var frame = try #require(read(artifact + "/seed.db.zst"))
        frame[frame.count / 2] ^= 0x01
        try write(frame, artifact + "/seed.db.zst")
        #expect(rules(artifact) == ["artifact_digest_mismatch"])

        // A truncated signature: the envelope parses but the signature is shorter than 64 bytes; and a cut file.
        let truncated = try copy("truncated")
        let short = DSSEEnvelope.Signature(keyID: trusted.keyID, bytes: Array(signed.signatures[0].bytes.prefix(48)))
        let shortEnvelope = DSSEEnvelope(payloadType: signed.payloadType, payload: signed.payload, signatures: [short])
        try write(try shortEnvelope.encoded(), truncated + "/" + PublicationSignature.fileName)
        #expect(rules(truncated) == ["signature_malformed"])
        let envelopeBytes = try #require(read(publishDirectory + "/" + PublicationSignature.fileName))
        try write(
            Array(envelopeBytes.prefix(envelopeBytes.count - 20)), truncated + "/" + PublicationSignature.fileName)
        #expect(rules(truncated) == ["signature_malformed"])

        // A statement, validly signed by the trusted key, whose subject digest does not match the artifact.
        let subject = try copy("subject")
        let key = try SigningKeyFile.privateKey(path: directory.path("release.key"))
        let wrong = subjects.map { subject in
            subject.name == "seed.db.zst"
                ? ProvenanceStatement.Subject(name: subject.name, sha256: String(repeating: "ab", count: 32)) : subject
        }
        let lying = ProvenanceStatement(
            subjects: wrong, buildType: ProvenanceStatement.pipelineBuildType,
            externalParameters: .object(JSONObject([])), started: Date(), finished: Date())
        try write(try PublicationSignature.envelope(lying, key: key), subject + "/" + PublicationSignature.fileName)
        #expect(rules(subject) == ["subject_digest_mismatch"])

        // The statement changed under the trusted key's signature.
        let changed = try copy("changed")
        var payload = signed.payload
        payload[payload.count / 2] ^= 0x20
        let forged = DSSEEnvelope(payloadType: signed.payloadType, payload: payload, signatures: signed.signatures)
        try write(try forged.encoded(), changed + "/" + PublicationSignature.fileName)
        #expect(rules(changed) == ["signature_invalid"])

        // No envelope at all.
        let unsigned = try copy("unsigned")
        try FileManager.default.removeItem(atPath: unsigned + "/" + PublicationSignature.fileName)
        #expect(rules(unsigned) == ["signature_missing"])
    }

    @Test func aNewReleasePublishesASignedPatchAgainstThePreviousSeed() throws {
        #expect(try PipelineRunner.run(try signedPipeline()).outcome == .published)
        let previous = directory.path("previous.db")
        try FileManager.default.copyItem(atPath: publishDirectory + "/seed.db", toPath: previous)
        #expect(!FileManager.default.fileExists(atPath: publishDirectory + "/seed.db.patch.zst"))

        let report = try PipelineRunner.run(try signedPipeline(rows: 121))
        #expect(report.outcome == .published, "\(report.failedStep?.failure?.message ?? "")")
        let files = try FileManager.default.contentsOfDirectory(atPath: publishDirectory).sorted()
        #expect(files == [
            "SHA256SUMS", "evidence.json", "provenance.intoto.jsonl", "seed.db", "seed.db.patch.zst", "seed.db.zst",
        ])
        #expect(rules(publishDirectory).isEmpty)
        let payload = try envelope(in: publishDirectory).payload
        let subjects = try #require(ProvenanceStatement.subjects(ofPayload: payload))
        #expect(subjects.map(\.name).contains("seed.db.patch.zst"))

        let seedDigest = try FileDigest.sha256(path: publishDirectory + "/seed.db").hex
        let signed = PublicationSignature.signedDigest(
            of: "seed.db", beside: publishDirectory + "/seed.db.patch.zst", trustedKeys: [trusted])
        #expect(signed == seedDigest)
        var options = UnpackOptions(requireSQLiteDatabase: true)
        options.patchFrom = previous
        options.expectedSHA256 = signed
        let applied = try SeedPacker.unpack(
            publishDirectory + "/seed.db.patch.zst", to: directory.path("rebuilt.db"), options: options)
        #expect(applied.uncompressedSHA256 == seedDigest)
        let patchBytes = applied.compressedBytes
        let fullBytes = try #require(report.pack?.compressedBytes)
        #expect(patchBytes < fullBytes, "patch \(patchBytes), full \(fullBytes)")

        let evidence = try StrictJSONParser().parse(try #require(read(publishDirectory + "/evidence.json")))
        let patch = try #require(evidence.objectValue?["pipeline"]?.objectValue?["patch"]?.objectValue)
        #expect(patch["from_sha256"]?.stringValue == (try FileDigest.sha256(path: previous).hex))
        #expect(
            try PipelineRunner.run(try signedPipeline(rows: 121)).outcome == .upToDate, "the patch does not stop reuse")
    }

    @Test func aKeyFromTheEnvironmentSignsAndNeverReachesAnArtifact() throws {
        let key = try Ed25519PrivateKey.generate()
        let pem = String(decoding: try key.pem(), as: UTF8.self)
        let report = try PipelineRunner.run(
            try signedPipeline(sign: #"{"key_env": "SEEDKIT_SIGNING_KEY"}"#, environment: ["SEEDKIT_SIGNING_KEY": pem]))
        #expect(report.outcome == .published)
        #expect(rules(publishDirectory, keys: [key.publicKey]).isEmpty)
        #expect(rules(publishDirectory) == ["signature_untrusted"])
        let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
        for name in try FileManager.default.contentsOfDirectory(atPath: publishDirectory) {
            let bytes = try #require(read(publishDirectory + "/" + name))
            #expect(!bytes.elementsEqual(Array(body.utf8)) && bytes.firstRange(of: Array(body.utf8)) == nil, "\(name)")
        }
    }

    @Test func aWrongOrTooOpenKeyFailsTheSignStepAndPublishesNothing() throws {
        chmod(directory.path("release.key"), 0o644)
        let report = try PipelineRunner.run(try signedPipeline())
        #expect(report.outcome == .failed)
        #expect(report.failedStep?.step == .sign)
        #expect(report.failedStep?.failure?.rule == "key_file_too_open")
        #expect(!FileManager.default.fileExists(atPath: publishDirectory))

        #expect(throws: PipelineDefinitionError.self) {
            try signedPipeline(sign: #"{"key_env": "UNSET_SIGNING_KEY"}"#)
        }
    }
}
