import Foundation

/// Every text that describes the command line, rendered from the declarations (``CommandCatalog``): the usage
/// `seedkit help` prints, one command's help, the synopsis a usage error prints, and the Markdown option tables of
/// docs/cli.md. Nothing here is written by hand per command, so help and docs say what the parser accepts.
enum HelpText {
    /// Synopses wrap before this column.
    static let width = 100

    /// `seedkit help`: every command's synopsis and summary, then what every command shares.
    static var usage: String {
        var text = "usage: seedkit <command> [arguments]\n\ncommands:\n"
        for spec in CommandCatalog.all { text += entry(spec) }
        text += """
              --version
                  the version (as recorded in evidence files)
              COMMAND --help
                  the same as seedkit help COMMAND

            Every command also takes --quiet (print only its results and errors) or --verbose (add detail on
            standard error: steps, scopes, timings, the files and URLs used); --json output is the same with either.
            JSON input comes from FILE or standard input; see docs/cli.md. No command takes a secret on the command
            line: credentials come from environment variables (--token-env VAR) or files (--token-file FILE).

            """
        return text
    }

    /// `usage:` and the synopses of `specs`, for a usage error; empty when there are none.
    static func synopsis(_ specs: [CommandSpec]) -> String {
        specs.isEmpty ? "" : "usage:\n" + specs.map(entry).joined()
    }

    /// `seedkit help COMMAND` and `COMMAND --help`: the synopsis, the summary and every option with its help, its
    /// allowed values, its default and the variable that supplies it.
    static func command(_ spec: CommandSpec) -> String {
        var text = synopsis([spec])
        if !spec.positionals.isEmpty {
            text += "\narguments:\n"
            let column = spec.positionals.map(\.placeholder.count).max().map { max($0 + 4, 28) } ?? 28
            for positional in spec.positionals {
                let details = (positional.optional ? ["optional"] : []) + (positional.repeatable ? ["repeatable"] : [])
                text += line("  " + positional.placeholder, column: column, help: positional.help, details: details)
            }
        }
        text += "\noptions:\n"
        let options = spec.allOptions
        let column = options.map { $0.synopsisWord.count + 4 }.max().map { max($0, 28) } ?? 28
        for option in options {
            text += line("  " + option.synopsisWord, column: column, help: option.help, details: details(option))
        }
        return text
    }

    /// The help of every command in a group (`pipeline --help`), or of the one command `name` names.
    static func topic(_ specs: [CommandSpec]) -> String {
        specs.map(command).joined(separator: "\n")
    }

    /// What the help line adds after an option's help: required, allowed values, default, variable, repeatable.
    static func details(_ option: OptionSpec) -> [String] {
        var details: [String] = []
        if option.required { details.append("required") }
        if let range = option.range { details.append(range) }
        if let value = option.defaultValue { details.append("default \(value)") }
        if let variable = option.environment { details.append("else the variable \(variable)") }
        if option.repeatable { details.append("repeatable") }
        return details
    }

    /// One synopsis, wrapped under the command name, and the summary below it.
    private static func entry(_ spec: CommandSpec) -> String {
        let indent = String(repeating: " ", count: 3 + spec.name.count)
        var lines: [String] = []
        var current = "  " + spec.name
        for word in spec.synopsisUnits {
            if current.count + 1 + word.count > width && current.count > indent.count {
                lines.append(current)
                current = indent + word
            } else {
                current += " " + word
            }
        }
        lines.append(current)
        lines.append("      " + spec.summary)
        return lines.joined(separator: "\n") + "\n"
    }

    /// `  --name VALUE` padded to `column`, then the help and its details in parentheses.
    private static func line(_ label: String, column: Int, help: String, details: [String]) -> String {
        let padding = String(repeating: " ", count: max(2, column - label.count))
        return label + padding + help + (details.isEmpty ? "" : " (\(details.joined(separator: "; ")))") + "\n"
    }
}

/// docs/cli.md's option tables: a region `<!-- options:NAME -->` … `<!-- /options -->` per command, rewritten from the
/// declarations by `seedkit help --markdown FILE` (`make docs`) and compared with the file by a test, so the
/// documentation cannot drift from the binary.
extension HelpText {
    /// The Markdown table of `spec`'s options (without `--quiet` and `--verbose`, documented once for every command).
    static func markdown(_ spec: CommandSpec) -> String {
        var table = "| option | meaning | allowed values | default |\n| --- | --- | --- | --- |\n"
        for option in spec.options {
            var meaning = cell(option.help)
            var notes: [String] = []
            if option.required { notes.append("required") }
            if option.repeatable { notes.append("repeatable") }
            if let variable = option.environment { notes.append("else the variable `\(variable)`") }
            if !notes.isEmpty { meaning += " (\(notes.joined(separator: "; ")))" }
            table += "| `\(option.synopsisWord)` | \(meaning) | \(option.range.map(cell) ?? "") | "
                + "\(option.defaultValue.map { "`\($0)`" } ?? "") |\n"
        }
        if spec.options.isEmpty { table = "No options besides `--quiet` and `--verbose` (every command).\n" }
        return "```\nseedkit \(spec.synopsis)\n```\n\n" + table
    }

    /// A region that names no declared command.
    struct UnknownRegion: Error {
        let name: String
    }

    /// `document` with every option region's content replaced by the table of the command it names.
    static func rewrite(_ document: String) throws(UnknownRegion) -> String {
        var output: [Substring] = []
        var skipping = false
        for line in document.split(separator: "\n", omittingEmptySubsequences: false) {
            if skipping {
                if line == closing { skipping = false }
                continue
            }
            guard line.hasPrefix(opening), line.hasSuffix(" -->") else {
                output.append(line)
                continue
            }
            let name = String(line.dropFirst(opening.count).dropLast(4))
            guard let spec = CommandCatalog.spec(named: name) else { throw UnknownRegion(name: name) }
            output.append(contentsOf: region(name, markdown(spec)).dropLast().split(
                separator: "\n", omittingEmptySubsequences: false))
            skipping = true
        }
        return output.joined(separator: "\n")
    }

    private static let opening = "<!-- options:"
    private static let closing = "<!-- /options -->"

    private static func region(_ name: String, _ table: String) -> String {
        "\(opening)\(name) -->\n\(table)\(closing)\n"
    }

    /// Pipes would end a table cell.
    private static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|")
    }
}
