import SQLiteKit
import SynchroStore
import SynchroProtocol

/// §6 item 4: `_synchro_meta` holds exactly the keys of §2.3 with the values the exporter writes.
extension PublicationVerifier {
    /// Keys the client validators reject outright (§2.3): a client identity.
    static let forbiddenMetaKeys: Set<String> = [MetaKey.clientServerID.rawValue, "client_id"]

    mutating func checkMeta() {
        collector.evaluated(.metaKeyMissing, .metaKeyForbidden, .metaKeyUnexpected, .metaValue, .schemaManifest,
                            .localSchema)
        let expected = Set(MetaKey.seedKeys.map(\.rawValue))
        for key in MetaKey.seedKeys where meta[key.rawValue] == nil {
            collector.add(.metaKeyMissing, table: "_synchro_meta", "key \(key.rawValue) is missing")
        }
        for key in meta.keys.sorted() where !expected.contains(key) {
            if Self.forbiddenMetaKeys.contains(key) {
                collector.add(.metaKeyForbidden, table: "_synchro_meta", "key \(key) binds a client identity")
            } else if key == "client_generation" && meta[key]?.textValue != "0" {
                collector.add(.metaKeyForbidden, table: "_synchro_meta", "key client_generation is not 0")
            } else {
                collector.add(.metaKeyUnexpected, table: "_synchro_meta", "key \(key) is not a seed metadata key")
            }
        }
        for key in MetaKey.seedKeys {
            guard let value = meta[key.rawValue] else { continue }
            guard case .text(let text) = value else {
                collector.add(.metaValue, table: "_synchro_meta",
                              "\(key.rawValue) is stored as \(value.storageClassName)")
                continue
            }
            if let problem = problem(key, text) {
                let check: SeedCheck = switch key {
                case .schemaManifest: .schemaManifest
                case .localSchema: .localSchema
                default: .metaValue
                }
                collector.add(check, table: "_synchro_meta", "\(key.rawValue): \(problem)")
            }
        }
    }

    /// What is wrong with the value of `key`, nil when it is what the exporter writes.
    private func problem(_ key: MetaKey, _ text: String) -> String? {
        switch key {
        case .syncLock, .checkpoint, .scopeSetVersion:
            return text == "0" ? nil : "is not 0"
        case .snapshotComplete:
            let expected = String(options.expectedSnapshotComplete)
            return text == expected ? nil : "is not \(expected)"
        case .schemaVersion:
            guard let version = Self.canonicalInteger(text), version >= 1,
                  version <= SchemaReference.maxProtocolInteger
            else { return "is not a canonical positive integer" }
            if let manifest, manifest.reference.version != version { return "differs from the manifest's version" }
            return nil
        case .schemaHash:
            guard Hex.isLowercaseHex(text, octets: 32) else { return "is not 64 lowercase hex characters" }
            if let manifest, !manifest.reference.hash.exactlyEquals(text) {
                return "differs from the hash recomputed from schema_manifest"
            }
            return nil
        case .schemaManifest:
            return manifestProblem.map { "does not decode and validate (\($0))" }
        case .localSchema:
            guard let manifest else { return nil }
            guard let expected = try? SeedLocalSchema.text(manifest.localSchema) else {
                return "the manifest's local schema has no RFC 8785 form"
            }
            return text.exactlyEquals(expected) ? nil : "differs from the local schema derived from schema_manifest"
        case .exportID:
            return WireFormats.isCanonicalUUID(text) ? nil : "is not a lowercase UUID"
        case .exportManifestHash:
            return Hex.isLowercaseHex(text, octets: 32) ? nil : "is not 64 lowercase hex characters"
        case .streamGeneration:
            return text.unicodeScalars.allSatisfy(\.properties.isWhitespace) ? "is blank" : nil
        case .snapshotBoundary:
            guard let boundary = Self.boundary(text) else {
                return "is not a snapshot boundary object"
            }
            let canonical = (try? CanonicalJSON.string(boundary.json)) ?? ""
            return text.exactlyEquals(canonical) ? nil : "is not in RFC 8785 form"
        case .pageLimit:
            guard let limit = Self.canonicalInteger(text), (1...1000).contains(limit) else {
                return "is not a canonical integer in 1…1000"
            }
            return nil
        case .clientServerID, .replacedClientIDs, .manifestIndexes, .deferredIndexes, .clientGeneration,
            .atomicGroupID:
            return "is not a seed key"
        }
    }

    /// The integer of a canonical decimal text (`0`, or no leading zero, optional `-`), nil otherwise.
    static func canonicalInteger(_ text: String) -> Int64? {
        guard let value = Int64(text), String(value) == text else { return nil }
        return value
    }

    static func boundary(_ text: String) -> SeedSnapshotBoundary? {
        guard let json = try? StrictJSONParser().parse(Array(text.utf8)) else { return nil }
        return try? SeedSnapshotBoundary(json: json)
    }
}
