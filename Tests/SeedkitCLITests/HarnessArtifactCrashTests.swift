import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The randomized crash harness of the seed tools (docs/reliability.md): `seedkit export`, `seedkit install` and
/// `seedkit pipeline run` are killed with SIGKILL at a random named boundary (`SEEDKIT_CRASH_AT=export.*:<n>`),
/// after a random number of file system events in their output directory, or (pipeline) after a random number of
/// `--json` event lines — sometimes over an earlier publication. After every kill the output holds either nothing,
/// the earlier publication byte for byte, or a complete new one that verifies; never a partial file or sidecar
/// under a published name. The next run then completes. Trial counts and seed as for the sync harness.
@Suite("Harness: randomized process death of export, install and pipeline", .serialized)
struct HarnessArtifactCrashTests {
    /// The exporter's boundaries up to the seed's durability (`export.published`: the verified seed durable under its
    /// hidden temporary name).
    static let exporterPoints = ["export.page", "export.committed", "export.finalized", "export.verified",
                                 "export.published"]
    /// With evidence (`seedkit export`), the publication of the evidence, then of the seed.
    static let exportPoints = exporterPoints + ["export.evidence_published", "export.seed_published"]

    @Test("a killed export leaves no published file, or a complete one, and the next export publishes")
    func export() throws {
        let configuration = HarnessConfiguration(trialsDefault: 4)
        let server = try RunningServer(rows: 60)
        let directory = try TemporaryDirectory(prefix: "seedkit-harness-export")
        let stats = HarnessStats()
        let started = ContinuousClock.now
        let arguments = { (out: String) in
            ["export", "--source", server.baseURL, "--out", out, "--token-env", "TEST_OPERATOR", "--page-limit", "10",
             "--quiet"]
        }
        let environment = ["TEST_OPERATOR": RunningServer.operatorToken]
        let calibration = directory.path("calibration")
        try FileManager.default.createDirectory(atPath: calibration, withIntermediateDirectories: true)
        let reference = try HarnessChild.run(
            arguments(calibration + "/seed.db"), environment: environment,
            trigger: .fileEvents(directory: calibration, count: .max))
        try #require(reference.succeeded, "\(reference.stderrText)")
        print("crash harness (export): \(configuration.trials) trials, seed \(configuration.seed); a complete export "
            + "makes \(reference.fileEvents) file events")

        for trial in 0..<configuration.trials {
            var random = SeededRandom(seed: configuration.seed, step: trial)
            stats.trials += 1
            let out = directory.path("export-\(trial)")
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let seed = out + "/seed.db"
            var previous: [UInt8]?
            if random.chance(0.3) {
                stats.processes += 1
                try #require(try HarnessChild.run(arguments(seed), environment: environment).succeeded)
                previous = try Self.bytes(seed)
            }
            var killEnvironment = environment
            var trigger = HarnessTrigger.none
            var label = "file-event"
            if random.chance(0.6) {
                let point = random.pick(Self.exportPoints) ?? "export.page"
                let occurrence = point == "export.page" ? ":\(random.inRange(1...8))" : ""
                killEnvironment["SEEDKIT_CRASH_AT"] = point + occurrence
                label = point
            } else {
                trigger = .fileEvents(directory: out, count: random.inRange(1...max(1, reference.fileEvents)))
            }
            stats.processes += 1
            let run = try HarnessChild.run(
                arguments(seed) + (previous == nil ? [] : ["--force"]), environment: killEnvironment, trigger: trigger)
            if run.killed {
                stats.kills[label, default: 0] += 1
            } else {
                try #require(run.succeeded, "trial \(trial): \(run.stderrText)")
                stats.notReached += 1
            }
            try Self.expectPublicationIntact(seed, previous: previous, stats: stats, trial: trial)

            stats.processes += 1
            let again = try HarnessChild.run(arguments(seed) + ["--force"], environment: environment)
            try #require(again.succeeded, "trial \(trial): the export after the kill: \(again.stderrText)")
            try Self.expectVerifies(seed, stats: stats, trial: trial)
            try Self.expectEvidenceMatches(seed, trial: trial)
        }
        stats.seconds = (ContinuousClock.now - started).harnessSeconds
        print(stats.report(title: "crash harness (export), seed \(configuration.seed)"))
        #expect(stats.kills.values.reduce(0, +) > 0)
    }

