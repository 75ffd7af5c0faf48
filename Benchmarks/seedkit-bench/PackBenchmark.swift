import Foundation
import SQLiteKit
import SeedArtifacts

extension Benchmark {
    /// `SeedPacker` on a seed-sized SQLite catalog next to the `zstd` CLI on the same file at the same
    /// level: the physical baseline for packing is libzstd itself, driven by its own tool.
    static let packZstd = Benchmark(
        name: "pack.zstd",
        summary: "SeedPacker pack (levels 3 and 19) and unpack of a 300,000-row catalog database (~88 MB); "
            + "baseline: the zstd CLI on the same file at the same level (goal: pack time ≤ 1.2× zstd)"
    ) { options in
        try PackBenchmark(options: options).figures()
    }
}

private struct PackBenchmark {
    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let directory = try ScratchDirectory()
        let database = directory.path("catalog.db")
        try CatalogDatabase.write(path: database, rows: max(1_000, Int(300_000 * options.scale)))
        let size = try FileManager.default.attributesOfItem(atPath: database)[.size] as? Int ?? 0
        let cli = ZstdCLI.locate()
        if cli == nil { print("pack.zstd: the zstd CLI is not installed; baselines unavailable (make deps)") }

        var figures = [BenchmarkFigure(name: "pack.zstd.input", value: Double(size) / 1_000_000, unit: "MB")]
        for level in [Int32(3), PackOptions.defaultLevel] {
            // A strong level takes tens of seconds per run: fewer runs, no warm-up (the file is in the cache).
            let runs = level >= 10 ? max(1, options.iterations / 4) : options.iterations
            let ours = directory.path("ours-\(level).zst"), theirs = directory.path("theirs-\(level).zst")
            var report: PackReport?
            let (pack, baseline) = try Self.race(runs: runs, warmUp: level < 10) {
                report = try SeedPacker.pack(database, to: ours, options: PackOptions(level: level, overwrite: true))
            } theirs: { cli.map { cli in { try cli.run(["-\(level)", "-q", "-f", "-o", theirs, database]) } } }
            figures += Self.figures("pack.zstd.level-\(level).pack", bytes: size, pack, baseline: baseline)
            guard let report else { throw BenchmarkFailure("pack.zstd: no pack report") }
            figures.append(try Self.sizeRatio(level, report, ours: ours, theirs: cli == nil ? nil : theirs))
        }

        let frame = directory.path("ours-\(PackOptions.defaultLevel).zst")
        let copy = directory.path("copy.db"), cliCopy = directory.path("cli-copy.db")
        let (unpack, baseline) = try Self.race(runs: options.iterations, warmUp: true) {
            _ = try SeedPacker.unpack(frame, to: copy, options: UnpackOptions(overwrite: true))
        } theirs: { cli.map { cli in { try cli.run(["-d", "-q", "-f", "-o", cliCopy, frame]) } } }
        figures += Self.figures("pack.zstd.unpack", bytes: size, unpack, baseline: baseline)
        guard FileManager.default.contentsEqual(atPath: copy, andPath: database) else {
            throw BenchmarkFailure("pack.zstd: the unpacked copy differs from the database")
        }
        return figures
    }

    /// Throughput over the uncompressed size (wall time), then CPU seconds (all threads; steadier than wall
    /// time on a loaded machine), each next to the CLI's when it ran.
    private static func figures(_ name: String, bytes: Int, _ ours: Timing, baseline: Timing?) -> [BenchmarkFigure] {
        var throughput = BenchmarkFigure(
            name: name, value: Samples.megabytesPerSecond(bytes, in: ours.wall), unit: "MB/s")
        var cpu = BenchmarkFigure(name: name + ".cpu", value: ours.cpuSeconds * 1000, unit: "ms")
        if let baseline {
            throughput = .throughput(name, bytes: bytes, ours.wall, baseline: baseline.wall)
            cpu.baseline = .init(value: baseline.cpuSeconds * 1000, unit: "ms")
        }
        return [throughput, cpu]
    }

    /// The compression ratio next to the CLI's; the frames are expected to be byte-identical.
    private static func sizeRatio(
        _ level: Int32, _ report: PackReport, ours: String, theirs: String?
    ) throws -> BenchmarkFigure {
        var figure = BenchmarkFigure(name: "pack.zstd.level-\(level).size-ratio", value: report.ratio, unit: "x")
        guard let theirs else { return figure }
        let cliBytes = try FileManager.default.attributesOfItem(atPath: theirs)[.size] as? Int ?? 0
        figure.baseline = .init(value: Double(report.uncompressedBytes) / Double(max(cliBytes, 1)), unit: "x")
        let identical = FileManager.default.contentsEqual(atPath: ours, andPath: theirs)
        print("pack.zstd.level-\(level): frame \(identical ? "byte-identical to" : "differs from") the zstd CLI's")
        return figure
    }

    /// Medians of one measurement: wall time and CPU time of all threads.
    struct Timing {
        var wall: Duration
        var cpuSeconds: Double
    }

    /// Medians of `runs` runs of `ours` and of `theirs`, alternated so that both see the same machine load,
    /// after one untimed run of each when `warmUp`. Our CPU time is this process's; theirs, its children's.
    private static func race(
        runs: Int, warmUp: Bool, ours: () throws -> Void, theirs: () -> (() throws -> Void)?
    ) throws -> (Timing, Timing?) {
        let baseline = theirs()
        if warmUp {
            try ours()
            try baseline?()
        }
        let clock = ContinuousClock()
        var walls: ([Duration], [Duration]) = ([], [])
        var cpus: ([Double], [Double]) = ([], [])
        for _ in 0..<max(runs, 1) {
            var start = (clock.now, CPUTime.process)
            try ours()
            walls.0.append(start.0.duration(to: clock.now))
            cpus.0.append(CPUTime.process - start.1)
            guard let baseline else { continue }
            start = (clock.now, CPUTime.children)
            try baseline()
            walls.1.append(start.0.duration(to: clock.now))
            cpus.1.append(CPUTime.children - start.1)
        }
        let ourTiming = Timing(wall: Samples(durations: walls.0).median, cpuSeconds: median(cpus.0))
        guard baseline != nil else { return (ourTiming, nil) }
        return (ourTiming, Timing(wall: Samples(durations: walls.1).median, cpuSeconds: median(cpus.1)))
    }

    private static func median(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : values.sorted()[values.count / 2]
    }
}

