import Foundation
import Testing
import _SeedkitTestSupport

/// `seedkit completion bash|zsh|fish` (issue #18 item 1): scripts generated from the command declarations. The bash
/// script is sourced in a real bash and its completion function driven with `COMP_WORDS`/`COMP_CWORD` exactly as
/// bash's programmable completion calls it; fish's is driven with `complete -C`; zsh's is syntax-checked
/// (`zsh -n`). A shell that is not installed skips its test with the reason.
@Suite("seedkit: shell completion")
struct CompletionTests {
    /// An installed shell's path, or nil.
    static func shell(_ name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `shell -c script` (or `shell -n file` with `check`) and returns its status and standard output.
    static func run(_ shell: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// The script for `shell`, written to a file in `directory`.
    static func script(_ shell: String, in directory: TemporaryDirectory) throws -> String {
        let generated = try SeedkitProcess.run(["completion", shell])
        #expect(generated.status == 0, "\(generated.stderrText)")
        let path = directory.path("seedkit.\(shell)")
        try Data(generated.stdout).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// What bash's completion function offers for `words` (the last one being completed), one per line.
    static func bashCompletions(_ script: String, _ words: [String], in directory: String) throws -> [String] {
        let bash = try #require(shell("bash"))
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let run = try run(bash, ["-c", """
            cd '\(directory)' && source '\(script)' || exit 9
            export SEEDKIT_COMPLETION_PROBE=1
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMPREPLY=()
            _seedkit; printf '%s\\n' "${COMPREPLY[@]}"
            """])
        #expect(run.status == 0, "\(words): \(run.errors)")
        return run.output.split(separator: "\n").map(String.init)
    }

    @Test("the bash script passes bash -n and completes commands, subcommands, options and values",
          .enabled(if: shell("bash") != nil, "bash is not installed"))
    func bash() throws {
        let directory = try TemporaryDirectory()
        let script = try Self.script("bash", in: directory)
        let bash = try #require(Self.shell("bash"))
        let check = try Self.run(bash, ["-n", script])
        #expect(check.status == 0, "\(check.errors)")
        try Data().write(to: URL(fileURLWithPath: directory.path("zz-seed.db")))

        func complete(_ words: String...) throws -> [String] {
            try Self.bashCompletions(script, ["seedkit"] + words, in: directory.url.path)
        }
        #expect(try complete("ex") == ["export"])
        #expect(try complete("p") == ["pack", "pipeline"])
        #expect(try complete("--v") == ["--version"])
        #expect(try complete("export", "--pa") == ["--page-limit"])
        #expect(try complete("pipeline", "") == ["run", "validate", "clean"])
        #expect(try complete("pipeline", "run", "--d") == ["--dry-run"])
        #expect(try complete("digest", "push", "--u") == ["--user"])
        #expect(try complete("completion", "") == ["bash", "zsh", "fish"])
        #expect(try complete("help", "pi") == ["pipeline"])
        // A path value offers file names, a free-text value nothing, a path positional file names.
        #expect(try complete("pack", "--out", "zz") == ["zz-seed.db"])
        #expect(try complete("export", "--page-limit", "").isEmpty)
        #expect(try complete("verify", "zz") == ["zz-seed.db"])
        // A secret's `--NAME-env` completes variable names (the secret itself is never an argument).
        #expect(try complete("sync", "--token-env", "SEEDKIT_COMPLETION_P") == ["SEEDKIT_COMPLETION_PROBE"])
    }

    @Test("bash completes exactly the options help lists, for every command",
          .enabled(if: shell("bash") != nil, "bash is not installed"), arguments: SecretArgumentTests.commands)
    func bashOptionsMatchHelp(command: [String]) throws {
        let directory = try TemporaryDirectory()
        let script = try Self.script("bash", in: directory)
        let offered = try Self.bashCompletions(script, ["seedkit"] + command + ["--"], in: directory.url.path)
        let listed = try CommandDeclarationTests.options(command).map { "--\($0.name)" } + ["--help"]
        #expect(Set(offered) == Set(listed), "\(command)")
    }

    @Test("the zsh script passes zsh -n", .enabled(if: shell("zsh") != nil, "zsh is not installed"))
    func zsh() throws {
        let directory = try TemporaryDirectory()
        let script = try Self.script("zsh", in: directory)
        let check = try Self.run(try #require(Self.shell("zsh")), ["-n", script])
        #expect(check.status == 0, "\(check.errors)")
        #expect(try String(contentsOfFile: script, encoding: .utf8).hasPrefix("#compdef seedkit\n"))
    }

    @Test("the fish script passes fish -n and completes commands and options",
          .enabled(if: shell("fish") != nil, "fish is not installed"))
    func fish() throws {
        let directory = try TemporaryDirectory()
        let script = try Self.script("fish", in: directory)
        let fish = try #require(Self.shell("fish"))
        let check = try Self.run(fish, ["-n", script])
        #expect(check.status == 0, "\(check.errors)")
        func complete(_ line: String) throws -> [String] {
            let run = try Self.run(fish, ["--no-config", "-c", "source '\(script)'; complete -C '\(line)'"])
            #expect(run.status == 0, "\(run.errors)")
            return run.output.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
        }
        #expect(try complete("seedkit exp") == ["export"])
        #expect(try complete("seedkit export --pa") == ["--page-limit"])
        #expect(Set(try complete("seedkit pipeline ")) == ["run", "validate", "clean"])
        #expect(try complete("seedkit pipeline run --d") == ["--dry-run"])
    }

    @Test("an unknown shell is a usage error naming the shells")
    func unknownShell() throws {
        let run = try SeedkitProcess.run(["completion", "tcsh"])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("completion needs a shell: bash, zsh or fish (usage)"), "\(run.stderrText)")
    }
}
