import SynchroProtocol

/// Why a signed publication was refused. Each rule is distinct, so a release process can tell a key problem from
/// a replaced file; a finding names files and key IDs, never key material.
public struct SignatureFinding: Sendable, Equatable, CustomStringConvertible {
    public enum Rule: String, Sendable, CaseIterable {
        /// No envelope beside the artifact.
        case signatureMissing = "signature_missing"
        /// The envelope is not a DSSE envelope: not JSON, a missing member, bad base64, or a signature that is not
        /// 64 bytes (a truncated signature).
        case signatureMalformed = "signature_malformed"
        /// No signature is by a trusted key: the key IDs it names are not among `--trusted-key`.
        case signatureUntrusted = "signature_untrusted"
        /// A signature names a trusted key but does not verify: the payload or its type changed after signing.
        case signatureInvalid = "signature_invalid"
        /// The signed payload is not an in-toto v1 statement with SLSA v1 provenance and named, digested subjects.
        case statementMalformed = "statement_malformed"
        /// A subject of the statement is not a file beside the envelope.
        case artifactMissing = "artifact_missing"
        /// A file's bytes differ from the signed digest and from its `SHA256SUMS` line: it changed after signing.
        case artifactDigestMismatch = "artifact_digest_mismatch"
        /// `SHA256SUMS` differs from the signed digest: the sums were rewritten.
        case checksumsMismatch = "checksums_mismatch"
        /// A file matches its `SHA256SUMS` line but not the signed statement: the statement names another digest.
        case subjectDigestMismatch = "subject_digest_mismatch"
        /// The artifact being checked is not a subject of the statement.
        case unsignedArtifact = "unsigned_artifact"
    }

    public let rule: Rule
    /// The file the finding is about, when there is one.
    public let file: String?
    public let message: String

    public var description: String { "\(rule.rawValue)\(file.map { " (\($0))" } ?? ""): \(message)" }

    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("rule", .string(rule.rawValue)),
            JSONMember("file", file.map(JSONValue.string) ?? .null),
            JSONMember("message", .string(message)),
        ]))
    }
}
