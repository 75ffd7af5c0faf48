import SeedArtifacts
import SynchroProtocol

/// `seedkit keygen --out KEY [--json]`: a new Ed25519 signing key pair. The private key goes to `KEY` (created with
/// mode 0600, never overwritten, never printed), the public key to `KEY.pub`; the key ID (SHA-256 of the public
/// key's DER) is printed. Exit 0, or 2 when a file exists or cannot be written.
enum KeygenCommand {
    static let spec = CommandSpec(
        "keygen", "a new Ed25519 signing key (KEY mode 0600) and KEY.pub",
        options: [
            .value(
                "out", "KEY", .path, "the private key file to create; the public key goes to KEY.pub", required: true),
            .json(),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 0)
        guard let path = arguments.values["out"], !path.isEmpty else {
            throw Arguments.UsageError(message: "keygen needs --out KEY (the private key file to create)")
        }
        let console = arguments.console("keygen")
        let key: Ed25519PublicKey
        do {
            key = try SigningKeyFile.generate(privatePath: path)
        } catch {
            return SeedReportOutput.unusable(
                rule: error.rule, message: error.description, asJSON: arguments.flags.contains("json"))
        }
        if arguments.flags.contains("json") {
            let object = JSONValue.object(JSONObject([
                JSONMember("key_id", .string(key.keyID)), JSONMember("public_key", .string(path + ".pub")),
            ]))
            Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
        } else {
            console.result("\(key.keyID)\n")
            console.info("ok: private key \(path) (mode 0600), public key \(path).pub\n")
        }
        return .success
    }
}
