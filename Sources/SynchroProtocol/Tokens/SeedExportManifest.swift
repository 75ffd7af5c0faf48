/// The portable seed export manifest (`spec/integrity.md` §7.2, `spec/seed-format.md` §5 step 7), strictly
/// decoded and validated. Receipts and page tokens stay opaque strings; their payloads are cross-checked by
/// the exporter, never their MACs (only the server holds the keys).
public struct SeedExportManifest: Sendable {
    /// One portable scope of the export.
    public struct Scope: Sendable {
        public let id: String
        public let registryGeneration: Int64
        public let membershipGeneration: Int64
        public let retentionGeneration: Int64
        public let cardinality: Int64
        public let checksum: Checksum
        /// The `sc1.` continuation receipt, exactly as issued.
        public let continuation: String
        /// The `sp1.` token of the first page (row ordinal 0).
        public let pageToken: String
    }

    /// The domain of the export manifest hash.
    public static let hashDomain = "synchro:v3:seed-export-manifest:v1"

    public let exportID: String
    public let exportManifestHash: String
    public let schemaVersion: Int64
    public let schemaHash: String
    /// The server's stream generation as text: an upstream server may send a string, the reference server
    /// sends a number; both are kept in their exact spelling.
    public let streamGeneration: String
    /// The `stream_generation` member exactly as received (it is part of the hashed body).
    public let streamGenerationJSON: JSONValue
    public let snapshotBoundary: SeedSnapshotBoundary
    public let pageLimit: Int64
    /// Ascending by UTF-8 octets of the ID, no duplicates.
    public let scopes: [Scope]

    /// Decodes and validates the manifest object, including the recomputed export manifest hash.
    public init(json: JSONValue) throws(SeedExportManifestError) {
        let reader: ExactObjectReader
        do {
            reader = try ExactObjectReader(json, path: "", required: [
                "export_id", "export_manifest_hash", "schema_version", "schema_hash", "stream_generation",
                "snapshot_boundary", "page_limit", "portable_scopes",
            ])
            exportID = try reader.uuid("export_id")
            exportManifestHash = try Self.hash(reader, "export_manifest_hash")
            schemaVersion = try reader.integer("schema_version", in: ExactObjectReader.positive)
            schemaHash = try Self.hash(reader, "schema_hash")
            streamGenerationJSON = try reader.value("stream_generation")
            pageLimit = try reader.integer("page_limit", in: ExactObjectReader.pageLimit)
        } catch {
            throw .member(rule: error.rule, member: error.member)
        }
        switch streamGenerationJSON {
        case .string(let text) where !text.allSatisfy(\.isWhitespace):
            streamGeneration = text
        case .number(let number) where number.isIntegerLiteral && !number.isNegativeZeroLiteral
            && (number.exactInt64 ?? -1) >= 0:
            streamGeneration = number.literal
        default:
            throw .member(rule: "invalid_stream_generation", member: "stream_generation")
        }
        do {
            snapshotBoundary = try SeedSnapshotBoundary(json: reader.object["snapshot_boundary"] ?? .null)
        } catch {
            throw .member(rule: "invalid_snapshot_boundary", member: "snapshot_boundary")
        }
        let entries: [JSONValue]
        do {
            entries = try reader.array("portable_scopes")
        } catch {
            throw .member(rule: error.rule, member: error.member)
        }
        var scopes: [Scope] = []
        for (index, entry) in entries.enumerated() {
            let scope = try Self.scope(entry, path: "portable_scopes.\(index)")
            if let previous = scopes.last, !Self.ascending(previous.id, scope.id) {
                throw .member(rule: "scopes_not_strictly_ascending", member: "portable_scopes.\(index).id")
            }
            scopes.append(scope)
        }
        self.scopes = scopes
        let recomputed = Self.computeHash(hashedBody)
        guard recomputed.exactlyEquals(exportManifestHash) else { throw .exportManifestHashMismatch }
    }

