import CSQLite
import Foundation
import SQLiteKit
import SeedArtifacts
import SeedSources

extension Benchmark {
    static let seedArtifacts = Benchmark(
        name: "seed.artifacts",
        summary: "export (over HTTP from the reference server, every page and row digest checked), verify and "
            + "device-style install of the 100,000-row demo portable scope; baseline: a raw SQLite insert of "
            + "the same rows into the same synced tables (goals: verify ≥ 300,000 rows/s, install within 2x)"
    ) { options in
        try SeedArtifactsBenchmark(options: options).figures()
    }
}

/// Export, verify and install of one seed, each next to the physical floor of writing its rows.
private struct SeedArtifactsBenchmark {
    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let server = try BenchServer(catalogRows: max(1, Int(100_000 * options.scale)))
        let source = try HTTPExportSource(baseURL: server.baseURL, operatorToken: BenchServer.operatorToken)
        let seed = server.scratchPath("seed.db")
        var report: SeedExportReport?
        var exportDurations: [Duration] = []
        let clock = ContinuousClock()
        for round in 0..<max(1, min(3, options.iterations)) {
            if round > 0 { SeedFiles.remove(seed) }
            let start = clock.now
            report = try SeedExporter.export(from: source, to: seed, options: .init(pageLimit: 1000, verify: false))
            exportDurations.append(start.duration(to: clock.now))
        }
        guard let report else { throw BenchmarkFailure("no export ran") }
        let rows = Int(report.rows)
        let raw = try RawSeedInsert(seed: seed, scratch: server.scratchPath("raw.db"))
        _ = try raw.insertOnce()
        let unit = "rows/s"
        let exportRate = Double(rows) / Samples(durations: exportDurations).median.seconds
        // Each round runs the raw insert, verify and install back to back, so that the baseline sees the same load
        // as the figures it is compared with (a shared machine's load changes from one second to the next).
        var insert: [Duration] = []
        var verify = Runs()
        var install = Runs()
        let loadBefore = LoadAverage.oneMinute()
        for _ in 0..<max(1, min(5, options.iterations)) {
            insert.append(try raw.insertOnce())
            let verification = try verify.measure { try SeedVerifier.verify(path: seed) }
            guard verification.ok else { throw BenchmarkFailure("the exported seed does not verify") }
            let app = server.scratchPath("app.db")
            SeedFiles.remove(app)
            _ = try install.measure { try SeedInstaller.install(seed: seed, to: app) }
        }
        let loadAfter = LoadAverage.oneMinute()
        let inserts = Samples(durations: insert)
        let baseline = Double(raw.rows) / inserts.median.seconds
        let rawBaseline = BenchmarkFigure.Baseline(value: baseline, unit: "rows/s raw insert")
        let perCPU = "rows per CPU-second (user + system, all threads)"
        return [
            BenchmarkFigure(name: "seed.export (\(rows) rows, without the final verification)", value: exportRate,
                            unit: unit, baseline: rawBaseline),
            BenchmarkFigure(name: "seed.raw-insert, median of the rounds", value: baseline, unit: unit),
            BenchmarkFigure(name: "seed.verify (publication + installer checks)",
                            value: Double(rows) / verify.wall.median.seconds, unit: unit, baseline: rawBaseline),
            BenchmarkFigure(name: "seed.verify, best run", value: Double(rows) / verify.wall.best.seconds, unit: unit,
                            baseline: BenchmarkFigure.Baseline(
                                value: Double(raw.rows) / inserts.best.seconds, unit: "rows/s raw insert, best")),
            BenchmarkFigure(name: "seed.verify CPU time", value: Double(rows) / verify.cpu.median.seconds,
                            unit: perCPU),
            BenchmarkFigure(name: "seed.install (copy, migrate, validate, publish)",
                            value: Double(rows) / install.wall.median.seconds, unit: unit, baseline: rawBaseline),
            BenchmarkFigure(name: "seed.install, best run", value: Double(rows) / install.wall.best.seconds,
                            unit: unit, baseline: BenchmarkFigure.Baseline(
                                value: Double(raw.rows) / inserts.best.seconds, unit: "rows/s raw insert, best")),
            BenchmarkFigure(name: "seed.install CPU time", value: Double(rows) / install.cpu.median.seconds,
                            unit: perCPU),
            BenchmarkFigure(name: "seed: load average (1 min) before the rounds", value: loadBefore, unit: ""),
            BenchmarkFigure(name: "seed: load average (1 min) after the rounds", value: loadAfter, unit: ""),
        ]
    }
}

/// The system's load average, which says how far wall times on a shared machine can be trusted.
enum LoadAverage {
    /// The 1-minute load average; -1 when it cannot be read.
    static func oneMinute() -> Double {
        var loads = [Double](repeating: -1, count: 3)
        return getloadavg(&loads, 3) >= 1 ? loads[0] : -1
    }
}

