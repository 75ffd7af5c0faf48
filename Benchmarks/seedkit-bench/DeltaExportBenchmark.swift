import Foundation
import SeedSources
import SQLiteKit
import SynchroProtocol
import SynchroServer

extension Benchmark {
    static let deltaExport = Benchmark(
        name: "seed.delta-export",
        summary: "delta export (`export --source delta:FILE.json`, seed 003 changes pages of 2,000) from the reference "
            + "delta server over loopback at 100,000 and 1,000,000 rows, including the seed's digests and its "
            + "verification; baseline in the same run: a raw SQLite insert of the same rows (goal ≥ 0.3x); and the "
            + "peak RSS of the `seedkit export` child at both sizes (goals < 200 MB, within 1.1x)"
    ) { options in
        try DeltaExportBenchmark(options: options).figures()
    }
}

/// One reference delta server per size (in this process, its store on disk), the export timed in-process, the raw
/// insert of the exported rows timed alone, and a `seedkit export` child sampled for its resident memory.
private struct DeltaExportBenchmark {
    let options: BenchmarkOptions

    struct Size {
        let rows: Int
        let exportRate: Double
        let rawInsertRate: Double
        /// Rows per CPU-second of this process (the export's threads and the in-process server's; the raw insert):
        /// the figure a loaded machine distorts least, since the export's two threads get more of a shared machine
        /// than the one-thread insert does.
        let exportCPURate: Double
        let rawInsertCPURate: Double
        let peakBytes: Int
    }

    func figures() throws -> [BenchmarkFigure] {
        let small = try measure(rows: max(1, Int(100_000 * options.scale)))
        let large = try measure(rows: max(1, Int(1_000_000 * options.scale)))
        var figures: [BenchmarkFigure] = []
        for size in [small, large] {
            figures.append(BenchmarkFigure(
                name: "seed.delta-export (\(size.rows) rows over loopback, with digests and verification)",
                value: size.exportRate, unit: "rows/s",
                baseline: .init(value: size.rawInsertRate, unit: "rows/s raw SQLite insert")))
            figures.append(BenchmarkFigure(
                name: "seed.delta-export CPU (\(size.rows) rows, server in the same process)",
                value: size.exportCPURate, unit: "rows per CPU-second",
                baseline: .init(value: size.rawInsertCPURate, unit: "rows per CPU-second raw SQLite insert")))
        }
        let ratio = small.peakBytes == 0 ? 0 : Double(large.peakBytes) / Double(small.peakBytes)
        figures.append(BenchmarkFigure(
            name: "seed.delta-export peak RSS, sampled (\(large.rows) rows, seedkit export child)",
            value: Double(large.peakBytes) / 1_000_000,
            unit: (large.peakBytes < 200_000_000 ? "MB, goal < 200 met" : "MB, GOAL < 200 NOT MET")
                + (ratio <= 1.1 ? ", within 1.1x met" : ", WITHIN 1.1x NOT MET"),
            baseline: .init(value: Double(small.peakBytes) / 1_000_000, unit: "MB at \(small.rows) rows")))
        return figures
    }

    private func measure(rows: Int) throws -> Size {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("seedkit-bench-delta-\(UUID().uuidString.lowercased())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try DeltaReferenceServer(storePath: directory + "/store.db", entities: ["rows"], token: nil)
        try populate(server.store, rows: rows)
        try server.start()
        defer { server.stop() }
        let definitionText = """
            {"format": "seedkit-delta-source/1", "base_url": "\(server.baseURL)",
             "entities": [{"name": "rows", "table": "rows", "primary_key": "id",
               "columns": [{"name": "id", "type": "string"}, {"name": "title", "type": "string"},
                           {"name": "words", "type": "int64"}],
               "paging": {"shape": "changes", "path": "/v1/sync/rows", "limit": 2000}}]}
            """
        let definition = try DeltaSourceDefinition(bytes: Array(definitionText.utf8))
        let clock = ContinuousClock()
        var exports: [Duration] = []
        var exportCPU: [Duration] = []
        let seed = directory + "/seed.db"
        for _ in 0..<max(1, min(3, options.iterations)) {
            try? FileManager.default.removeItem(atPath: seed)
            try? FileManager.default.removeItem(atPath: seed + ".evidence.json")
            let (start, cpu) = (clock.now, CPUClock.process())
            _ = try DeltaExporter.export(definition: definition, bearerToken: nil, to: seed)
            exports.append(start.duration(to: clock.now))
            exportCPU.append(CPUClock.process() - cpu)
        }
        let inserts = try (0..<max(1, min(3, options.iterations))).map { round in
            try rawInsert(from: seed, into: directory + "/raw-\(round).db")
        }
        let definitionPath = directory + "/source.json"
        try Data(definitionText.utf8).write(to: URL(fileURLWithPath: definitionPath))
        let child = try ChildProcess(
            executable: try ChildProcess.seedkitExecutable(),
            arguments: ["export", "--source", "delta:" + definitionPath, "--out", directory + "/child.db", "--quiet"],
            environment: [:], captureOutput: false)
        let outcome = try child.wait(sampling: .milliseconds(20))
        guard outcome.exitStatus == 0 else {
            throw BenchmarkFailure("seedkit export --source delta: failed (status \(outcome.exitStatus ?? -1))")
        }
        return Size(
            rows: rows, exportRate: Double(rows) / Samples(durations: exports).median.seconds,
            rawInsertRate: Double(rows) / Samples(durations: inserts.map(\.wall)).median.seconds,
            exportCPURate: Double(rows) / Samples(durations: exportCPU).median.seconds,
            rawInsertCPURate: Double(rows) / Samples(durations: inserts.map(\.cpu)).median.seconds,
            peakBytes: outcome.sampledAnonymousBytes + outcome.sampledFileBytes)
    }

    /// `{"id": "r<n>", "title": "Row <n>", "words": n}` rows, 10,000 per transaction.
    private func populate(_ store: DeltaStore, rows: Int) throws {
        var next = 1
        while next <= rows {
            let last = min(rows, next + 9_999)
            try store.write(entity: "rows", (next...last).map { index in
                ("r\(index)", JSONObject([
                    JSONMember("id", .string("r\(index)")), JSONMember("title", .string("Row \(index)")),
                    JSONMember("words", .number(JSONNumber(Int64(index)))),
                ]))
            })
            next = last + 1
        }
    }

    /// The physical floor: the exported rows, read beforehand, inserted into a new database of the same table in one
    /// transaction with one prepared statement (timed alone).
    private func rawInsert(from seed: String, into path: String) throws -> (wall: Duration, cpu: Duration) {
        let source = try Connection(path: seed, mode: .readOnly)
        let rows = try source.rows("SELECT id, title, words FROM rows")
        source.close()
        let connection = try Connection(path: path)
        defer { connection.close() }
        _ = try connection.setJournalMode(.delete)
        try connection.execute("CREATE TABLE rows (id TEXT NOT NULL PRIMARY KEY, title TEXT NOT NULL, words INTEGER NOT NULL)")
        let clock = ContinuousClock()
        let (start, cpu) = (clock.now, CPUClock.process())
        try connection.execute("BEGIN")
        let statement = try connection.prepare("INSERT INTO rows (id, title, words) VALUES (?, ?, ?)")
        for row in rows { try statement.run(row) }
        try connection.execute("COMMIT")
        return (start.duration(to: clock.now), CPUClock.process() - cpu)
    }
}