    /// The manifest object without `export_manifest_hash`, receipts and page tokens: what the hash covers.
    public var hashedBody: JSONValue {
        .object(JSONObject([
            JSONMember("export_id", .string(exportID)),
            JSONMember("schema_version", .number(JSONNumber(schemaVersion))),
            JSONMember("schema_hash", .string(schemaHash)),
            JSONMember("stream_generation", streamGenerationJSON),
            JSONMember("snapshot_boundary", snapshotBoundary.json),
            JSONMember("page_limit", .number(JSONNumber(pageLimit))),
            JSONMember("portable_scopes", .array(scopes.map { scope in
                .object(JSONObject([
                    JSONMember("id", .string(scope.id)),
                    JSONMember("registry_generation", .number(JSONNumber(scope.registryGeneration))),
                    JSONMember("membership_generation", .number(JSONNumber(scope.membershipGeneration))),
                    JSONMember("retention_generation", .number(JSONNumber(scope.retentionGeneration))),
                    JSONMember("cardinality", .number(JSONNumber(scope.cardinality))),
                    JSONMember("checksum", scope.checksum.json),
                ]))
            })),
        ]))
    }

    /// `hex(SHA-256(ASCII(domain) || 0x00 || RFC8785_UTF8(body)))`; a body without an RFC 8785 form hashes
    /// to the empty string, which never matches.
    public static func computeHash(_ body: JSONValue) -> String {
        guard let canonical = try? CanonicalJSON.encode(body) else { return "" }
        var writer = OctetWriter(domain: hashDomain, capacity: canonical.count + 64)
        writer.append(canonical)
        return Hex.encode(SHA256.hash(writer.bytes))
    }

    /// The scope named exactly `id`.
    public func scope(_ id: String) -> Scope? {
        scopes.first { $0.id.exactlyEquals(id) }
    }

    private static func scope(_ value: JSONValue, path: String) throws(SeedExportManifestError) -> Scope {
        do throws(ExactObjectReader.Violation) {
            let r = try ExactObjectReader(value, path: path, required: [
                "id", "registry_generation", "membership_generation", "retention_generation", "cardinality",
                "checksum", "continuation", "page_token",
            ])
            let id = try r.string("id")
            guard !id.allSatisfy(\.isWhitespace) else { throw ExactObjectReader.Violation("blank_scope_id", path) }
            let checksum: Checksum
            do {
                checksum = try Checksum(json: try r.value("checksum"))
            } catch {
                throw ExactObjectReader.Violation("invalid_checksum", "\(path).checksum")
            }
            return Scope(
                id: id,
                registryGeneration: try r.integer("registry_generation", in: ExactObjectReader.positive),
                membershipGeneration: try r.integer("membership_generation", in: ExactObjectReader.positive),
                retentionGeneration: try r.integer("retention_generation", in: ExactObjectReader.positive),
                cardinality: try r.integer("cardinality", in: ExactObjectReader.nonNegative),
                checksum: checksum, continuation: try r.string("continuation"),
                pageToken: try r.string("page_token"))
        } catch {
            throw .member(rule: error.rule, member: error.member)
        }
    }

    private static func hash(_ reader: ExactObjectReader, _ name: String) throws(ExactObjectReader.Violation) -> String {
        let text = try reader.string(name)
        guard Hex.isLowercaseHex(text, octets: 32) else { throw .init("invalid_digest", name) }
        return text
    }

    private static func ascending(_ a: String, _ b: String) -> Bool {
        Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
    }
}

/// Why an export manifest was refused. Names members and rules, never values.
public enum SeedExportManifestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A member is missing, unknown or malformed.
    case member(rule: String, member: String)
    /// The recomputed export manifest hash differs from `export_manifest_hash`.
    case exportManifestHashMismatch

    /// The stable rule name.
    public var rule: String {
        switch self {
        case .member(let rule, _): rule
        case .exportManifestHashMismatch: "export_manifest_hash_mismatch"
        }
    }

    public var description: String {
        switch self {
        case .member(let rule, let member): "invalid export manifest: \(rule) at \(member)"
        case .exportManifestHashMismatch: "invalid export manifest: the recomputed export manifest hash differs"
        }
    }
}
