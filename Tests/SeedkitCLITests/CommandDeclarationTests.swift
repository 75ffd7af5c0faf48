import Foundation
import Testing
import _SeedkitTestSupport

/// Commands declared once (issue #18 item 1, docs/cli.md "Help and version"): every command's help shows every
/// option with its help, allowed values and default; the parser accepts exactly the options help lists and
/// refuses a value outside a declared range naming the option and the range; docs/cli.md's option tables are the
/// binary's own, and a drifted table is caught.
@Suite("seedkit: commands declared once")
struct CommandDeclarationTests {
    /// One option line of `seedkit help COMMAND`: `--page-limit N`, its help, and the parenthesized details.
    struct HelpLine {
        let name: String
        let placeholder: String?
        let help: String
        let details: [String]
    }

    /// The option lines of `seedkit help` for `command`.
    static func options(_ command: [String]) throws -> [HelpLine] {
        let help = try SeedkitProcess.run(["help"] + command)
        #expect(help.status == 0, "help \(command): \(help.stderrText)")
        let section = try #require(help.stdoutText.components(separatedBy: "\noptions:\n").last)
        return section.split(separator: "\n").compactMap { line -> HelpLine? in
            guard line.hasPrefix("  --") else { return nil }
            let parts = line.dropFirst(2).split(separator: " ", maxSplits: 1).map(String.init)
            let rest = parts.count > 1 ? parts[1] : ""
            // `--name PLACEHOLDER` is followed by at least two spaces; a flag's help follows its name directly.
            let placeholder = rest.hasPrefix(" ") ? nil : rest.split(separator: " ").first.map(String.init)
            var text = placeholder.map { String(rest.dropFirst($0.count)) } ?? rest
            text = text.trimmingCharacters(in: .whitespaces)
            var details: [String] = []
            if text.hasSuffix(")"), let open = text.range(of: " (", options: .backwards) {
                details = text[open.upperBound...].dropLast().components(separatedBy: "; ")
                text = String(text[..<open.lowerBound])
            }
            return HelpLine(name: String(parts[0].dropFirst(2)), placeholder: placeholder, help: text, details: details)
        }
    }

    @Test("help shows every option of every command with a help text, and --quiet and --verbose",
          arguments: SecretArgumentTests.commands)
    func everyOptionHasHelp(command: [String]) throws {
        let lines = try Self.options(command)
        #expect(lines.contains { $0.name == "quiet" } && lines.contains { $0.name == "verbose" }, "\(command)")
        for line in lines {
            #expect(line.help.count >= 10, "\(command) --\(line.name) has no help")
        }
    }

    /// Options whose range and default the help must show, as documented before the declarations existed.
    static let ranged: [([String], String, range: String, default: String?)] = [
        (["sync"], "page-limit", "1…1000", "100"), (["rebuild"], "page-limit", "1…1000", "100"),
        (["export"], "page-limit", "1…1000", "1000"), (["rehearse"], "page-limit", "1…1000", "1000"),
        (["export"], "wait", "0…86400", nil), (["pipeline", "run"], "wait", "0…86400", nil),
        (["pack"], "level", "1…22", "19"), (["pack"], "workers", "1…256", "one per processor, at most 4"),
        (["pack"], "max-output-bytes", "a positive byte count, suffix K, M, G or T allowed", "4G"),
        (["unpack"], "max-output-bytes", "a positive byte count, suffix K, M, G or T allowed", "4G"),
        (["serve"], "rows", "≥ 0", nil), (["serve"], "materialization-lag", "≥ 0", "0"),
        (["serve"], "listen", "", "127.0.0.1:0"), (["sync"], "app-version", "a SemVer version", "1.0.0"),
        (["sync"], "token-env", "", "SEEDKIT_TOKEN"), (["export"], "token-env", "", "SEEDKIT_OPERATOR_TOKEN"),
    ]

