import Foundation
import PostgresKit
import SeedArtifacts
import SeedSources
import Synchronization
import _SeedkitTestSupport

extension Benchmark {
    static let postgresExport = Benchmark(
        name: "seed.postgres-export",
        summary: "export from PostgreSQL through upstream's function interface (the test support's replay of a "
            + "reference-server export: the functions return stored pages, so the figure is seedkit's side plus "
            + "libpq and jsonb output) at 100,000 and 1,000,000 catalog rows; baselines in the same run: "
            + "`COPY (SELECT …) TO STDOUT` of the same pages (the floor) and a raw SQLite insert of the same rows "
            + "(goal ≥ 0.2x), and the peak RSS of `seedkit export --source postgresql://` at both sizes "
            + "(goals < 200 MB, within 1.1x)"
    ) { options in
        try PostgresExportBenchmark(options: options).figures()
    }
}

/// One throwaway cluster, one replay per size, each measured in-process (time) and as a child process (memory).
private struct PostgresExportBenchmark {
    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let small = try measure(cluster, catalogRows: max(1, Int(100_000 * options.scale)))
        let large = try measure(cluster, catalogRows: max(1, Int(1_000_000 * options.scale)))
        var figures: [BenchmarkFigure] = []
        for size in [small, large] {
            let rows = "\(size.rows) rows"
            figures += [
                BenchmarkFigure(
                    name: "seed.postgres-export (\(rows), without the final verification)", value: size.exportRate,
                    unit: "rows/s", baseline: .init(value: size.rawInsertRate, unit: "rows/s raw SQLite insert")),
                BenchmarkFigure(
                    name: "seed.postgres-export (\(rows)) against COPY", value: size.exportRate, unit: "rows/s",
                    baseline: .init(value: size.copyRate, unit: "rows/s COPY (SELECT …) TO STDOUT")),
                BenchmarkFigure(
                    name: "seed.postgres-export (\(rows)): share of the time inside the functions' calls",
                    value: size.functionShare * 100, unit: "%"),
            ]
        }
        figures.append(BenchmarkFigure(
            name: "seed.postgres-export peak RSS, sampled (\(large.rows) rows, seedkit export child)",
            value: Double(large.peakBytes) / 1_000_000,
            unit: large.peakBytes < 200_000_000 ? "MB, goal < 200 met" : "MB, GOAL < 200 NOT MET",
            baseline: .init(value: Double(small.peakBytes) / 1_000_000, unit: "MB at \(small.rows) rows")))
        return figures
    }

    struct Size {
        let rows: Int
        let exportRate: Double
        let copyRate: Double
        let rawInsertRate: Double
        let functionShare: Double
        let peakBytes: Int
    }

    private func measure(_ cluster: PostgresCluster, catalogRows: Int) throws -> Size {
        let server = try BenchServer(catalogRows: catalogRows)
        let recorder = ExportRecorder(
            try HTTPExportSource(baseURL: server.baseURL, operatorToken: BenchServer.operatorToken))
        _ = try SeedExporter.export(
            from: recorder, to: server.scratchPath("http.db"), options: .init(pageLimit: 1000, verify: false))
        let replay = try SeedExportReplay(cluster: cluster, recording: recorder.recording)
        let connection = cluster.socketConnectionString(database: replay.database, user: replay.exporter)

        let clock = ContinuousClock()
        let seed = server.scratchPath("pg.db")
        var exports: [Duration] = []
        var inside: [Duration] = []
        var rows = 0
        for round in 0..<max(1, min(3, options.iterations)) {
            if round > 0 { SeedFiles.remove(seed) }
            let timed = TimedSource(try PostgresExportSource(connectionString: connection))
            let start = clock.now
            let report = try SeedExporter.export(from: timed, to: seed, options: .init(pageLimit: 1000, verify: false))
            exports.append(start.duration(to: clock.now))
            inside.append(timed.elapsed)
            rows = Int(report.rows)
        }
        let exportMedian = Samples(durations: exports).median

        let copier = try replay.superuser()
        var copies: [Duration] = []
        for _ in 0..<max(1, min(3, options.iterations)) {
            var octets = 0
            let start = clock.now
            _ = try copier.copyOut(
                "COPY (SELECT body FROM synchro_replay.pages ORDER BY scope_id, expected_row_ordinal) TO STDOUT"
            ) { octets += $0.count }
            copies.append(start.duration(to: clock.now))
            Stopwatch.blackHole(octets)
        }
        let raw = try RawSeedInsert(seed: seed, scratch: server.scratchPath("raw.db"))
        _ = try raw.insertOnce()
        let inserts = try (0..<max(1, min(3, options.iterations))).map { _ in try raw.insertOnce() }

        let child = try ChildProcess(
            executable: try ChildProcess.seedkitExecutable(),
            arguments: ["export", "--source", connection, "--out", server.scratchPath("child.db"), "--quiet"],
            environment: [:], captureOutput: false)
        let outcome = try child.wait(sampling: .milliseconds(20))
        guard outcome.exitStatus == 0 else {
            throw BenchmarkFailure("seedkit export from PostgreSQL failed (status \(outcome.exitStatus ?? -1))")
        }
        let insideMedian = Samples(durations: inside).median
        // Not `ru_maxrss`: a spawned child's maximum starts at the spawning process's resident set (Linux keeps the
        // pre-exec image's high-water mark), and this process holds the whole recording. The child's own anonymous
        // and file-backed resident memory, sampled every 20 ms, is its own.
        let peak = outcome.sampledAnonymousBytes + outcome.sampledFileBytes
        return Size(
            rows: rows, exportRate: Double(rows) / exportMedian.seconds,
            copyRate: Double(rows) / Samples(durations: copies).median.seconds,
            rawInsertRate: Double(raw.rows) / Samples(durations: inserts).median.seconds,
            functionShare: insideMedian.seconds / exportMedian.seconds, peakBytes: peak)
    }

}

/// Sums the wall time spent inside the source's calls (the database's functions, libpq, jsonb text and its
/// re-encoding), so the export's time can be split between the functions and the exporter.
private final class TimedSource: SeedExportSource {
    private let base: PostgresExportSource
    private let total = Mutex<Duration>(.zero)

    init(_ base: PostgresExportSource) {
        self.base = base
    }

    var elapsed: Duration { total.withLock { $0 } }

    private func timed<Value>(_ body: () throws(SeedExportError) -> Value) throws(SeedExportError) -> Value {
        let clock = ContinuousClock()
        let start = clock.now
        defer { total.withLock { $0 += start.duration(to: clock.now) } }
        return try body()
    }

    func schemaManifest() throws(SeedExportError) -> [UInt8] {
        try timed { () throws(SeedExportError) in try base.schemaManifest() }
    }
    func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try timed { () throws(SeedExportError) in try base.exportManifest(pageLimit: pageLimit) }
    }
    func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        try timed { () throws(SeedExportError) in try base.scopePage(request) }
    }
    func finish() throws(SeedExportError) { try timed { () throws(SeedExportError) in try base.finish() } }
}
