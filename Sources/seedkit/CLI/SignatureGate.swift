import SeedArtifacts
import SynchroProtocol

/// `--trusted-key PUB` (repeatable) of `verify`, `install`, `unpack` and `rehearse`: the artifact's publication
/// signature is checked before anything else (docs/seed-verification.md, "Signed publications"). Without the
/// option nothing is checked; with it, an unsigned, wrongly signed or untrusted artifact exits 6.
enum SignatureGate {
    static let option = "trusted-key"
    /// The declaration every command that checks signatures lists.
    static let optionSpec = OptionSpec.value(
        option, "PUB", .path, "check the publication signature against this public key before anything else",
        repeatable: true)

    /// The trusted keys named on the command line (empty without the option); an unreadable key is a usage error.
    static func trustedKeys(_ arguments: Arguments) throws(Arguments.UsageError) -> [Ed25519PublicKey] {
        var keys: [Ed25519PublicKey] = []
        for path in arguments.allValues[option] ?? [] {
            do {
                keys.append(try SigningKeyFile.publicKey(path: path))
            } catch {
                throw Arguments.UsageError(message: "--trusted-key: \(error)")
            }
        }
        return keys
    }

    /// Nil when no key is trusted or `artifact`'s signature holds; otherwise the findings are printed (one `FAIL`
    /// line each, or `{"signature_findings":[…]}` with `--json`) and the status is ``ExitStatus/signatureRefused``.
    static func check(
        _ artifact: String, keys: [Ed25519PublicKey], asJSON: Bool, console: Console
    ) -> ExitStatus? {
        guard !keys.isEmpty else { return nil }
        let findings = PublicationSignature.verify(artifact: artifact, trustedKeys: keys)
        guard !findings.isEmpty else {
            console.detail("signature: \(PublicationSignature.fileName) verified with a trusted key")
            return nil
        }
        if asJSON {
            let object = JSONValue.object(JSONObject([
                JSONMember("signature_findings", .array(findings.map(\.json))),
            ]))
            Terminal.out(bytes: ((try? CanonicalJSON.encode(object)) ?? []) + [0x0A])
        } else {
            for finding in findings { console.result("FAIL \(finding)\n") }
        }
        Terminal.err("seedkit: \(artifact): the publication signature does not hold; nothing else was checked\n")
        return .signatureRefused
    }
}
