#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every benchmark the runner knows, in report order.
enum BenchmarkRegistry {
    static let all: [Benchmark] = [
        .jsonParse,
        .rowDigest,
        .serverPush,
        .serverRebuild,
        .serverPull,
        .packZstd,
        .seedArtifacts,
        .seedPatch,
        .postgresExport,
        .deltaExport,
        .clientSync,
        .memoryPeak,
    ]
}

/// `seedkit-bench [--list] [--iterations N] [--scale X] [name-prefix ...]`
struct BenchmarkCommandLine {
    var options = BenchmarkOptions()
    var filters: [String] = []
    var listOnly = false

    init(_ arguments: [String]) throws {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--list": listOnly = true
            case "--iterations":
                guard let text = remaining.popFirst(), let value = Int(text), value > 0
                else { throw BenchmarkFailure("--iterations needs a positive integer") }
                options.iterations = value
            case "--scale":
                guard let text = remaining.popFirst(), let value = Double(text), value > 0
                else { throw BenchmarkFailure("--scale needs a positive number") }
                options.scale = value
                options.scaleGiven = true
            default:
                if argument.hasPrefix("-") { throw BenchmarkFailure("unknown option \(argument)") }
                filters.append(argument)
            }
        }
    }

    func selects(_ benchmark: Benchmark) -> Bool {
        filters.isEmpty || filters.contains { benchmark.name.hasPrefix($0) }
    }
}

do {
    let commandLine = try BenchmarkCommandLine(Array(CommandLine.arguments.dropFirst()))
    for benchmark in BenchmarkRegistry.all where commandLine.selects(benchmark) {
        if commandLine.listOnly {
            print("\(benchmark.name): \(benchmark.summary)")
            continue
        }
        print("# \(benchmark.name): \(benchmark.summary)")
        for figure in try benchmark.run(commandLine.options) {
            print(figure.reportLine)
        }
    }
} catch {
    print("seedkit-bench: \(error)")
    exit(1)
}
