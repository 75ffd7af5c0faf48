import SynchroProtocol

/// `seedkit conformance vectors FILE [--json]`: runs a file of upstream conformance vectors.
enum ConformanceCommand {
    static let spec = CommandSpec(
        "conformance vectors", "run upstream conformance vectors",
        positionals: [PositionalSpec(placeholder: "FILE", help: "the vector file; - reads standard input")],
        options: [.json("one JSON object for the run instead of PASS and FAIL lines")])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        guard words.first == "vectors" else {
            throw Arguments.UsageError(message: "conformance needs the subcommand vectors")
        }
        let arguments = try Arguments(Array(words.dropFirst()), spec: spec)
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let path = arguments.positionals[0]
        let asJSON = arguments.flags.contains("json")
        let console = arguments.console("conformance")
        let start = ContinuousClock.now

        let file: ConformanceVectorFile
        do {
            file = try ConformanceVectorFile(bytes: try Terminal.readInput(path))
        } catch let error as Terminal.InputError {
            return fail(rule: "unreadable_file", message: error.message, asJSON: asJSON)
        } catch let error as ConformanceVectorFile.FormatError {
            return fail(rule: error.rule, message: error.description, asJSON: asJSON)
        } catch {
            return fail(rule: "unreadable_file", message: "cannot read \(path)", asJSON: asJSON)
        }
        console.detail("vector set \(file.vectorSetId) from \(path == "-" ? "standard input" : path): "
            + "\(file.vectors.count) vectors")

        let report = ConformanceRunner.run(file)
        for outcome in report.outcomes where outcome.passed {
            console.detail("pass \(outcome.vectorId) (\(outcome.kind))")
        }
        console.detail("aggregate \(aggregateText(report.aggregate))")
        console.detail("ran \(report.outcomes.count) vectors", since: start)
        if asJSON {
            Terminal.out(bytes: (try? CanonicalJSON.encode(report.json)) ?? [])
            Terminal.out("\n")
        } else {
            // The failures are the check's result; the count is a summary.
            for outcome in report.outcomes where !outcome.passed {
                console.result("FAIL \(outcome.vectorId) (\(outcome.kind)): \(outcome.detail)\n")
            }
            if case .mismatch(let why) = report.aggregate {
                console.result("FAIL aggregate: \(why)\n")
            }
            console.info("\(report.passedCount) passed, \(report.failedCount) failed\n")
        }
        if case .mismatch = report.aggregate { return .invalidInput }
        return report.failedCount == 0 ? .success : .checkFailed
    }

    private static func aggregateText(_ aggregate: ConformanceReport.AggregateCheck) -> String {
        switch aggregate {
        case .absent: "absent"
        case .matches: "matches"
        case .mismatch(let why): "mismatch: \(why)"
        }
    }

    private static func fail(rule: String, message: String, asJSON: Bool) -> ExitStatus {
        if asJSON {
            Terminal.out(bytes: (try? CanonicalJSON.encode(ToolError(rule: rule, message: message).json)) ?? [])
            Terminal.out("\n")
        }
        Terminal.err("seedkit: \(message)\n")
        return .invalidInput
    }
}
