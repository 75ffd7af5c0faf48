import SQLiteKit

extension SeedBaseline {
    /// Whether internal table `name` exists with exactly the `CREATE TABLE` text the baseline writes.
    package static func hasBaselineDDL(_ name: String, on connection: Connection) throws -> Bool {
        guard let expected = table(named: name)?.createSQL else { return false }
        return try connection.scalar(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1", [.text(name)]
        )?.textValue == expected
    }
}
