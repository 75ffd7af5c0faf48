import SynchroProtocol

/// One command's command line, declared once (issue #18, docs/decisions.md "Commands declared once"): its name,
/// synopsis, summary, positional arguments and every option as a typed value. The parser (``Arguments``), `seedkit
/// help COMMAND`, `COMMAND --help`, the synopsis a usage error prints, shell completion (``CompletionScript``) and
/// the option tables of docs/cli.md (``HelpText/markdown(_:)``) are all read from it, so none of them can drift
/// from what the parser accepts. Adding an option is one line in the command's `spec`.
struct CommandSpec: Sendable {
    /// The words that select the command: `["export"]`, `["pipeline", "run"]`.
    let words: [String]
    /// One line: what the command does.
    let summary: String
    let positionals: [PositionalSpec]
    /// The command's own options; ``allOptions`` adds `--quiet` and `--verbose`, which every command takes.
    let options: [OptionSpec]

    init(_ words: String, _ summary: String, positionals: [PositionalSpec] = [], options: [OptionSpec] = []) {
        self.words = words.split(separator: " ").map(String.init)
        self.summary = summary
        self.positionals = positionals
        self.options = options
    }

    /// `pipeline run`.
    var name: String { words.joined(separator: " ") }

    /// The command's options followed by the ones every command takes.
    var allOptions: [OptionSpec] { options + OptionSpec.everyCommand }

    /// The option called `name` (without `--`), if the command declares it.
    func option(_ name: String) -> OptionSpec? { allOptions.first { $0.name == name } }

    /// `install SEED.db[.zst] --to APP.db [--trusted-key PUB ...] [--json]`: positionals first, then required options,
    /// then every optional one in declaration order (not `--quiet`/`--verbose`, which every command takes).
    var synopsis: String { ([name] + synopsisUnits).joined(separator: " ") }

    /// The synopsis after the name, one unit per option or argument (a unit is never split when wrapping).
    var synopsisUnits: [String] {
        let required = options.filter(\.required).map(\.synopsisWord)
        let optional = options.filter { !$0.required }.map { "[\($0.synopsisWord)\($0.repeatable ? " ..." : "")]" }
        return positionals.map(\.synopsisWord) + required + optional
    }
}

/// A positional argument: its placeholder, what it is, whether it may be left out or repeated.
struct PositionalSpec: Sendable {
    /// `FILE`, `SEED.db[.zst]`, `SQL`.
    let placeholder: String
    let help: String
    var optional = false
    var repeatable = false
    /// What completion offers for it: file names unless it is free text or one of fixed words.
    var kind = ValueKind.path

    var synopsisWord: String {
        let word = placeholder + (repeatable ? " ..." : "")
        return optional ? "[\(word)]" : word
    }
}

/// What an option's value is; the parser checks it before the command sees the value, so an out-of-range number is
/// the same typed usage error, naming the option and its range, for every command.
enum ValueKind: Sendable, Equatable {
    /// No value: the option's presence is the setting.
    case flag
    /// Free text the command interprets (a URL, an ID, a list).
    case text
    /// A file or directory name (completion offers file names).
    case path
    /// A whole number within the range.
    case integer(ClosedRange<Int64>)
    /// A positive byte count, optionally with a binary suffix: `1048576`, `64K`, `4G`.
    case byteCount
    /// A SemVer version (`1.2.0`).
    case version
    /// One of fixed words.
    case choice([String])
}

/// One option, declared once: everything help, completion, the docs table and the parser need to know about it.
struct OptionSpec: Sendable {
    /// Without the leading `--`: `page-limit`.
    let name: String
    let kind: ValueKind
    /// The value's placeholder in synopses and help (`N`, `FILE`, `URL`); empty for a flag.
    let placeholder: String
    /// One line: what the option does.
    let help: String
    /// The value used when the option is absent, as shown to users; nil when there is none (or the option is
    /// required).
    var defaultValue: String?
    /// The environment variable that supplies the value when the option is absent (`SEEDKIT_TOKEN`).
    var environment: String?
    /// The command refuses to run without it.
    var required = false
    /// May be given more than once; every value is kept in order (`--trusted-key`, `--scope`).
    var repeatable = false
    /// Names where a secret comes from (`--token-env VAR`, `--token-file FILE`): the secret itself is never an
    /// argument value (``SecretInput``).
    var secretSource = false
    /// The rule a bad value breaks, when more precise than `usage` (`pack --level 23` is `invalid_level`).
    var invalidValueRule = "usage"

