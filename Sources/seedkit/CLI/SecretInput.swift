import Foundation
import SystemKit

/// Where a credential comes from: an environment variable or a file, never a command-line value (every local user
/// can read a process's arguments in `/proc/PID/cmdline`). A secret option `NAME` is given as `--NAME-env VAR` or
/// `--NAME-file FILE`, else read from its default variable; what is printed about it is only where it came from.
struct SecretInput {
    /// The secret's value; never printed.
    let value: String
    /// Where it came from, for `--verbose` and error messages: `the variable SEEDKIT_TOKEN`, `the file t.txt`.
    let source: String

    /// The options that once took a secret on the command line, and what replaces each.
    static let refusedOptions: [String: String] = [
        "token": "--token-env VAR or --token-file FILE (serve: --token-file FILE or SEEDKIT_TOKENS)",
        "operator-token": "--operator-token-env VAR or --operator-token-file FILE",
        "password": "a variable or a file", "secret": "a variable or a file",
    ]

    /// The usage error for `--name` when it is a refused secret option, nil otherwise.
    static func refusal(_ name: String) -> Arguments.UsageError? {
        guard let replacement = refusedOptions[name] else { return nil }
        return Arguments.UsageError(
            message: "--\(name) would put a secret on the command line, where other users of the machine can read "
                + "it; use \(replacement)", rule: "secret_on_command_line")
    }

    /// The secret `--NAME-env VAR` or `--NAME-file FILE` gives (at most one of them), else the value of the variable
    /// the command declares as `--NAME-env`'s default; nil when none is given and that variable is unset or empty.
    static func read(_ arguments: Arguments, option name: String) throws(Arguments.UsageError) -> SecretInput? {
        let defaultVariable = arguments.spec.option("\(name)-env")?.defaultValue
        let variable = arguments.values["\(name)-env"]
        let file = arguments.values["\(name)-file"]
        if variable != nil && file != nil {
            throw Arguments.UsageError(message: "--\(name)-env and --\(name)-file exclude each other")
        }
        if let file { return try self.file(file, option: "--\(name)-file") }
        let environment = ProcessInfo.processInfo.environment
        if let variable {
            guard let value = environment[variable], !value.isEmpty else {
                throw Arguments.UsageError(
                    message: "the environment variable \(variable) (--\(name)-env) is unset or empty",
                    rule: "credential_missing")
            }
            return SecretInput(value: value, source: "the variable \(variable)")
        }
        guard let defaultVariable, let value = environment[defaultVariable], !value.isEmpty else { return nil }
        return SecretInput(value: value, source: "the variable \(defaultVariable)")
    }

    /// The secret in `path`: its text without one trailing line break.
    static func file(_ path: String, option: String) throws(Arguments.UsageError) -> SecretInput {
        let text: String
        do {
            text = String(decoding: try FileSystem.readAll(path), as: UTF8.self)
        } catch {
            throw Arguments.UsageError(message: "\(error) (\(option))", rule: "credential_missing")
        }
        var value = Substring(text)
        if value.hasSuffix("\n") { value = value.dropLast() }
        if value.hasSuffix("\r") { value = value.dropLast() }
        guard !value.isEmpty else {
            throw Arguments.UsageError(message: "the file \(path) (\(option)) is empty", rule: "credential_missing")
        }
        return SecretInput(value: String(value), source: "the file \(path)")
    }
}
