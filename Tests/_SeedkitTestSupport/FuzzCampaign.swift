import Dispatch
import Foundation
import Synchronization

/// A bounded, seeded fuzzing run of one target: inputs are mutated from a corpus for `SEEDKIT_FUZZ_SECONDS`
/// (default 5 s; `make fuzz` runs minutes), seeded by `SEEDKIT_FUZZ_SEED` (default fixed, always printed), so
/// the same seed replays the same inputs in the same order. Each execution classifies its outcome (an accepted
/// input, or the rule of the typed error it got); an execution slower than the hang bound is a finding, and a
/// watchdog ends the process with the input's location when one never returns. With `SEEDKIT_FUZZ_ARTIFACTS`
/// set to a directory, the input under test is written there before it runs, so a crash leaves it behind.
public struct FuzzCampaign {
    /// What a campaign did.
    public struct Report: Sendable, CustomStringConvertible {
        public let target: String
        public let seed: UInt64
        public let executions: Int
        public let seconds: Double
        /// Executions per outcome class (`accepted`, or an error rule).
        public let outcomes: [String: Int]
        /// Inputs that broke an invariant or ran longer than the hang bound.
        public let findings: [Finding]

        public var description: String {
            let classes = outcomes.sorted { $0.value > $1.value }.prefix(8).map { "\($0.key) \($0.value)" }
            return "fuzz \(target): \(executions) executions in \(String(format: "%.1f", seconds)) s "
                + "(seed \(seed)), \(outcomes.count) outcome classes [\(classes.joined(separator: ", "))], "
                + "\(findings.count) findings"
        }
    }

    /// One input that broke the target's contract.
    public struct Finding: Sendable, CustomStringConvertible {
        public let step: Int
        public let problem: String
        public let input: [UInt8]

        public var description: String {
            "step \(step): \(problem); input (\(input.count) bytes, base64) \(Data(input).base64EncodedString())"
        }
    }

    public let target: String
    public let seed: UInt64
    public let budget: Duration
    /// An execution longer than this is reported as a hang.
    public let hangBound: Duration

    /// A campaign configured from the environment; `defaultSeconds` applies when `SEEDKIT_FUZZ_SECONDS` is unset.
    public init(target: String, defaultSeconds: Double = 5, hangBound: Duration = .seconds(5)) {
        let environment = ProcessInfo.processInfo.environment
        self.target = target
        seed = environment["SEEDKIT_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x5EED_C0DE
        let seconds = environment["SEEDKIT_FUZZ_SECONDS"].flatMap { Double($0) } ?? defaultSeconds
        budget = .milliseconds(Int64(max(0.05, seconds) * 1000))
        self.hangBound = hangBound
    }

    /// Runs `execute` on generated inputs until the budget is spent. `generate` makes step `n`'s input from its
    /// own seeded generator; `execute` returns the outcome class, or throws ``Violation`` for a broken invariant.
    public func run(
        generate: (inout SeededRandom) -> [UInt8], execute: ([UInt8]) throws(Violation) -> String
    ) -> Report {
        print("fuzz \(target): seed \(seed) (SEEDKIT_FUZZ_SEED), budget \(budget) (SEEDKIT_FUZZ_SECONDS)")
        let artifacts = ProcessInfo.processInfo.environment["SEEDKIT_FUZZ_ARTIFACTS"].map {
            URL(fileURLWithPath: $0).appendingPathComponent("\(target)-current.bin")
        }
        if let artifacts {
            try? FileManager.default.createDirectory(
                at: artifacts.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        let watchdog = Watchdog(target: target, seed: seed, bound: hangBound * 6, artifact: artifacts?.path)
        defer { watchdog.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        var outcomes: [String: Int] = [:]
        var findings: [Finding] = []
        var step = 0
        while clock.now - start < budget {
            var random = SeededRandom(seed: seed, step: step)
            let input = generate(&random)
            if let artifacts { try? Data(input).write(to: artifacts) }
            watchdog.started(step: step)
            let began = clock.now
            let outcome: String
            do throws(Violation) {
                outcome = try execute(input)
            } catch {
                outcome = "violation"
                findings.append(Finding(step: step, problem: error.problem, input: input))
            }
            let elapsed = clock.now - began
            if elapsed > hangBound {
                findings.append(Finding(step: step, problem: "took \(elapsed) (hang bound \(hangBound))", input: input))
            }
            outcomes[outcome, default: 0] += 1
            step += 1
        }
        let seconds = Double((clock.now - start).components.seconds)
            + Double((clock.now - start).components.attoseconds) / 1e18
        let report = Report(
            target: target, seed: seed, executions: step, seconds: seconds, outcomes: outcomes, findings: findings)
        print(report)
        for finding in findings.prefix(5) { print("fuzz \(target): finding \(finding)") }
        return report
    }

    /// A broken invariant (the typed error was right, but what came back was wrong).
    public struct Violation: Error, Sendable {
        public let problem: String

        public init(_ problem: String) {
            self.problem = problem
        }
    }
}

/// Ends the process when one execution runs far past the hang bound: a test cannot interrupt a thread that never
/// returns, and a stuck test run would hide which input did it.
private final class Watchdog {
    private final class Progress: Sendable {
        let state = Mutex<(step: Int, since: ContinuousClock.Instant, stopped: Bool)>(
            (-1, ContinuousClock.now, false))
    }

    private let progress = Progress()
    private let timer: any DispatchSourceTimer

    init(target: String, seed: UInt64, bound: Duration, artifact: String?) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
        timer.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1))
        let location = artifact.map { "; the input is in \($0)" } ?? " (set SEEDKIT_FUZZ_ARTIFACTS to keep it)"
        timer.setEventHandler { [progress] in
            let (step, since, stopped) = progress.state.withLock { ($0.step, $0.since, $0.stopped) }
            guard !stopped, step >= 0, ContinuousClock.now - since > bound else { return }
            fatalError("fuzz \(target): step \(step) of seed \(seed) has run for over \(bound)\(location)")
        }
        timer.resume()
    }

    func started(step: Int) {
        progress.state.withLock { $0 = (step, ContinuousClock.now, false) }
    }

    func stop() {
        progress.state.withLock { $0.stopped = true }
        timer.cancel()
    }
}
