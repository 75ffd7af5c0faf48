import Foundation
import SeedArtifacts
import SynchroProtocol
import SystemKit

/// `seed.db.patch.zst`: the new seed as a zstd patch against the `seed.db` of the publication in place (issue #20),
/// so a device holding the previous release downloads only what changed. The patch is a byte-level zstd frame with
/// the previous file as its reference (``SeedPacker``), so it applies to any seed file, Synchro or delta layout
/// alike; both run paths make it the same way (docs/decisions.md, "Delta pipelines sign and patch").
struct PipelinePatch {
    let report: PackReport
    /// Lowercase hex SHA-256 of the previous `seed.db` the patch applies to.
    let fromSHA256: String

    /// Writes the patch of `seed` against `previous` to `patchPath` at `level`, then applies it once to
    /// `checkPath` (removed afterwards) as a device would, so a patch that does not rebuild this exact seed is
    /// never published. Nil when there is no previous seed.
    static func make(
        seed: String, previous: String, to patchPath: String, level: Int32, checkPath: String
    ) throws(PackError) -> PipelinePatch? {
        guard FileSystem.exists(previous), let digest = try? FileDigest.sha256(path: previous) else { return nil }
        let report = try SeedPacker.pack(seed, to: patchPath, options: PackOptions(level: level, patchFrom: previous))
        defer { try? FileManager.default.removeItem(atPath: checkPath) }
        var unpack = UnpackOptions(requireSQLiteDatabase: true)
        unpack.patchFrom = previous
        unpack.expectedSHA256 = report.uncompressedSHA256
        _ = try SeedPacker.unpack(patchPath, to: checkPath, options: unpack)
        return PipelinePatch(report: report, fromSHA256: digest.hex)
    }

    /// The `pipeline.patch` member of `evidence.json`: what the patch applies to and its size.
    var json: JSONValue {
        .object(JSONObject([
            JSONMember("from_sha256", .string(fromSHA256)),
            JSONMember("compressed_bytes", PipelineJSON.integer(report.compressedBytes)),
        ]))
    }
}
