import Testing
import _SeedkitTestSupport

@Suite struct HelpCommandTests {
    /// The commands `seedkit help` lists (first word of every synopsis line).
    static func listedCommands() throws -> [String] {
        let text = try SeedkitProcess.run(["help"]).stdoutText
        var commands: [String] = []
        for line in text.split(separator: "\n") where line.hasPrefix("  ") && !line.hasPrefix("   ") {
            guard let word = line.split(separator: " ").first.map(String.init), word.first?.isLetter == true,
                  word == word.lowercased(), word != "help", !commands.contains(word) else { continue }
            commands.append(word)
        }
        return commands
    }

    @Test func everyListedCommandHasHelpWithItsSynopsisAndOptions() throws {
        let commands = try Self.listedCommands()
        #expect(commands.count >= 15)
        for command in commands {
            let help = try SeedkitProcess.run(["help", command])
            #expect(help.status == 0, "help \(command)")
            #expect(help.stdoutText.contains("usage:\n  \(command)"), "help \(command)")
            #expect(help.stdoutText.contains("options:") || help.stdoutText.contains("no options"), "help \(command)")
        }
    }

    @Test func commandDashDashHelpListsTheOptionsTheParserAccepts() throws {
        let export = try SeedkitProcess.run(["export", "--help"])
        #expect(export.status == 0)
        for option in ["--source URL", "--out FILE", "--token-env VAR", "--scopes A,B", "--page-limit N",
                       "--force", "--json"] {
            #expect(export.stdoutText.contains(option), "\(option)")
        }
        let pack = try SeedkitProcess.run(["pack", "-h"])
        #expect(pack.status == 0 && pack.stdoutText.contains("--level N"))
    }

    @Test func versionPrintsTheVersionEvidenceRecords() throws {
        let version = try SeedkitProcess.run(["--version"])
        #expect(version.status == 0)
        let text = version.stdoutText
        #expect(text.hasPrefix("seedkit ") && text.hasSuffix("\n"))
        let number = text.dropFirst("seedkit ".count).dropLast()
        #expect(number.split(separator: ".").count == 3 && number.allSatisfy { $0.isNumber || $0 == "." }, "\(text)")
    }

    @Test func pipelineHelpExitsZeroAndCoversItsSubcommands() throws {
        let help = try SeedkitProcess.run(["pipeline", "--help"])
        #expect(help.status == 0, "\(help.stderrText)")
        #expect(help.stdoutText.contains("pipeline run FILE") && help.stdoutText.contains("pipeline clean FILE"))
    }

    @Test func helpForAnUnknownCommandIsAUsageError() throws {
        let outcome = try SeedkitProcess.run(["help", "frobnicate"])
        #expect(outcome.status == 2)
        #expect(outcome.stderrText.contains("no command frobnicate"))
    }
}
