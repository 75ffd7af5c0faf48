import SQLiteKit
import SynchroStore
import SynchroProtocol

// MARK: - Items 5–8

extension InstalledSeedValidator {
    struct InstalledSchema {
        let reference: SchemaReference
        let manifest: ClientManifest
    }

    /// The schema reference, the manifest (item 6), the local schema (item 7) and the archive row (item 8); nil
    /// when no manifest can be derived, which leaves nothing to compare the tables and rows with.
    func checkSchema(_ meta: [String: String], _ connection: Connection) -> InstalledSchema? {
        guard let versionText = meta["schema_version"], let hash = meta["schema_hash"] else { return nil }
        guard let version = PublicationVerifier.canonicalInteger(versionText),
              let reference = try? SchemaReference(version: version, hash: hash)
        else {
            collector.add(.installerMeta, table: "_synchro_meta",
                          "schema_version and schema_hash are not a valid schema reference")
            return nil
        }
        guard let manifestText = meta["schema_manifest"] else { return nil }
        let manifest: ClientManifest
        do {
            manifest = try ClientManifest(bytes: Array(manifestText.utf8))
        } catch {
            collector.add(.installerSchemaManifest, table: "_synchro_meta",
                          "schema_manifest does not decode and validate: \(error.rule)")
            return nil
        }
        if manifest.reference != reference {
            collector.add(.installerSchemaManifest, table: "_synchro_meta",
                          "the manifest's version or recomputed hash differs from schema_version/schema_hash")
        }
        if let text = meta["local_schema"] {
            let decoded = try? SeedInstallSupport.decodeLocalSchema(text)
            if decoded != manifest.localSchema {
                collector.add(.installerLocalSchema, table: "_synchro_meta",
                              "local_schema differs from the local tables derived from schema_manifest")
            }
        }
        step("reading _synchro_schema_archive") {
            let rows = try connection.query(
                "SELECT schema_version, schema_hash, schema_json FROM _synchro_schema_archive"
            ) { (try $0.value(at: 0), try $0.value(at: 1), try $0.value(at: 2)) }
            guard rows.count == 1, let row = rows.first, row.0.integerValue == reference.version,
                  row.1.textValue == reference.hash
            else {
                collector.add(.installerSchemaArchive, table: "_synchro_schema_archive",
                              "\(rows.count) archive rows; exactly one, for the seed's schema, is required")
                return
            }
            let archived = row.2.textValue.flatMap { try? SeedInstallSupport.decodeLocalSchema($0) }
            if archived != manifest.localSchema {
                collector.add(.installerSchemaArchive, table: "_synchro_schema_archive",
                              "the archived schema_json differs from the local tables derived from schema_manifest")
            }
        }
        return InstalledSchema(reference: reference, manifest: manifest)
    }
}