    /// A flag: no value.
    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, placeholder: "", help: help)
    }

    /// An option with a value of `kind`, written `--name PLACEHOLDER`.
    static func value(
        _ name: String, _ placeholder: String, _ kind: ValueKind = .text, _ help: String,
        default defaultValue: String? = nil, environment: String? = nil, required: Bool = false,
        repeatable: Bool = false
    ) -> OptionSpec {
        OptionSpec(
            name: name, kind: kind, placeholder: placeholder, help: help, defaultValue: defaultValue,
            environment: environment, required: required, repeatable: repeatable)
    }

    /// `--NAME-env VAR`: the environment variable holding a secret (never the secret itself).
    static func secretVariable(_ name: String, _ help: String, default variable: String? = nil) -> OptionSpec {
        var option = value("\(name)-env", "VAR", .text, help, default: variable)
        option.secretSource = true
        return option
    }

    /// `--NAME-file FILE`: the file holding a secret.
    static func secretFile(_ name: String, _ help: String) -> OptionSpec {
        var option = value("\(name)-file", "FILE", .path, help)
        option.secretSource = true
        return option
    }

    /// The options every command takes (``Verbosity``).
    static let everyCommand: [OptionSpec] = [
        .flag("quiet", "print only results and errors"),
        .flag("verbose", "add detail on standard error: steps, scopes, timings, files and URLs"),
    ]

    /// `--json`, declared the same for every command that has it.
    static func json(_ help: String = "one canonical JSON object on standard output") -> OptionSpec {
        .flag("json", help)
    }

    /// `--force`: replace an existing output.
    static func force(_ help: String = "replace an existing output atomically; without it one is never touched")
        -> OptionSpec
    {
        .flag("force", help)
    }

    /// This option with bad values breaking `rule` rather than `usage`.
    func invalidValues(rule: String) -> OptionSpec {
        var option = self
        option.invalidValueRule = rule
        return option
    }

    /// This option, supplied by the environment variable `variable` when absent.
    func supplied(by variable: String) -> OptionSpec {
        var option = self
        option.environment = variable
        return option
    }

    var isFlag: Bool { kind == .flag }

    /// `--page-limit N` or `--json`.
    var synopsisWord: String { isFlag ? "--\(name)" : "--\(name) \(placeholder)" }

    /// The allowed values in words, or nil when any text is allowed: `1…1000`, `a byte count (4G)`.
    var range: String? {
        switch kind {
        case .integer(let range):
            range.upperBound == .max ? "≥ \(range.lowerBound)" : "\(range.lowerBound)…\(range.upperBound)"
        case .byteCount: "a positive byte count, suffix K, M, G or T allowed"
        case .version: "a SemVer version"
        case .choice(let words): words.joined(separator: ", ")
        case .flag, .text, .path: nil
        }
    }

    /// Checks one value against the kind: nil when it is allowed, else the usage error naming the option and what
    /// it allows. The value is never echoed (a misplaced secret must not reach a log).
    func check(_ value: String) -> Arguments.UsageError? {
        let allowed: Bool = switch kind {
        case .flag, .text, .path: true
        case .integer(let range): Int64(value).map(range.contains) ?? false
        case .byteCount: Self.byteCount(value) != nil
        case .version: SemanticVersion(value) != nil
        case .choice(let words): words.contains(value)
        }
        guard !allowed else { return nil }
        let needs: String = switch kind {
        case .integer(let range) where range.upperBound == .max: "an integer ≥ \(range.lowerBound)"
        case .integer: "an integer in \(range ?? "")"
        case .byteCount: "a positive byte count (such as 1048576 or 4G)"
        case .version: "a SemVer version"
        case .choice(let words): "one of \(words.joined(separator: ", "))"
        case .flag, .text, .path: ""
        }
        return Arguments.UsageError(message: "--\(name) needs \(needs)", rule: invalidValueRule)
    }

    /// A byte count: an integer, optionally with a binary suffix `K`, `M`, `G` or `T` (`4G` = 4 GiB); nil when not
    /// a positive count that fits.
    static func byteCount(_ text: String) -> Int64? {
        var text = Substring(text)
        var shift: Int64 = 0
        if let suffix = text.last, let power = ["K": 10, "M": 20, "G": 30, "T": 40][suffix.uppercased()] {
            shift = Int64(power)
            text = text.dropLast()
        }
        guard let value = Int64(text), value > 0, value <= Int64.max >> shift else { return nil }
        return value << shift
    }
}
