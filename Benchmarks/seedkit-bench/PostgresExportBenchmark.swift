import Foundation
import PostgresKit
import SeedArtifacts
import SeedSources
import Synchronization
import _SeedkitTestSupport

extension Benchmark {
    static let postgresExport = Benchmark(
        name: "seed.postgres-export",
        summary: "export from PostgreSQL through upstream's function interface: the reference server's own synchro "
            + "functions on its PostgreSQL store, time split between those functions (pg_stat_user_functions) and "
            + "seedkit, at 100,000 and 1,000,000 catalog rows; baselines in the same run: "
            + "`COPY (SELECT …) TO STDOUT` of the same rows (the floor) and a raw SQLite insert of the same rows "
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
                    name: "seed.postgres-export (\(rows)): share of the time inside the source's calls",
                    value: size.functionShare * 100, unit: "%"),
                BenchmarkFigure(
                    name: "seed.postgres-export (\(rows)): share of the time executing the server's synchro functions",
                    value: size.serverFunctionShare * 100, unit: "%"),
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
        /// The share of the export's wall time spent inside the source's calls (functions, libpq, jsonb, re-encoding).
        let functionShare: Double
        /// The share spent executing the server's `synchro` functions (`pg_stat_user_functions`).
        let serverFunctionShare: Double
        let peakBytes: Int
    }

    private func measure(_ cluster: PostgresCluster, catalogRows: Int) throws -> Size {
        // The reference server on PostgreSQL, with its own synchro functions; function timing on for its database.
        let suffix = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let database = "bench_\(suffix)"
        try cluster.execute("CREATE DATABASE \(database)")
        try cluster.execute("ALTER DATABASE \(database) SET track_functions = 'all'")
        let server = try BenchServer(
            catalogRows: catalogRows, postgresStore: cluster.socketConnectionString(database: database))
        let exporter = "bench_exporter_\(suffix)"
        try cluster.createLogin(exporter, password: "bench-\(suffix)", memberOf: "synchro_seed")
        let connection = cluster.socketConnectionString(database: database, user: exporter)
        let admin = try PostgresConnection(connectionString: cluster.socketConnectionString(database: database))

        let clock = ContinuousClock()
        let seed = server.scratchPath("pg.db")
        var exports: [Duration] = []
        var inside: [Duration] = []
        var functions: [Duration] = []
        var rows = 0
        for round in 0..<max(1, min(3, options.iterations)) {
            if round > 0 { SeedFiles.remove(seed) }
            _ = try admin.execute("SELECT pg_stat_reset()")
            let report: SeedExportReport
            do {
                let timed = TimedSource(try PostgresExportSource(connectionString: connection))
                let start = clock.now
                report = try SeedExporter.export(from: timed, to: seed, options: .init(pageLimit: 1000, verify: false))
                exports.append(start.duration(to: clock.now))
                inside.append(timed.elapsed)
            }
            rows = Int(report.rows)
            // The source is gone, so its backend exits and flushes its function counters.
            let calls = 2 + report.scopes.reduce(0) { $0 + max(1, (Int($1.cardinality) + 999) / 1000) }
            functions.append(try functionTime(admin, calls: calls))
        }
        let exportMedian = Samples(durations: exports).median

        var copies: [Duration] = []
        for _ in 0..<max(1, min(3, options.iterations)) {
            var octets = 0
            let start = clock.now
            _ = try admin.copyOut("""
                COPY (SELECT m.scope_id, p.table_id, p.pk, p.row, p.server_version, p.row_digest
                      FROM seedkit_server.membership m JOIN seedkit_server.projection p ON p.identity = m.identity
                      WHERE p.state = 0 ORDER BY m.scope_id, m.identity) TO STDOUT
                """) { octets += $0.count }
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
        // Not `ru_maxrss`: a spawned child's maximum starts at the spawning process's resident set (Linux keeps the
        // pre-exec image's high-water mark). The child's own anonymous and file-backed resident memory, sampled
        // every 20 ms, is its own.
        let peak = outcome.sampledAnonymousBytes + outcome.sampledFileBytes
        return Size(
            rows: rows, exportRate: Double(rows) / exportMedian.seconds,
            copyRate: Double(rows) / Samples(durations: copies).median.seconds,
            rawInsertRate: Double(raw.rows) / Samples(durations: inserts).median.seconds,
            functionShare: Samples(durations: inside).median.seconds / exportMedian.seconds,
            serverFunctionShare: Samples(durations: functions).median.seconds / exportMedian.seconds,
            peakBytes: peak)
    }

    /// The total time of the `synchro` functions' calls since the last reset (`pg_stat_user_functions`, their
    /// helpers included), once the exporter's backend has flushed all `calls` of them: a backend flushes its
    /// counters when it exits, a moment after its client closed the connection, so this polls (10 s at most).
    private func functionTime(_ admin: PostgresConnection, calls: Int) throws -> Duration {
        for _ in 0..<200 {
            _ = try admin.execute("SELECT pg_stat_clear_snapshot()")
            let row = try admin.execute("""
                SELECT coalesce(sum(calls), 0)::text || ' ' || coalesce(sum(total_time), 0)::text
                FROM pg_stat_user_functions WHERE schemaname = 'synchro'
                """).scalar ?? ""
            let parts = row.split(separator: " ")
            if parts.count == 2, let seen = Int(parts[0]), seen >= calls, let milliseconds = Double(parts[1]) {
                return .nanoseconds(Int64(milliseconds * 1_000_000))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw BenchmarkFailure("the exporter's function counters never reached \(calls) calls")
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
