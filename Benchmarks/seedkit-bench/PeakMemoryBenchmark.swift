import Foundation

extension Benchmark {
    static let memoryPeak = Benchmark(
        name: "memory.peak",
        summary: "peak RSS of `seedkit export`, `seedkit install` and `seedkit sync --until-current` (fresh store) "
            + "of 1,000,000 catalog rows, each a child process against `seedkit serve` in another process (goal: "
            + "each < 200 MB); baseline: the same command at 100,000 rows (memory bounded by page size: ratio ≈ 1)"
    ) { options in
        try PeakMemoryBenchmark(options: options).figures()
    }
}

/// The built `seedkit` binary run the way a user runs it, one child process per command, its peak resident set
/// read from `wait4` for that child alone; the server is another child, so its memory is never counted.
private struct PeakMemoryBenchmark {
    static let goalBytes = 200_000_000
    static let pageLimit = "1000"

    let options: BenchmarkOptions

    /// One command's peak memory and time at one dataset size.
    struct Measurement {
        let command: String
        let rows: Int
        let outcome: ChildProcess.Outcome
        let wall: Duration
    }

    func figures() throws -> [BenchmarkFigure] {
        let seedkit = try Self.seedkitExecutable()
        let small = max(1, Int(100_000 * options.scale))
        let large = max(1, Int(1_000_000 * options.scale))
        let baselines = try run(seedkit, catalogRows: small)
        let measured = try run(seedkit, catalogRows: large)
        var figures: [BenchmarkFigure] = []
        func figure(
            _ measurement: Measurement, _ baseline: Measurement, _ suffix: String,
            _ bytes: KeyPath<ChildProcess.Outcome, Int>, unit: String
        ) -> BenchmarkFigure {
            BenchmarkFigure(
                name: "memory.\(measurement.command) (\(measurement.rows) catalog rows)\(suffix)",
                value: Self.megabytes(measurement.outcome[keyPath: bytes]), unit: unit,
                baseline: .init(
                    value: Self.megabytes(baseline.outcome[keyPath: bytes]),
                    unit: "MB at \(baseline.rows) catalog rows"))
        }
        for (measurement, baseline) in zip(measured, baselines) {
            figures.append(figure(measurement, baseline, "", \.maxResidentBytes, unit: "MB max RSS"))
        }
        for (measurement, baseline) in zip(measured, baselines) {
            figures.append(figure(
                measurement, baseline, " anonymous, sampled", \.sampledAnonymousBytes, unit: "MB RssAnon"))
            figures.append(figure(
                measurement, baseline, " file-backed, sampled", \.sampledFileBytes,
                unit: "MB RssFile (binary, mapped files)"))
        }
        for measurement in measured {
            let cpu = BenchmarkFigure.format(measurement.outcome.cpu.seconds)
            figures.append(BenchmarkFigure(
                name: "memory.\(measurement.command) (\(measurement.rows) catalog rows) time",
                value: measurement.wall.seconds, unit: "s wall, \(cpu) s CPU"))
        }
        let worst = measured.map(\.outcome.maxResidentBytes).max() ?? 0
        figures.append(BenchmarkFigure(
            name: "memory.peak.worst (goal < \(Self.goalBytes / 1_000_000) MB)", value: Self.megabytes(worst),
            unit: worst < Self.goalBytes ? "MB, goal met" : "MB, GOAL NOT MET"))
        return figures
    }

    /// Serves `catalogRows` rows from a `seedkit serve` child, then runs export, install and sync against it.
    private func run(_ seedkit: String, catalogRows: Int) throws -> [Measurement] {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("seedkit-bench-memory-\(UUID().uuidString.lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        let secret = "bench-memory-\(UUID().uuidString.lowercased())"
        let operatorSecret = "bench-memory-operator-\(UUID().uuidString.lowercased())"
        let server = try ChildProcess(
            executable: seedkit,
            arguments: [
                "serve", "--dataset", try BenchServer.demoDirectory().path, "--rows", String(catalogRows),
                "--db", path("server.db"), "--listen", "127.0.0.1:0",
            ],
            environment: ["SEEDKIT_TOKENS": "\(BenchServer.user)=\(secret)", "SEEDKIT_OPERATOR_TOKEN": operatorSecret],
            captureOutput: true)
        defer {
            server.signal(SIGTERM)
            _ = try? server.wait()
        }
        let prefix = "listening on "
        guard let line = server.readLine(), line.hasPrefix(prefix) else {
            throw BenchmarkFailure("seedkit serve did not start")
        }
        let url = String(line.dropFirst(prefix.count))

        return [
            try measure(seedkit, "export", rows: catalogRows, [
                "export", "--source", url, "--out", path("seed.db"), "--page-limit", Self.pageLimit, "--quiet",
            ], environment: ["SEEDKIT_OPERATOR_TOKEN": operatorSecret]),
            try measure(seedkit, "install", rows: catalogRows, ["install", path("seed.db"), "--to", path("app.db")]),
            try measure(seedkit, "sync", rows: catalogRows, [
                "sync", "--server", url, "--db", path("client.db"), "--until-current", "--page-limit", Self.pageLimit,
            ], environment: ["SEEDKIT_TOKEN": secret]),
        ]
    }

    private func measure(
        _ seedkit: String, _ command: String, rows: Int, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> Measurement {
        let clock = ContinuousClock()
        let start = clock.now
        let child = try ChildProcess(
            executable: seedkit, arguments: arguments, environment: environment, captureOutput: false)
        let outcome = try child.wait(sampling: .milliseconds(20))
        guard outcome.exitStatus == 0 else {
            throw BenchmarkFailure("seedkit \(command) of \(rows) rows failed (status \(outcome.exitStatus ?? -1))")
        }
        return Measurement(command: command, rows: rows, outcome: outcome, wall: start.duration(to: clock.now))
    }

    private static func megabytes(_ bytes: Int) -> Double {
        Double(bytes) / 1_000_000
    }

    /// `seedkit` beside this benchmark's executable (both are products of the same build).
    private static func seedkitExecutable() throws -> String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let candidate = executable.deletingLastPathComponent().appendingPathComponent("seedkit").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw BenchmarkFailure("\(candidate) not found: build the seedkit product too (make release)")
        }
        return candidate
    }
}
