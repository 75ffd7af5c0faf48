import Foundation
import Glibc
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// The built binary running a delta pipeline, as `PipelineCollisionTests` runs a Synchro one: SIGTERM or SIGINT at
/// every step and inside the export ends the run with exit 130, `interrupted; nothing published`, no scratch and
/// the previous publication untouched; SIGKILL at the run's crash points leaves at most a scratch directory that the
/// next plain run removes before it publishes a publication that verifies; and a signed delta publication passes
/// `seedkit verify --trusted-key` and is refused (exit 6) with an untrusted key. Signals are raised at exact points
/// by `SEEDKIT_CRASH_AT`/`SEEDKIT_CRASH_SIGNAL`, never by a sleep.
@Suite("seedkit pipeline: delta runs under signals and kills", .serialized)
struct PipelineDeltaSignalTests {
    static let token = "delta-signal-token"
    let directory: TemporaryDirectory
    let server: DeltaReferenceServer

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-pipeline-delta-signal")
        server = try DeltaReferenceServer(
            storePath: directory.path("store.db"), entities: ["articles", "users"], token: Self.token)
        try server.start()
        try writeArticles(1...30)
        _ = try server.store.write(entity: "users", (1...6).map { index in
            ("u\(index)", JSONObject([JSONMember("id", .string("u\(index)")), JSONMember("name", .string("U\(index)"))]))
        })
    }

    func writeArticles(_ range: ClosedRange<Int>) throws {
        _ = try server.store.write(entity: "articles", range.map { index in
            ("a\(index)", JSONObject([
                JSONMember("id", .string("a\(index)")), JSONMember("title", .string("Article \(index)")),
                JSONMember("words", .number(JSONNumber(Int64(index)))),
            ]))
        })
    }

    var parent: String { directory.path("out") }
    var publish: String { directory.path("out/delta") }

    /// The example's definition with a 4-row page, so the export crosses several page boundaries.
    func pipelineFile(sign: Bool = false) throws -> String {
        let example = RepositoryLayout.root.appendingPathComponent("pipelines/delta.example.source.json").path
        let source = try String(contentsOfFile: example, encoding: .utf8)
            .replacingOccurrences(of: "\"limit\": 500", with: "\"limit\": 4")
        _ = try directory.write("source.json", Array(source.utf8))
        let steps = sign
            ? #"["export", "verify", "pack", "install", "rehearse", "sign", "publish"]"#
            : #"["export", "verify", "pack", "install", "rehearse", "publish"]"#
        return try directory.write("delta.json", Array("""
            {"source": {"delta": {"definition": "source.json", "base_url": "\(server.baseURL)"}},
             "pack": {"level": 3}, "publish": {"directory": "out/delta"}, "steps": \(steps)
             \(sign ? #", "sign": {"key_file": "release.key"}"# : "")}
            """.utf8))
    }

    func run(_ words: [String], _ environment: [String: String] = [:]) throws -> SeedkitProcess.Outcome {
        try SeedkitProcess.run(words, environment: environment.merging(["SEEDKIT_DELTA_TOKEN": Self.token]) { $1 })
    }

    func scratchDirectories() throws -> [String] {
        guard FileManager.default.fileExists(atPath: parent) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: parent).filter { $0.hasPrefix(".delta.pipeline-") }
    }

    func publishedSums() -> [UInt8]? {
        FileManager.default.contents(atPath: publish + "/SHA256SUMS").map(Array.init)
    }

    @Test("SIGTERM or SIGINT at each step and inside the delta export: exit 130, no scratch, publication untouched",
          arguments: [
            ("pipeline.export", "TERM"), ("export.page:1", "TERM"), ("export.page:4", "INT"),
            ("pipeline.verify", "INT"), ("pipeline.pack", "TERM"), ("pipeline.install", "TERM"),
            ("pipeline.rehearse", "INT"), ("pipeline.publish", "TERM"),
          ])
    func signalAtAPointStopsTheRun(point: String, signal: String) throws {
        let file = try pipelineFile()
        let first = try run(["pipeline", "run", file])
        #expect(first.status == 0, "\(first.stderrText)")
        let before = try #require(publishedSums())
        try writeArticles(31...31)
        let stopped = try run(
            ["pipeline", "run", file, "--json"], ["SEEDKIT_CRASH_AT": point, "SEEDKIT_CRASH_SIGNAL": signal])
        #expect(stopped.status == 130, "\(point): \(stopped.status) \(stopped.stderrText)")
        #expect(stopped.stderrText.contains("interrupted; nothing published"), "\(point)")
        let last = try StrictJSONParser().parse(Array((stopped.lines.last ?? "").utf8)).objectValue
        #expect(last?["rule"]?.stringValue == "interrupted" && last?["exit_status"]?.numberValue?.exactInt64 == 130)
        #expect(publishedSums() == before, "\(point): the previous publication stays")
        #expect(try scratchDirectories().isEmpty, "\(point)")
        #expect(!stopped.stdoutText.contains(Self.token) && !stopped.stderrText.contains(Self.token))
    }

    @Test("SIGKILL at each crash point of a delta run: the next plain run resolves and publishes a verified seed",
          arguments: ["export.page:3", "export.evidence_published", "pipeline.rehearse", "pipeline.publish",
                      "pipeline.before_exchange", "pipeline.exchanged"])
    func killAtACrashPointThenTheNextRunResolves(point: String) throws {
        let file = try pipelineFile()
        #expect(try run(["pipeline", "run", file]).status == 0)
        let before = try #require(publishedSums())
        try writeArticles(31...33)
        let killed = try run(["pipeline", "run", file], ["SEEDKIT_CRASH_AT": point])
        #expect(killed.status == SIGKILL, "\(point): \(killed.status) \(killed.stderrText)")
        #expect(try scratchDirectories().count == 1, "\(point): the killed run's scratch is left")
        let sums = try #require(publishedSums(), "\(point): a publication is always in place")
        if point != "pipeline.exchanged" { #expect(sums == before, "\(point): nothing published before the exchange") }

        let next = try run(["pipeline", "run", file, "--json"])
        #expect(next.status == 0, "\(point): \(next.stderrText)")
        let summary = try StrictJSONParser().parse(Array((next.lines.last ?? "").utf8)).objectValue
        // After the exchange the killed run's publication is complete and current: the next run reuses it.
        let expected = point == "pipeline.exchanged" ? "up_to_date" : "published"
        #expect(summary?["outcome"]?.stringValue == expected, "\(point): \(next.stdoutText)")
        #expect(summary?["seed"]?.objectValue?["rows"]?.numberValue?.exactInt64 == 39, "\(point)")
        #expect(try scratchDirectories().isEmpty, "\(point)")
        for name in ["seed.db", "seed.db.zst"] {
            let verify = try run(["verify", publish + "/" + name])
            #expect(verify.status == 0, "\(point) \(name): \(verify.stdoutText) \(verify.stderrText)")
        }
    }

    @Test func aSignedDeltaPublicationVerifiesWithItsKeyAndIsRefusedWithAnother() throws {
        #expect(try run(["keygen", "--out", directory.path("release.key")]).status == 0)
        #expect(try run(["keygen", "--out", directory.path("other.key")]).status == 0)
        let file = try pipelineFile(sign: true)
        let published = try run(["pipeline", "run", file, "--json"])
        #expect(published.status == 0, "\(published.stderrText)")
        let previous = directory.path("previous.db")
        try FileManager.default.copyItem(atPath: publish + "/seed.db", toPath: previous)
        try writeArticles(31...32)
        let second = try run(["pipeline", "run", file])
        #expect(second.status == 0, "\(second.stderrText)")
        #expect(FileManager.default.fileExists(atPath: publish + "/seed.db.patch.zst"))
        for name in ["seed.db", "seed.db.zst"] {
            let trusted = try run(["verify", publish + "/" + name, "--trusted-key", directory.path("release.key.pub")])
            #expect(trusted.status == 0, "\(name): \(trusted.stdoutText) \(trusted.stderrText)")
            let untrusted = try run(
                ["verify", publish + "/" + name, "--trusted-key", directory.path("other.key.pub"), "--json"])
            #expect(untrusted.status == 6, "\(name): \(untrusted.status)")
            #expect(untrusted.stdoutText.contains("signature_untrusted"), "\(untrusted.stdoutText)")
        }
        // The signed patch rebuilds the new seed from the previous one, checked against the signed digest; the
        // signed frame installs.
        let rebuilt = directory.path("rebuilt.db")
        let unpack = try run(
            ["unpack", publish + "/seed.db.patch.zst", "--patch-from", previous, "--out", rebuilt,
             "--trusted-key", directory.path("release.key.pub")])
        #expect(unpack.status == 0, "\(unpack.stderrText)")
        #expect(FileManager.default.contents(atPath: rebuilt) == FileManager.default.contents(atPath: publish + "/seed.db"))
        let install = try run(
            ["install", publish + "/seed.db.zst", "--to", directory.path("app.db"),
             "--trusted-key", directory.path("release.key.pub")])
        #expect(install.status == 0, "\(install.stderrText)")
    }
}
