import Foundation
import SeedArtifacts
import SynchroProtocol
import SystemKit

/// `seedkit sign FILE… (--key-file KEY | --key-env VAR) [--force] [--json]`: signs files that sit in one directory
/// with an Ed25519 key: a DSSE envelope over an in-toto statement (SLSA provenance, build type `sign`) whose
/// subjects are the files, written as `provenance.intoto.jsonl` in that directory. The key is never printed.
/// Exit 0, or 2.
enum SignCommand {
    static let spec = CommandSpec(
        "sign", "sign files into provenance.intoto.jsonl beside them",
        positionals: [
            PositionalSpec(placeholder: "FILE", help: "a file to sign; all in one directory", repeatable: true),
        ],
        options: [
            .secretFile("key", "the private key file (mode 0600); exactly one of --key-file and --key-env"),
            .secretVariable("key", "the variable holding the private key's PEM text"),
            .force("replace an existing provenance.intoto.jsonl"),
            .json(),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let started = Date()
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: Int.max, atLeast: 1)
        let files = arguments.positionals
        let directories = Set(files.map {
            URL(fileURLWithPath: $0).deletingLastPathComponent().standardizedFileURL.path
        })
        guard directories.count == 1, let directory = directories.first else {
            throw Arguments.UsageError(
                message: "sign needs files of one directory (the envelope is written beside them)")
        }
        guard (arguments.values["key-file"] == nil) != (arguments.values["key-env"] == nil) else {
            throw Arguments.UsageError(message: "sign needs exactly one of --key-file KEY or --key-env VAR")
        }
        let asJSON = arguments.flags.contains("json")
        let console = arguments.console("sign")
        let envelopePath = URL(fileURLWithPath: directory).appendingPathComponent(PublicationSignature.fileName).path
        do throws(SigningError) {
            let key = try privateKey(arguments, console: console)
            if FileSystem.exists(envelopePath) && !arguments.flags.contains("force") {
                return SeedReportOutput.unusable(
                    rule: "output_exists", message: "\(envelopePath) exists; overwriting it was not requested",
                    asJSON: asJSON)
            }
            let subjects = try PublicationSignature.subjects(of: files)
            let statement = ProvenanceStatement(
                subjects: subjects, buildType: ProvenanceStatement.signBuildType,
                externalParameters: .object(JSONObject([
                    JSONMember("files", .array(subjects.map { .string($0.name) })),
                ])),
                started: started, finished: Date())
            let bytes = try PublicationSignature.envelope(statement, key: key)
            // Written beside the destination, synced, then put in place atomically.
            do throws(SystemError) {
                let file = try DurableFile(destination: envelopePath, replacing: arguments.flags.contains("force"))
                do throws(SystemError) {
                    try file.write(bytes)
                    try file.publish()
                } catch {
                    file.discard()
                    throw error
                }
            } catch {
                throw SigningError.io(operation: error.operation, path: error.path, errno: error.code)
            }
            if asJSON {
                let object = JSONValue.object(JSONObject([
                    JSONMember("envelope", .string(envelopePath)), JSONMember("key_id", .string(key.publicKey.keyID)),
                    JSONMember("subjects", .array(subjects.map { .string($0.name) })),
                ]))
                Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
            } else {
                let keyID = key.publicKey.keyID
                console.info("ok: signed \(subjects.count) files into \(envelopePath) with key \(keyID)\n")
            }
            return .success
        } catch {
            return SeedReportOutput.unusable(rule: error.rule, message: error.description, asJSON: asJSON)
        }
    }

    /// `--key-file FILE` (mode 0600) or else `--key-env VAR` (PEM text); the caller checked that exactly one is given.
    private static func privateKey(_ arguments: Arguments, console: Console) throws(SigningError) -> Ed25519PrivateKey {
        if let path = arguments.values["key-file"] {
            console.detail("private key from the file \(path)")
            return try SigningKeyFile.privateKey(path: path)
        }
        let variable = arguments.values["key-env"] ?? ""
        console.detail("private key from the variable \(variable)")
        return try SigningKeyFile.privateKey(variable: variable, environment: ProcessInfo.processInfo.environment)
    }
}