    @Test("help shows ranges and defaults", arguments: ranged)
    func rangesAndDefaults(command: [String], option: String, range: String, defaultValue: String?) throws {
        let line = try #require(try Self.options(command).first { $0.name == option }, "\(command) --\(option)")
        if !range.isEmpty { #expect(line.details.contains(range), "\(command) --\(option): \(line.details)") }
        if let defaultValue {
            #expect(line.details.contains("default \(defaultValue)"), "\(command) --\(option): \(line.details)")
        }
    }

    @Test("the parser takes exactly the options help lists, and refuses a value outside a declared range by name",
          arguments: SecretArgumentTests.commands)
    func parserMatchesHelp(command: [String]) throws {
        for line in try Self.options(command) where line.name != "quiet" && line.name != "verbose" {
            let words = command + ["--\(line.name)"] + (line.placeholder == nil ? ["--no-such-option"] : [])
            let run = try SeedkitProcess.run(words)
            #expect(run.status == 2)
            #expect(!run.stderrText.contains("unknown option --\(line.name)"), "\(words): \(run.stderrText)")
            guard let range = line.details.first(where: { $0.contains("…") }) else { continue }
            let bounds = range.components(separatedBy: "…").compactMap { Int64($0) }
            guard bounds.count == 2 else { continue }
            let outside = try SeedkitProcess.run(command + ["--\(line.name)", String(bounds[1] + 1), "--json"])
            #expect(outside.status == 2, "\(command) --\(line.name)")
            #expect(outside.stderrText.contains("--\(line.name) needs an integer in \(range)"), "\(outside.stderrText)")
            #expect(!outside.stderrText.contains(String(bounds[1] + 1)), "the value is not echoed")
            #expect(outside.stdoutText.contains("\"exit_status\":2"), "\(command) --\(line.name)")
        }
        let unknown = try SeedkitProcess.run(command + ["--definitely-not-an-option"])
        #expect(unknown.status == 2 && unknown.stderrText.contains("unknown option --definitely-not-an-option"))
    }

    @Test("a required option left out is named with its placeholder")
    func requiredOption() throws {
        let run = try SeedkitProcess.run(["install", "seed.db"])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("install needs --to APP.db (usage)"), "\(run.stderrText)")
        #expect(run.stderrText.contains("usage:\n  install SEED.db[.zst] --to APP.db"), "\(run.stderrText)")
    }

    // MARK: docs/cli.md

    static var cliDocument: URL { RepositoryLayout.root.appendingPathComponent("docs/cli.md") }

    @Test("docs/cli.md's option tables are what the binary generates (make docs rewrites them)")
    func docsMatchTheBinary() throws {
        let run = try SeedkitProcess.run(["help", "--markdown", Self.cliDocument.path])
        #expect(run.status == 0, "\(run.stderrText)")
        let document = try String(contentsOf: Self.cliDocument, encoding: .utf8)
        #expect(run.stdoutText == document, "docs/cli.md drifted from the command declarations: run make docs")
    }

    @Test("every command has an options region in docs/cli.md")
    func everyCommandHasARegion() throws {
        let document = try String(contentsOf: Self.cliDocument, encoding: .utf8)
        for command in SecretArgumentTests.commands + [["help"]] {
            let name = command.joined(separator: " ")
            #expect(document.contains("<!-- options:\(name) -->\n"), "no options region for \(name)")
        }
        for group in ["digest manifest", "digest row", "digest scope"] {
            #expect(document.contains("<!-- options:\(group) -->\n"), "no options region for \(group)")
        }
    }

    @Test("a drifted table or synopsis is rewritten, and a region naming no command is refused")
    func driftIsDetected() throws {
        let directory = try TemporaryDirectory()
        let document = try String(contentsOf: Self.cliDocument, encoding: .utf8)
        let drifted = document
            .replacingOccurrences(of: "| `--page-limit N` | rows per page |", with: "| `--page-limit N` | rows |")
            .replacingOccurrences(
                of: "```\nseedkit keygen --out KEY [--json]\n```", with: "```\nseedkit keygen --output KEY\n```")
        #expect(drifted != document)
        let path = directory.path("cli.md")
        try Data(drifted.utf8).write(to: URL(fileURLWithPath: path))
        let rewritten = try SeedkitProcess.run(["help", "--markdown", path])
        #expect(rewritten.status == 0)
        #expect(rewritten.stdoutText != drifted && rewritten.stdoutText == document)

        try Data("<!-- options:frobnicate -->\n<!-- /options -->\n".utf8).write(to: URL(fileURLWithPath: path))
        let unknown = try SeedkitProcess.run(["help", "--markdown", path])
        #expect(unknown.status == 2)
        #expect(
            unknown.stderrText.contains("frobnicate, which is no command (unknown_command)"), "\(unknown.stderrText)")
    }
}
