import Foundation
import Testing
import _SeedkitTestSupport

/// Secrets never on the command line (issue #18): every local user can read a process's arguments in
/// `/proc/PID/cmdline`, so no command takes a credential as an option value. Credentials come from a variable
/// (`--token-env VAR`, `SEEDKIT_TOKEN`, `SEEDKIT_TOKENS`, `SEEDKIT_OPERATOR_TOKEN`) or a file (`--token-file`).
@Suite("seedkit: no secret on the command line")
struct SecretArgumentTests {
    /// Every command and subcommand; the first test fails when `seedkit help` lists one that is not here.
    static let commands: [[String]] = [
        ["conformance", "vectors"], ["digest", "manifest"], ["digest", "row"], ["digest", "scope"], ["digest", "push"],
        ["serve"], ["sync"], ["validate"], ["rebuild"], ["sql"], ["inspect"], ["pack"], ["unpack"], ["export"],
        ["verify"], ["install"], ["pipeline", "run"], ["pipeline", "validate"], ["pipeline", "clean"],
        ["rehearse"], ["keygen"], ["sign"],
        ["completion"],
    ]

    /// An option whose name says it carries a credential. `--trusted-key` names a public key, which is no secret.
    static func namesASecret(_ option: String) -> Bool {
        option != "trusted-key" && ["token", "secret", "password", "credential", "key"].contains { option.contains($0) }
    }

    @Test("every command's options: none that names a credential takes it as a value, only a variable or a file")
    func noCommandDeclaresASecretValue() throws {
        let usage = try SeedkitProcess.run(["help"]).stdoutText
        let listed = Set(usage.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
            return line.split(separator: " ").first.map(String.init)
        }).subtracting(["help", "COMMAND", "--version"])
        #expect(listed == Set(Self.commands.map { $0[0] }), "a command is missing from this test")
        for command in Self.commands {
            let help = try SeedkitProcess.run(command + ["--help"])
            #expect(help.status == 0, "\(command)")
            let valued = help.stdoutText.split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ")
                guard let first = words.first, first.hasPrefix("--"), words.count > 1 else { return nil }
                return String(first.dropFirst(2))
            }
            for option in valued where Self.namesASecret(option) {
                #expect(option.hasSuffix("-env") || option.hasSuffix("-file"), "\(command): --\(option) takes a secret")
            }
        }
    }

    @Test("a secret given on the command line is refused (exit 2) with the safe form, and never echoed",
          arguments: commands)
    func secretOptionsAreRefused(command: [String]) throws {
        for option in ["--token", "--operator-token", "--password"] {
            for words in [[option, "argv-secret-5150"], [option + "=user=argv-secret-5150"]] {
                let run = try SeedkitProcess.run(command + words)
                #expect(run.status == 2, "\(command) \(option)")
                #expect(
                    run.stderrText.contains("would put a secret on the command line"), "\(command): \(run.stderrText)")
                #expect(!(run.stdoutText + run.stderrText).contains("argv-secret-5150"))
            }
        }
    }

    @Test("sync reads its token from --token-file and names the variable or file it could not use")
    func tokenSourcesAreNamed() throws {
        let directory = try TemporaryDirectory()
        let base = ["sync", "--server", "http://127.0.0.1:9", "--db", directory.path("app.db")]
        let unset = try SeedkitProcess.run(base + ["--token-env", "SEEDKIT_TEST_UNSET_TOKEN"])
        #expect(unset.status == 2)
        #expect(unset.stderrText.contains("SEEDKIT_TEST_UNSET_TOKEN"), "\(unset.stderrText)")
        let missing = try SeedkitProcess.run(base + ["--token-file", directory.path("absent")])
        #expect(missing.status == 2)
        #expect(missing.stderrText.contains("absent: No such file or directory"), "\(missing.stderrText)")
    }
}
