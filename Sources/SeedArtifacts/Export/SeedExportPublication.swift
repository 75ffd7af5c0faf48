import Foundation
import SynchroProtocol
import SystemKit

/// The output side of an export (`spec/seed-format.md` §5 steps 2 and 20; docs/cli.md, "seedkit export"): the
/// destination checks before any work, the seed written under a hidden temporary name beside the output
/// (``DurableFile``), and the publications in their order — the evidence, when asked for, before the seed, so that
/// a seed at the output path always has its evidence.
package struct SeedExportPublication {
    /// SQLite's files beside a database: one beside the output would be applied to the published seed, one beside
    /// the temporary file is the writer's journal and goes with it.
    package static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    let output: String
    let overwrite: Bool
    /// Reads the artifact name out of an evidence object of another export kind (a delta seed's evidence), nil
    /// when the object is not one; the Synchro shape is always recognised.
    let evidenceArtifactName: @Sendable (JSONObject) -> String?

    /// `<output>.evidence.json`.
    package var evidencePath: String { Self.evidencePath(for: output) }

    /// Where the evidence of a seed published at `output` is published.
    package static func evidencePath(for output: String) -> String { output + ".evidence.json" }

    /// Checks the destination — a usable path, no sidecar, no existing file unless overwriting — and creates its
    /// directory.
    package init(
        output: String, overwrite: Bool, evidenceArtifactName: @escaping @Sendable (JSONObject) -> String? = { _ in nil }
    ) throws(SeedExportError) {
        guard !output.isEmpty, !output.hasSuffix("/") else { throw .output(rule: "invalid_output_path", path: output) }
        self.output = output
        self.overwrite = overwrite
        self.evidenceArtifactName = evidenceArtifactName
        let directory = URL(fileURLWithPath: output).deletingLastPathComponent().path
        do {
            try FileSystem.makeDirectory(directory, intermediate: true)
        } catch {
            throw .output(rule: "cannot_create_directory", path: directory)
        }
        try checkDestination()
    }

    /// A new hidden temporary file beside the output for the seed writer, with the writer's journal as companion.
    package func seedFile() throws(SeedExportError) -> DurableFile {
        do {
            return try DurableFile(destination: output, replacing: overwrite, companions: Self.sidecarSuffixes)
        } catch {
            throw SeedExportError(error, output: output)
        }
    }

    /// Publishes `bytes` as the evidence. Without `overwrite` it replaces only an orphan of an interrupted export
    /// (``checkDestination()``): a kill before the seed's publication leaves evidence without its seed, which the
    /// next export replaces.
    package func publishEvidence(_ bytes: [UInt8]) throws(SeedExportError) {
        try checkDestination()
        do {
            let file = try DurableFile(destination: evidencePath, replacing: true)
            try file.write(bytes)
            try file.publish()
        } catch {
            throw SeedExportError(error, output: output)
        }
    }

    /// Publishes the finished seed: `link()` when the output must not exist (refused if it appeared meanwhile),
    /// `rename()` to replace it.
    package func publishSeed(_ file: DurableFile) throws(SeedExportError) {
        // The evidence there now is the one this export just published (whatever its source's evidence format).
        try checkDestination(evidence: false)
        do {
            try file.publish()
        } catch {
            throw SeedExportError(error, output: output)
        }
    }

    private func checkDestination(evidence: Bool = true) throws(SeedExportError) {
        for suffix in Self.sidecarSuffixes where FileSystem.exists(output + suffix) {
            throw .output(rule: "sidecar_present", path: output + suffix)
        }
        if !overwrite && FileSystem.exists(output) { throw .output(rule: "output_exists", path: output) }
        if evidence && !overwrite && FileSystem.exists(evidencePath) && !isOrphanEvidence() {
            throw .output(rule: "evidence_exists", path: evidencePath)
        }
    }

    /// Whether the file at the evidence path is evidence an export of this output wrote and whose seed was never
    /// published (the output does not exist): a seedkit evidence object (Synchro's, or the shape
    /// `evidenceArtifactName` reads) naming the output's file as its artifact.
    /// Anything else there is someone else's file, replaced only with `--force` (issue #19).
    private func isOrphanEvidence() -> Bool {
        guard !FileSystem.exists(output),
              let handle = FileHandle(forReadingAtPath: evidencePath),
              let data = try? handle.read(upToCount: Self.maximumEvidenceBytes + 1)
        else { return false }
        try? handle.close()
        guard data.count <= Self.maximumEvidenceBytes,
              let evidence = (try? StrictJSONParser().parse(Array(data)))?.objectValue
        else { return false }
        let name: String?
        if evidence["seedkit_version"]?.stringValue != nil {
            name = evidence["artifacts"]?.arrayValue?.first?.objectValue?["name"]?.stringValue
        } else {
            name = evidenceArtifactName(evidence)
        }
        return name != nil && name == URL(fileURLWithPath: output).lastPathComponent
    }

    /// Evidence is a few kilobytes (one entry per scope); a larger file at its path is not one.
    private static let maximumEvidenceBytes = 16 << 20
}

extension SeedExportError {
    /// A failed file operation of the publication: the output found to exist is `output_exists`, anything else
    /// ``io(operation:path:errno:)``.
    package init(_ error: SystemError, output: String) {
        self = error.isAlreadyExists && error.path == output
            ? .output(rule: "output_exists", path: output)
            : .io(operation: error.operation, path: error.path, errno: error.code)
    }
}