    @Test("a killed install leaves no database, or a complete valid one, and never a sidecar beside it")
    func install() throws {
        let configuration = HarnessConfiguration(trialsDefault: 4)
        let server = try RunningServer(rows: 60)
        let directory = try TemporaryDirectory(prefix: "seedkit-harness-install")
        let seed = directory.path("seed.db")
        let export = try HarnessChild.run(
            ["export", "--source", server.baseURL, "--out", seed, "--token-env", "TEST_OPERATOR", "--quiet"],
            environment: ["TEST_OPERATOR": RunningServer.operatorToken])
        try #require(export.succeeded, "\(export.stderrText)")
        try #require(try HarnessChild.run(["pack", seed, "--level", "3"]).succeeded)
        let stats = HarnessStats()
        let started = ContinuousClock.now
        let calibration = directory.path("calibration")
        try FileManager.default.createDirectory(atPath: calibration, withIntermediateDirectories: true)
        let reference = try HarnessChild.run(
            ["install", seed + ".zst", "--to", calibration + "/app.db"],
            trigger: .fileEvents(directory: calibration, count: .max))
        try #require(reference.succeeded, "\(reference.stderrText)")
        print("crash harness (install): \(configuration.trials) trials, seed \(configuration.seed); a complete "
            + "install makes \(reference.fileEvents) file events")

        for trial in 0..<configuration.trials {
            var random = SeededRandom(seed: configuration.seed, step: trial)
            stats.trials += 1
            let destination = directory.path("device-\(trial)")
            try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
            let app = destination + "/app.db"
            let input = random.chance(0.7) ? seed + ".zst" : seed
            stats.processes += 1
            let run = try HarnessChild.run(
                ["install", input, "--to", app],
                trigger: .fileEvents(directory: destination, count: random.inRange(1...max(1, reference.fileEvents))))
            if run.killed {
                stats.kills["file-event", default: 0] += 1
            } else {
                try #require(run.succeeded, "trial \(trial): \(run.stderrText)")
                stats.notReached += 1
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: destination)
            let published = names.filter { !$0.hasPrefix(".") }
            #expect(published == [] || published == ["app.db"], "trial \(trial): \(published)")
            if published == ["app.db"] {
                if run.killed { stats.observations["published_before_the_kill", default: 0] += 1 }
                stats.processes += 1
                let validation = try HarnessChild.run(["validate", "--db", app])
                #expect(validation.succeeded,
                        "trial \(trial): a published install does not validate: \(validation.stdoutText)")
                let again = try HarnessChild.run(["install", input, "--to", app])
                #expect(!again.signaled && again.status == 2 && again.stderrText.contains("already exists"),
                        "trial \(trial): \(again.stderrText)")
            } else {
                stats.processes += 2
                let again = try HarnessChild.run(["install", input, "--to", app])
                #expect(again.succeeded, "trial \(trial): the install after the kill: \(again.stderrText)")
                #expect(try HarnessChild.run(["validate", "--db", app]).succeeded, "trial \(trial)")
            }
        }
        stats.seconds = (ContinuousClock.now - started).harnessSeconds
        print(stats.report(title: "crash harness (install), seed \(configuration.seed)"))
        #expect(stats.kills.values.reduce(0, +) > 0)
    }

    @Test("a killed pipeline leaves the previous publication or a complete new one, and the next run publishes")
    func pipeline() throws {
        let configuration = HarnessConfiguration(trialsDefault: 4)
        let directory = try TemporaryDirectory(prefix: "seedkit-harness-pipeline")
        let stats = HarnessStats()
        let started = ContinuousClock.now
        func pipelineFile(_ name: String, rows: Int) throws -> String {
            let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
            return try directory.write("\(name).json", Array("""
                {"source": {"embedded": {"dataset": "\(dataset)", "rows": \(rows)}}, "page_limit": 10,
                 "pack": {"level": 3}, "rehearsal": {"user": "alice"}, "publish": {"directory": "out/\(name)"}}
                """.utf8))
        }
        // The publish directories' parent exists first, so that the watch sees each run's scratch directory appear.
        let parent = directory.path("out")
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        let reference = try HarnessChild.run(
            ["pipeline", "run", try pipelineFile("calibration", rows: 40), "--json"],
            trigger: .fileEvents(directory: parent, count: .max))
        try #require(reference.succeeded, "\(reference.stderrText)")
        print("crash harness (pipeline): \(configuration.trials) trials, seed \(configuration.seed); a complete run "
            + "prints \(reference.lines.count) event lines and makes \(reference.fileEvents) file events")

        for trial in 0..<configuration.trials {
            var random = SeededRandom(seed: configuration.seed, step: trial)
            stats.trials += 1
            let name = "p\(trial)"
            let publish = directory.path("out/\(name)")
            var previous: [String: [UInt8]]?
            if random.chance(0.4) {
                stats.processes += 1
                try #require(try HarnessChild.run(["pipeline", "run", try pipelineFile(name, rows: 40)]).succeeded)
                previous = try Self.publication(publish)
            }
            // Another row count, so the run is not "up to date" over the previous publication.
            let file = try pipelineFile(name, rows: 41 + random.below(5))
            var environment: [String: String] = [:]
            var trigger = HarnessTrigger.none
            var label: String
            switch random.below(3) {
            case 0:
                let point = random.pick(Self.exporterPoints) ?? "export.page"
                let occurrence = point == "export.page" ? ":\(random.inRange(1...8))" : ""
                environment["SEEDKIT_CRASH_AT"] = point + occurrence
                label = point
            case 1:
                trigger = .lines(random.inRange(1...max(1, reference.lines.count)))
                label = "line"
            default:
                trigger = .fileEvents(directory: parent, count: random.inRange(1...max(1, reference.fileEvents)))
                label = "file-event"
            }
            stats.processes += 1
            let run = try HarnessChild.run(
                ["pipeline", "run", file, "--json"], environment: environment, trigger: trigger)
            if run.killed {
                if label == "line" { label = "line:" + (Self.lastStep(run) ?? "none") }
                stats.kills[label, default: 0] += 1
            } else {
                try #require(run.succeeded, "trial \(trial): \(run.stderrText)")
                stats.notReached += 1
            }
            let after = try Self.publication(publish)
            if let after {
                #expect(after.keys.sorted() == ["SHA256SUMS", "evidence.json", "seed.db", "seed.db.zst"],
                        "trial \(trial): \(after.keys.sorted())")
                #expect(Self.sumsMatch(after), "trial \(trial): SHA256SUMS does not match the publication")
                if run.killed && label.hasPrefix("export.") {
                    #expect(after == previous, "trial \(trial): a kill during the export changed the publication")
                }
            } else {
                #expect(previous == nil, "trial \(trial): the kill removed the previous publication")
            }
            stats.processes += 1
            let again = try HarnessChild.run(["pipeline", "run", file])
            try #require(again.succeeded, "trial \(trial): the run after the kill: \(again.stderrText)")
            let final = try #require(try Self.publication(publish))
            #expect(Self.sumsMatch(final), "trial \(trial)")
            try Self.expectVerifies(publish + "/seed.db", stats: stats, trial: trial)
        }
        stats.seconds = (ContinuousClock.now - started).harnessSeconds
        print(stats.report(title: "crash harness (pipeline), seed \(configuration.seed)"))
        #expect(stats.kills.values.reduce(0, +) > 0)
    }

    // MARK: - Checks

    /// Only `seed.db`, its evidence and hidden temporaries may be in the directory; a `seed.db` is the earlier
    /// publication byte for byte or a new one that verifies.
    static func expectPublicationIntact(_ seed: String, previous: [UInt8]?, stats: HarnessStats, trial: Int) throws {
        let directory = (seed as NSString).deletingLastPathComponent
        let visible = try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }
        #expect(Set(visible).isSubset(of: ["seed.db", "seed.db.evidence.json"]), "trial \(trial): \(visible)")
        guard FileManager.default.fileExists(atPath: seed) else {
            #expect(previous == nil, "trial \(trial): the kill removed the earlier publication")
            return
        }
        if let previous, try bytes(seed) == previous {
            // `--force` publishes the new evidence before the new seed: a kill in between leaves it beside the
            // earlier seed, told apart by its SHA-256 (docs/cli.md).
            if try !evidenceMatches(seed) { stats.observations["new_evidence_beside_the_earlier_seed", default: 0] += 1 }
            return
        }
        try expectVerifies(seed, stats: stats, trial: trial)
        // The evidence is published before the seed: a new seed always has its own evidence beside it.
        let hasEvidence = FileManager.default.fileExists(atPath: seed + ".evidence.json")
        #expect(try hasEvidence && evidenceMatches(seed), "trial \(trial): a published seed without its evidence")
    }

    static func expectVerifies(_ seed: String, stats: HarnessStats, trial: Int) throws {
        stats.processes += 1
        let verify = try HarnessChild.run(["verify", seed])
        #expect(verify.succeeded, "trial \(trial): \(verify.stdoutText)\(verify.stderrText)")
    }

    /// The evidence beside a seed names the seed's own SHA-256.
    static func expectEvidenceMatches(_ seed: String, trial: Int) throws {
        #expect(try evidenceMatches(seed), "trial \(trial): the evidence does not name the published seed")
    }

    static func evidenceMatches(_ seed: String) throws -> Bool {
        let evidence = try StrictJSONParser().parse(try bytes(seed + ".evidence.json")).objectValue
        let artifact = evidence?["artifacts"]?.arrayValue?.first?.objectValue
        return artifact?["sha256"]?.stringValue == Hex.encode(SHA256.hash(try bytes(seed)))
    }

    /// Every file of a publish directory, or nil when there is none.
    static func publication(_ directory: String) throws -> [String: [UInt8]]? {
        guard FileManager.default.fileExists(atPath: directory) else { return nil }
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            files[name] = try bytes(directory + "/" + name)
        }
        return files
    }

    /// `SHA256SUMS` lists every other file with its digest.
    static func sumsMatch(_ files: [String: [UInt8]]) -> Bool {
        guard let sums = files["SHA256SUMS"] else { return false }
        let lines = String(decoding: sums, as: UTF8.self).split(separator: "\n").map(String.init)
        let expected = files.keys.filter { $0 != "SHA256SUMS" }.sorted().map { name in
            "\(Hex.encode(SHA256.hash(files[name] ?? [])))  \(name)"
        }
        return lines.sorted() == expected.sorted()
    }

    /// The step a line-triggered kill followed.
    static func lastStep(_ run: HarnessOutcome) -> String? {
        guard let line = run.lines.last, let object = try? StrictJSONParser().parse(line).objectValue else {
            return nil
        }
        return [object["event"]?.stringValue, object["step"]?.stringValue].compactMap { $0 }.joined(separator: ":")
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
