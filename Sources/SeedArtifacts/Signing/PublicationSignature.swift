import Foundation
import SynchroProtocol
import SystemKit

/// The signature of a publication: `provenance.intoto.jsonl` beside its files, a DSSE envelope over an in-toto
/// statement whose subjects are every published file, `evidence.json` and `SHA256SUMS` included, so replacing any
/// file or its sum is detected (docs/seed-verification.md, "Signed publications").
public enum PublicationSignature {
    public static let fileName = "provenance.intoto.jsonl"
    static let sumsName = "SHA256SUMS"

    /// The subjects for the files at `paths` (named by their last path component, which must be unique).
    public static func subjects(of paths: [String]) throws(SigningError) -> [ProvenanceStatement.Subject] {
        var subjects: [ProvenanceStatement.Subject] = []
        for path in paths {
            let name = URL(fileURLWithPath: path).lastPathComponent
            guard !subjects.contains(where: { $0.name == name }) else { throw .duplicateSubject(name: name) }
            guard FileSystem.isRegularFile(path), let digest = try? FileDigest.sha256(path: path) else {
                throw .unreadableArtifact(path: path)
            }
            subjects.append(ProvenanceStatement.Subject(name: name, sha256: digest.hex))
        }
        return subjects
    }

    /// The envelope bytes (one canonical JSON line) of `statement` signed by `key`.
    public static func envelope(_ statement: ProvenanceStatement, key: Ed25519PrivateKey) throws(SigningError)
        -> [UInt8]
    {
        guard let payload = try? statement.encoded() else { throw .crypto(operation: "encode the statement") }
        guard let bytes = try? DSSEEnvelope.sign(payload: payload, key: key).encoded() else {
            throw .crypto(operation: "encode the envelope")
        }
        return bytes
    }

    /// Checks the envelope at `envelopePath` (default: ``fileName`` beside `artifact`) against `trustedKeys`, then
    /// every subject's bytes against its signed digest, and that `artifact` is a subject. Empty when all hold.
    /// The signature is checked before the statement is read, and the statement before any file.
    public static func verify(
        artifact: String, trustedKeys: [Ed25519PublicKey], envelopePath: String? = nil
    ) -> [SignatureFinding] {
        let directory = URL(fileURLWithPath: artifact).deletingLastPathComponent()
        let envelopePath = envelopePath ?? directory.appendingPathComponent(fileName).path
        guard let bytes = FileSystem.read(envelopePath) else {
            return [SignatureFinding(rule: .signatureMissing, file: fileName, message: "no signature envelope")]
        }
        guard let envelope = DSSEEnvelope(bytes: bytes), envelope.payloadType == DSSEEnvelope.inTotoPayloadType
        else {
            return [SignatureFinding(
                rule: .signatureMalformed, file: fileName,
                message: "not a DSSE envelope of an in-toto statement with 64-byte Ed25519 signatures")]
        }
        let message = DSSEEnvelope.preAuthenticationEncoding(type: envelope.payloadType, body: envelope.payload)
        let verified = envelope.signatures.contains { signature in
            trustedKeys.contains { $0.verifies(signature.bytes, of: message) }
        }
        guard verified else {
            let trustedIDs = Set(trustedKeys.map(\.keyID))
            let named = envelope.signatures.map(\.keyID)
            if named.contains(where: trustedIDs.contains) {
                return [SignatureFinding(
                    rule: .signatureInvalid, file: fileName,
                    message: "the signature by a trusted key does not verify: the statement changed after signing")]
            }
            return [SignatureFinding(
                rule: .signatureUntrusted, file: fileName,
                message: "signed by key \(named.joined(separator: ", ")), not a trusted key")]
        }
        guard let subjects = ProvenanceStatement.subjects(ofPayload: envelope.payload) else {
            return [SignatureFinding(
                rule: .statementMalformed, file: fileName,
                message: "the payload is not an in-toto v1 statement with SLSA v1 provenance")]
        }
        return check(subjects, in: directory, artifact: URL(fileURLWithPath: artifact).lastPathComponent)
    }

    /// The digest of the subject named `name` in the envelope beside `artifact`, once the envelope verifies; nil
    /// otherwise. `unpack --patch-from` compares the reconstructed seed with it before publishing.
    public static func signedDigest(
        of name: String, beside artifact: String, trustedKeys: [Ed25519PublicKey]
    ) -> String? {
        let directory = URL(fileURLWithPath: artifact).deletingLastPathComponent()
        guard let bytes = FileSystem.read(directory.appendingPathComponent(fileName).path),
              let envelope = DSSEEnvelope(bytes: bytes), envelope.payloadType == DSSEEnvelope.inTotoPayloadType
        else { return nil }
        let message = DSSEEnvelope.preAuthenticationEncoding(type: envelope.payloadType, body: envelope.payload)
        guard envelope.signatures.contains(where: { signature in
            trustedKeys.contains { $0.verifies(signature.bytes, of: message) }
        }) else { return nil }
        return ProvenanceStatement.subjects(ofPayload: envelope.payload)?.first { $0.name == name }?.sha256
    }

    /// Each subject's file against its signed digest; a mismatch is told apart by the file's `SHA256SUMS` line.
    private static func check(
        _ subjects: [ProvenanceStatement.Subject], in directory: URL, artifact: String
    ) -> [SignatureFinding] {
        var findings: [SignatureFinding] = []
        let sums = FileSystem.read(directory.appendingPathComponent(sumsName).path)
            .flatMap { SHA256Sums(text: String(decoding: $0, as: UTF8.self))?.digests } ?? [:]
        for subject in subjects {
            let path = directory.appendingPathComponent(subject.name).path
            guard !subject.name.contains("/"), FileSystem.isRegularFile(path),
                  let actual = try? FileDigest.sha256(path: path).hex
            else {
                findings.append(SignatureFinding(
                    rule: .artifactMissing, file: subject.name, message: "a signed file is missing"))
                continue
            }
            guard actual != subject.sha256 else { continue }
            if subject.name == sumsName {
                findings.append(SignatureFinding(
                    rule: .checksumsMismatch, file: subject.name, message: "SHA256SUMS changed after signing"))
            } else if sums[subject.name] == actual {
                findings.append(SignatureFinding(
                    rule: .subjectDigestMismatch, file: subject.name,
                    message: "the signed statement names another digest than the file and SHA256SUMS"))
            } else {
                findings.append(SignatureFinding(
                    rule: .artifactDigestMismatch, file: subject.name, message: "the file changed after signing"))
            }
        }
        if !subjects.contains(where: { $0.name == artifact }) {
            findings.append(SignatureFinding(
                rule: .unsignedArtifact, file: artifact, message: "the file is not a subject of the signed statement"))
        }
        return findings
    }
}
