import SQLiteKit
import SynchroProtocol
import SynchroStore

/// The first look at a seed nobody trusts yet, before any check reads a row and before the client store migrates a
/// copy of it: the schema objects that would run code the seed brought — a view (read in place of a table), a
/// virtual table (a module's code), a trigger other than the generator's capture triggers (fired by the
/// migration's writes) — are refused with an `executable_schema` finding, and the copy is then not migrated.
///
/// Only `sqlite_schema` and, when it is an ordinary table, the `schema_manifest` row of `_synchro_meta` are read,
/// on a guarded connection (views off, ``BudgetMeter``): nothing of the seed runs. The expected capture triggers
/// are compared as text with ``LegacyCaptureTriggers``, as the publication checks compare them (§6 item 3).
enum SeedSchemaGate {
    /// One row of `sqlite_schema`.
    private struct SchemaObject {
        let type: String
        let name: String
        let table: String
        let sql: String
    }

    /// Whether the seed at `seed` may be migrated; refusals (and a schema that cannot be read) go to `collector`.
    static func admits(seed: String, collector: FindingCollector) -> Bool {
        collector.evaluated(.executableSchema)
        let before = collector.total
        collector.guarding("reading sqlite_schema before any other check", as: .executableSchema) {
            let connection = try SeedFileProbe.openImmutable(seed, meter: collector.meter)
            defer { connection.close() }
            let objects = try connection.query("SELECT type, name, tbl_name, sql FROM sqlite_schema") { row in
                SchemaObject(type: try row.text(at: 0), name: try row.text(at: 1), table: try row.text(at: 2),
                             sql: (try? row.value(at: 3))?.textValue ?? "")
            }
            let expected = expectedTriggers(objects, connection)
            for object in objects {
                if let reason = refusal(of: object, expected: expected) {
                    collector.add(.executableSchema, table: object.table, reason)
                }
            }
        }
        return collector.total == before
    }

    /// Why `object` would run the seed's code, nil when it does not.
    private static func refusal(of object: SchemaObject, expected: [String: (table: String, sql: String)]) -> String? {
        switch object.type {
        case "view":
            return "view \(object.name): reading it would run the seed's query; a seed carries no views"
        case "table" where isVirtual(object.sql):
            return "virtual table \(object.name): reading it would run a module's code; a seed carries none"
        case "trigger":
            guard let trigger = expected[object.name], trigger.table == object.table,
                  trimmedSQL(trigger.sql) == trimmedSQL(object.sql)
            else {
                return "trigger \(object.name) is not a capture trigger of the manifest's tables; "
                    + "the migration would run it"
            }
            return nil
        default:
            return nil
        }
    }

    /// The capture triggers of the tables the seed's manifest declares, by name; none when `_synchro_meta` is not
    /// an ordinary table or the manifest does not decode (the metadata checks report why).
    private static func expectedTriggers(
        _ objects: [SchemaObject], _ connection: Connection
    ) -> [String: (table: String, sql: String)] {
        guard objects.contains(where: { $0.type == "table" && $0.name == "_synchro_meta" && !isVirtual($0.sql) }),
              let value = try? connection.scalar(
                  "SELECT value FROM _synchro_meta WHERE key = ?", [.text(MetaKey.schemaManifest.rawValue)]),
              case .text(let text) = value,
              let manifest = try? ClientManifest(bytes: Array(text.utf8))
        else { return [:] }
        var expected: [String: (table: String, sql: String)] = [:]
        for table in manifest.localSchema {
            for (name, sql) in LegacyCaptureTriggers.statements(for: table) {
                expected[name] = (table.tableName, sql)
            }
        }
        return expected
    }

    private static func isVirtual(_ sql: String) -> Bool {
        let words = sql.uppercased().split(whereSeparator: { $0.isWhitespace }).prefix(2)
        return words.count == 2 && words[words.startIndex] == "CREATE" && words[words.startIndex + 1] == "VIRTUAL"
    }

    /// `text` without leading and trailing white space: how stored trigger text is compared with the generator's.
    static func trimmedSQL(_ text: String) -> Substring {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return Substring(scalars[first...last])
    }
}
