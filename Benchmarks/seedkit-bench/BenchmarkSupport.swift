/// A named benchmark the runner can select on the command line.
///
/// New benchmarks (row digests against OpenSSL SHA-256, canonical encoding, …) add one entry to
/// ``BenchmarkRegistry/all``; the runner, timing and report format are shared.
struct Benchmark: Sendable {
    /// Stable dotted name, used to select the benchmark (`seedkit-bench json.parse`).
    let name: String
    /// One sentence saying what is measured, printed by `--list`.
    let summary: String
    /// Runs the measurement and returns the figures to print.
    let run: @Sendable (BenchmarkOptions) throws -> [BenchmarkFigure]
}

/// Knobs shared by all benchmarks; each benchmark decides what a "size" means for it.
struct BenchmarkOptions: Sendable {
    /// Timed repetitions per measurement (best and median are reported).
    var iterations = 7
    /// Workload scale factor; 1 is the documented workload. A benchmark's measured size is 100,000 rows × `scale`
    /// wherever it is a number of demo catalog rows (`--scale 100`: 10,000,000 rows).
    var scale = 1.0
    /// Whether `--scale` was given: a benchmark whose documented workload is larger than 100,000 rows keeps it when
    /// the option is absent (`memory.peak`: 1,000,000 rows).
    var scaleGiven = false
}

/// One reported figure, optionally next to the baseline it should be judged against.
struct BenchmarkFigure: Sendable {
    var name: String
    var value: Double
    var unit: String
    var baseline: Baseline?

    /// The reference a figure is compared with (for example raw memory-scan speed).
    struct Baseline: Sendable {
        var value: Double
        var unit: String
    }

    /// `name: value unit (baseline: value unit, ratio x)`, the format scripts grep for.
    var reportLine: String {
        var line = "\(name): \(Self.format(value)) \(unit)"
        if let baseline {
            let ratio = baseline.value == 0 ? 0 : value / baseline.value
            let ratioText = Self.format(ratio, digits: 3)
            line += " (baseline: \(Self.format(baseline.value)) \(baseline.unit), ratio \(ratioText)x)"
        }
        return line
    }

    /// Fixed-point rendering without Foundation: `digits` decimals, rounded half up.
    static func format(_ value: Double, digits: Int = 1) -> String {
        guard value.isFinite else { return String(value) }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (value.magnitude * scale).rounded()
        guard scaled < 9e15 else { return String(value) }
        let units = Int64(scaled)
        var divisor: Int64 = 1
        for _ in 0..<digits { divisor *= 10 }
        let whole = units / divisor
        let fraction = String(units % divisor)
        var text = (value < 0 && units != 0 ? "-" : "") + String(whole)
        if digits > 0 {
            text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
        }
        return text
    }
}

/// Timing helpers around `ContinuousClock`.
enum Stopwatch {
    /// Durations of `iterations` runs of `body`, after one untimed warm-up run.
    static func samples<T>(iterations: Int, _ body: () throws -> T) rethrows -> Samples {
        let clock = ContinuousClock()
        blackHole(try body())
        var durations: [Duration] = []
        durations.reserveCapacity(iterations)
        for _ in 0..<max(iterations, 1) {
            let start = clock.now
            let result = try body()
            durations.append(start.duration(to: clock.now))
            blackHole(result)
        }
        return Samples(durations: durations)
    }

    /// Keeps a result observable so the optimizer cannot delete the work that produced it.
    @inline(never)
    static func blackHole<T>(_ value: T) {
        withExtendedLifetime(value) {}
    }
}

/// The timed runs of one measurement.
struct Samples: Sendable {
    let durations: [Duration]

    var best: Duration { durations.min() ?? .zero }

    var median: Duration {
        let sorted = durations.sorted()
        return sorted.isEmpty ? .zero : sorted[sorted.count / 2]
    }

    /// Throughput in megabytes (10^6 octets) per second for a run over `bytes` octets.
    static func megabytesPerSecond(_ bytes: Int, in duration: Duration) -> Double {
        let seconds = duration.seconds
        return seconds > 0 ? Double(bytes) / seconds / 1_000_000 : 0
    }
}

extension Duration {
    /// The duration as floating-point seconds.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// A small deterministic PRNG (SplitMix64) so generated workloads are identical on every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