/// Wall-clock and process CPU time (user + system of every thread) of repeated runs: verify and install run
/// their two phases on several threads, and a shared machine's load shows in wall time, not in CPU time.
private struct Runs {
    private(set) var wallDurations: [Duration] = []
    private(set) var cpuDurations: [Duration] = []

    var wall: Samples { Samples(durations: wallDurations) }
    var cpu: Samples { Samples(durations: cpuDurations) }

    mutating func measure<Result>(_ body: () throws -> Result) rethrows -> Result {
        let clock = ContinuousClock()
        let cpuStart = Self.processCPUTime()
        let start = clock.now
        let result = try body()
        wallDurations.append(start.duration(to: clock.now))
        cpuDurations.append(Self.processCPUTime() - cpuStart)
        return result
    }

    private static func processCPUTime() -> Duration {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func duration(_ time: timeval) -> Duration {
            .seconds(Int64(time.tv_sec)) + .microseconds(Int64(time.tv_usec))
        }
        return duration(usage.ru_utime) + duration(usage.ru_stime)
    }
}

/// Removes a file and its sidecars.
enum SeedFiles {
    static func remove(_ path: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(path + suffix) }
    }
}

/// The same rows written straight through the sqlite3 C API into the seed's synced tables (same DDL), one
/// prepared INSERT per table in one transaction: no digests, no versions, no provenance.
struct RawSeedInsert {
    let tables: [(ddl: String, insert: String, rows: [[SQLiteValue]])]
    let scratch: String

    init(seed: String, scratch: String) throws {
        self.scratch = scratch
        let db = try Connection(path: seed, mode: .readOnly)
        defer { db.close() }
        let synced = try db.query(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_synchro%' ESCAPE '\\' "
                + "AND name NOT IN ('grdb_migrations') AND name NOT LIKE 'sqlite%'"
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        var tables: [(String, String, [[SQLiteValue]])] = []
        for (name, ddl) in synced {
            let columns = try db.columns(of: name).count
            let rows = try db.rows("SELECT * FROM \(SQLiteIdentifier.quote(name))")
            let placeholders = Array(repeating: "?", count: columns).joined(separator: ", ")
            tables.append((ddl, "INSERT INTO \(SQLiteIdentifier.quote(name)) VALUES (\(placeholders))", rows))
        }
        self.tables = tables
    }

    /// Rows per second of the median of `iterations` inserts, after one warm-up insert.
    func rowsPerSecond(iterations: Int) throws -> Double {
        var durations: [Duration] = []
        for round in 0...max(1, iterations) {
            let duration = try insertOnce()
            if round > 0 { durations.append(duration) }
        }
        return Double(rows) / Samples(durations: durations).median.seconds
    }

    /// Number of rows one insert writes.
    var rows: Int { tables.reduce(0) { $0 + $1.rows.count } }

    /// Creates the tables in a new scratch database, then inserts every row in one transaction; returns the time
    /// of that transaction (`BEGIN IMMEDIATE` … `COMMIT`).
    func insertOnce() throws -> Duration {
        SeedFiles.remove(scratch)
        var handle: OpaquePointer?
        guard sqlite3_open_v2(scratch, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK
        else { throw BenchmarkFailure("cannot open the baseline database") }
        defer { sqlite3_close_v2(handle) }
        for table in tables { sqlite3_exec(handle, table.ddl, nil, nil, nil) }
        let clock = ContinuousClock()
        let start = clock.now
        sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil)
        for table in tables {
            var statement: OpaquePointer?
            sqlite3_prepare_v2(handle, table.insert, -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            for row in table.rows {
                for (index, value) in row.enumerated() {
                    let i = Int32(index + 1)
                    switch value {
                    case .null: sqlite3_bind_null(statement, i)
                    case .integer(let v): sqlite3_bind_int64(statement, i, v)
                    case .real(let v): sqlite3_bind_double(statement, i, v)
                    case .text(let v): sqlite3_bind_text(statement, i, v, -1, SQLITE_TRANSIENT_BENCH)
                    case .blob(let v):
                        v.withUnsafeBytes {
                            _ = sqlite3_bind_blob(statement, i, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT_BENCH)
                        }
                    }
                }
                guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchmarkFailure("baseline insert failed") }
                sqlite3_reset(statement)
            }
        }
        guard sqlite3_exec(handle, "COMMIT", nil, nil, nil) == SQLITE_OK else {
            throw BenchmarkFailure("baseline commit failed")
        }
        return start.duration(to: clock.now)
    }
}

/// `SQLITE_TRANSIENT`: SQLite copies the bound buffer.
let SQLITE_TRANSIENT_BENCH = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
