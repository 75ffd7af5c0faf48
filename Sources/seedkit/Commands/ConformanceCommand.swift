import SynchroProtocol

/// `seedkit conformance vectors FILE [--json]`: runs a file of upstream conformance vectors.
enum ConformanceCommand {
    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        guard words.first == "vectors" else {
            throw Arguments.UsageError(message: "conformance needs the subcommand vectors")
        }
        let arguments = try Arguments(Array(words.dropFirst()), flags: ["json"])
        try arguments.requirePositionals(atMost: 1, atLeast: 1)
        let path = arguments.positionals[0]
        let asJSON = arguments.flags.contains("json")

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

        let report = ConformanceRunner.run(file)
        if asJSON {
            Terminal.out(bytes: (try? CanonicalJSON.encode(report.json)) ?? [])
            Terminal.out("\n")
        } else {
            for outcome in report.outcomes where !outcome.passed {
                Terminal.out("FAIL \(outcome.vectorId) (\(outcome.kind)): \(outcome.detail)\n")
            }
            if case .mismatch(let why) = report.aggregate {
                Terminal.out("FAIL aggregate: \(why)\n")
            }
            Terminal.out("\(report.passedCount) passed, \(report.failedCount) failed\n")
        }
        if case .mismatch = report.aggregate { return .invalidInput }
        return report.failedCount == 0 ? .success : .checkFailed
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
