import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// One contract for machines (issue #18, docs/cli.md "Failures"): with `--json` every failure, usage errors
/// included, ends with one JSON object carrying `rule`, `message` and `exit_status` — `{"error":{…}}`, or the last
/// `{"event":"error",…}` line of a JSON Lines stream — and the text on standard error names the same rule. A
/// missing input file is `not_found`, exit 2, for every command that reads one.
@Suite("seedkit: one failure contract for machines")
struct FailureContractTests {
    /// The last line of standard output as the error object's members.
    static func errorObject(_ run: SeedkitProcess.Outcome) throws -> JSONObject? {
        let line = try #require(run.lines.last, "nothing on standard output: \(run.stderrText)")
        let object = try StrictJSONParser().parse(Array(line.utf8)).objectValue
        if object?["event"]?.stringValue == "error" { return object }
        return object?["error"]?.objectValue
    }

    static func expectContract(_ run: SeedkitProcess.Outcome, rule: String, status: Int32, _ what: String) throws {
        #expect(run.status == status, "\(what): \(run.status) \(run.stderrText)")
        let error = try errorObject(run)
        #expect(error?["rule"]?.stringValue == rule, "\(what): \(run.stdoutText)")
        #expect(error?["exit_status"]?.numberValue?.exactInt64 == Int64(status), "\(what)")
        #expect(error?["message"]?.stringValue?.isEmpty == false, "\(what)")
        #expect(run.stderrText.contains("(\(rule))"), "\(what): the text names the rule: \(run.stderrText)")
    }

    @Test("a usage error under --json prints the error object, for every command", arguments: SecretArgumentTests.commands)
    func usageErrors(command: [String]) throws {
        let run = try SeedkitProcess.run(command + ["--json", "--no-such-option"])
        try Self.expectContract(run, rule: "usage", status: 2, "\(command)")
        #expect(!run.stderrText.contains("commands:\n"), "the command's synopsis, not the whole usage")
    }

    @Test("a missing input file is not_found, exit 2, for every command that reads one")
    func missingInput() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.path("missing.db")
        let commands: [[String]] = [
            ["pack", missing], ["unpack", missing + ".zst"], ["inspect", "--db", missing], ["sql", "--db", missing, "SELECT 1"],
            ["verify", missing], ["install", missing, "--to", directory.path("app.db")], ["validate", "--db", missing],
            ["rebuild", "--db", missing, "--server", "http://127.0.0.1:9"],
        ]
        for command in commands {
            let run = try SeedkitProcess.run(command + ["--json"], environment: ["SEEDKIT_TOKEN": "t"])
            try Self.expectContract(run, rule: "not_found", status: 2, "\(command)")
            #expect(run.stderrText.contains("No such file or directory"), "\(command)")
        }
    }

    @Test("an unset credential variable under --json names the variable in the error object")
    func unsetCredentialVariable() throws {
        let directory = try TemporaryDirectory()
        let run = try SeedkitProcess.run([
            "sync", "--server", "http://127.0.0.1:9", "--db", directory.path("app.db"), "--token-env",
            "SEEDKIT_TEST_NEVER_SET", "--json",
        ])
        try Self.expectContract(run, rule: "credential_missing", status: 2, "sync")
        #expect(try Self.errorObject(run)?["message"]?.stringValue?.contains("SEEDKIT_TEST_NEVER_SET") == true)
    }

    @Test("an unknown command or option near a known one gets a did-you-mean and the command's synopsis")
    func didYouMean() throws {
        let command = try SeedkitProcess.run(["exprot"])
        #expect(command.status == 2)
        #expect(command.stderrText.contains("did you mean export?"))
        let option = try SeedkitProcess.run(["export", "--sorce", "x"])
        #expect(option.status == 2)
        #expect(option.stderrText.contains("did you mean --source?"))
        #expect(option.stderrText.contains("usage:\n  export "))
        #expect(option.stderrText.split(separator: "\n").count < 8, "\(option.stderrText)")
    }
}
