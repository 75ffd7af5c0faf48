import CCrypto
import Foundation
import SynchroProtocol

/// Release evidence written beside an artifact (`evidence.json`): what was exported, from which export and
/// schema, per-scope cardinality and checksum, the SHA-256 of every published file, the tool version and
/// timings. Contains no token, receipt, credential or row value.
public struct SeedEvidence: Sendable {
    /// One published file.
    public struct Artifact: Sendable {
        public let name: String
        public let bytes: Int64
        public let sha256: String

        public init(name: String, bytes: Int64, sha256: String) {
            self.name = name
            self.bytes = bytes
            self.sha256 = sha256
        }

        /// Measures the file at `path`, recorded under its last path component.
        public init(path: String) throws(SeedExportError) {
            let digest = try FileDigest.sha256(path: path)
            self.init(name: URL(fileURLWithPath: path).lastPathComponent, bytes: digest.bytes, sha256: digest.hex)
        }
    }

    public let export: SeedExportReport
    public var artifacts: [Artifact]
    /// Step name → seconds, in the order the steps ran.
    public var timings: [(step: String, seconds: Double)]

    public init(export: SeedExportReport, artifacts: [Artifact], timings: [(step: String, seconds: Double)]) {
        self.export = export
        self.artifacts = artifacts
        self.timings = timings
    }

    /// The evidence object.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("seedkit_version", .string(SeedArtifacts.toolVersion)),
            JSONMember("export_id", .string(export.exportID)),
            JSONMember("export_manifest_hash", .string(export.exportManifestHash)),
            JSONMember("schema", .object(JSONObject([
                JSONMember("version", .number(JSONNumber(export.schema.version))),
                JSONMember("hash", .string(export.schema.hash)),
            ]))),
            JSONMember("rows", .number(JSONNumber(export.rows))),
            JSONMember("scopes", .array(export.scopes.map { scope in
                .object(JSONObject([
                    JSONMember("id", .string(scope.id)),
                    JSONMember("cardinality", .number(JSONNumber(scope.cardinality))),
                    JSONMember("checksum", scope.checksum.json),
                ]))
            })),
            JSONMember("artifacts", .array(artifacts.map { artifact in
                .object(JSONObject([
                    JSONMember("name", .string(artifact.name)),
                    JSONMember("bytes", .number(JSONNumber(artifact.bytes))),
                    JSONMember("sha256", .string(artifact.sha256)),
                ]))
            })),
            JSONMember("timings_ms", .object(JSONObject(timings.map { step in
                JSONMember(step.step, .number(JSONNumber(Int64((step.seconds * 1000).rounded()))))
            }))),
        ]))
    }

    /// RFC 8785 text with a final newline.
    public func encoded() throws -> [UInt8] {
        try CanonicalJSON.encode(json) + [0x0A]
    }
}

/// Streaming SHA-256 of a file's bytes (bounded memory).
public enum FileDigest {
    public static func sha256(path: String) throws(SeedExportError) -> (hex: String, bytes: Int64) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .io(operation: "open", path: path, errno: errno)
        }
        defer { try? handle.close() }
        var context = SHA256_CTX()
        SHA256_Init(&context)
        var total: Int64 = 0
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            } catch {
                throw .io(operation: "read", path: path, errno: EIO)
            }
            if chunk.isEmpty { break }
            total += Int64(chunk.count)
            chunk.withUnsafeBytes { _ = SHA256_Update(&context, $0.baseAddress, $0.count) }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        SHA256_Final(&digest, &context)
        return (Hex.encode(digest), total)
    }
}