/// User plus system CPU seconds from `getrusage(2)`.
private enum CPUTime {
    /// Every thread of this process, compression workers included.
    static var process: Double { seconds(RUSAGE_SELF.rawValue) }
    /// Every child process that has been waited for.
    static var children: Double { seconds(RUSAGE_CHILDREN.rawValue) }

    private static func seconds(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        return user + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// The `zstd` command-line tool, when installed (`scripts/deps.sh` installs it).
private struct ZstdCLI {
    let executable: URL

    static func locate() -> ZstdCLI? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        return directories.map { URL(fileURLWithPath: String($0)).appendingPathComponent("zstd") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
            .map(ZstdCLI.init)
    }

    func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkFailure("zstd \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}

/// A seed-like SQLite database: a product catalog with text, integer and real columns, in a rollback
/// journal (as seedkit publishes seeds), built deterministically.
private enum CatalogDatabase {
    static let words = [
        "steel", "cotton", "oak", "premium", "basic", "compact", "large", "small", "classic", "organic",
        "chair", "table", "lamp", "cable", "bottle", "shirt", "phone", "case", "kettle", "blanket",
        "red", "blue", "green", "black", "white", "grey", "wireless", "portable", "outdoor", "kitchen",
    ]

    static func write(path: String, rows: Int) throws {
        let connection = try Connection(path: path)
        defer { connection.close() }
        try connection.execute("""
            PRAGMA journal_mode=DELETE;
            CREATE TABLE products (
                id TEXT PRIMARY KEY, sku TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
                category TEXT NOT NULL, brand TEXT NOT NULL, price REAL NOT NULL, stock INTEGER NOT NULL,
                rating REAL NOT NULL, updated_at TEXT NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX products_category ON products(category, price);
            """)
        let insert = try connection.prepare("INSERT INTO products VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        var random = SplitMix64(seed: 0xC0FFEE)
        try connection.transaction {
            for row in 0..<rows {
                // Drawn in a fixed order: the figures in docs/performance.md were measured on this exact file.
                let description = (0..<Int.random(in: 8...30, using: &random)).map { _ in pick(&random) }
                let name = (0..<3).map { _ in pick(&random) }.joined(separator: " ")
                let category = pick(&random)
                let price = Double(Int.random(in: 100...50_000, using: &random)) / 100
                let stock = Int64.random(in: 0...1_000, using: &random)
                let rating = Double(Int.random(in: 10...50, using: &random)) / 10
                try insert.run(
                    "product-\(row)", "SKU-\(String(row, radix: 16))", name, description.joined(separator: " "),
                    category, "brand-\(row % 400)", price, stock, rating,
                    "2026-\(1 + row % 12)-\(10 + row % 18)T12:\(10 + row % 50):00.000Z")
            }
        }
    }

    private static func pick(_ random: inout SplitMix64) -> String {
        words[Int.random(in: 0..<words.count, using: &random)]
    }
}

/// A fresh temporary directory, removed when released.
private final class ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("seedkit-bench-pack-\(UUID().uuidString.lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }
}
