import SQLiteKit
import SynchroStore

// MARK: - Items 3 and 5

extension InstalledSeedValidator {
    func checkMigrations(_ connection: Connection) throws {
        guard try connection.tableExists("grdb_migrations") else { return }
        let recorded = try connection.query("SELECT identifier FROM grdb_migrations") {
            (try? $0.value(at: 0))?.textValue ?? ""
        }
        let expected = StoreMigration.allCases.map(\.identifier)
        if recorded.count != expected.count || Set(recorded) != Set(expected) {
            let missing = expected.filter { !recorded.contains($0) }
            collector.add(.installerMigrationIdentifiers, table: "grdb_migrations",
                          "\(recorded.count) identifiers recorded instead of the client's \(expected.count)"
                              + (missing.isEmpty ? "" : "; missing \(missing.joined(separator: ", "))"))
        }
    }

    /// Item 5: required keys, flag values, no client identity, a canonical schema reference.
    func readMeta(_ connection: Connection) throws -> [String: String] {
        var meta: [String: String] = [:]
        try connection.forEachRow("SELECT key, value FROM _synchro_meta") { row in
            let key = (try? row.value(at: 0))?.textValue ?? ""
            guard !key.isEmpty else {
                collector.add(.installerMeta, table: "_synchro_meta", "a key is empty or not text")
                return
            }
            guard case .text(let value) = try row.value(at: 1) else {
                collector.add(.installerMeta, table: "_synchro_meta", "the value of \(key) is not text")
                return
            }
            meta[key] = value
        }
        for key in Self.requiredMetaKeys where meta[key] == nil {
            collector.add(.installerMeta, table: "_synchro_meta", "key \(key) is missing")
        }
        for (key, expected) in [("snapshot_complete", "1"), ("sync_lock", "0"), ("checkpoint", "0"),
                                ("scope_set_version", "0")] {
            if let value = meta[key], value != expected {
                collector.add(.installerMeta, table: "_synchro_meta", "\(key) is not \(expected)")
            }
        }
        if meta["client_server_id"] != nil {
            collector.add(.installerMeta, table: "_synchro_meta", "key client_server_id binds a client identity")
        }
        if let generation = meta["client_generation"], generation != "0" {
            collector.add(.installerMeta, table: "_synchro_meta", "client_generation is not 0")
        }
        return meta
    }
}
