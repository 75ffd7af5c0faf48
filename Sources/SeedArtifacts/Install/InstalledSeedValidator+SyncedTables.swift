import SQLiteKit
import SynchroStore

// MARK: - Item 9

extension InstalledSeedValidator {
    func checkSyncedTables(_ manifest: ClientManifest, _ connection: Connection) throws {
        var triggers: [String: String] = [:]
        try connection.forEachRow("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'") { row in
            triggers[try row.text(at: 0)] = (try? row.value(at: 1))?.textValue ?? ""
        }
        for table in manifest.localSchema {
            let physical = try connection.columns(of: table.tableName)
            if !SeedInstallSupport.syncedTableMatches(physical, table) {
                collector.add(.installerSyncedTable, table: table.tableName,
                              "the columns differ from the manifest (count, name, type, NOT NULL, key or default)")
            }
            for (name, sql) in SeedInstallSupport.captureTriggers(for: table) {
                guard let stored = triggers[name] else {
                    collector.add(.installerTrigger, table: table.tableName, "trigger \(name) is missing")
                    continue
                }
                if !Self.equalCollapsed(stored, sql) {
                    collector.add(.installerTrigger, table: table.tableName,
                                  "trigger \(name) differs from the client's capture trigger generator")
                }
            }
        }
    }

    /// The text with every whitespace run collapsed to one space, trimmed.
    static func collapsed(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// `collapsed(a) == collapsed(b)`, compared octet by octet when both texts are ASCII (whose only whitespace
    /// characters are U+0009…U+000D and U+0020): the capture triggers' SQL is long, and classifying each of its
    /// characters as Unicode whitespace dominated this check.
    static func equalCollapsed(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        let compared = a.withUTF8 { x in b.withUTF8 { y in ASCIIWords.equal(x, y) } }
        return compared ?? (collapsed(a) == collapsed(b))
    }
}

/// Whitespace-separated words of ASCII text.
private enum ASCIIWords {
    /// Whether `x` and `y` hold the same words in the same order; nil when either is not ASCII.
    static func equal(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard x.allSatisfy({ $0 < 0x80 }), y.allSatisfy({ $0 < 0x80 }) else { return nil }
        var i = skipSpace(x, 0)
        var j = skipSpace(y, 0)
        while i < x.count && j < y.count {
            while i < x.count && j < y.count && !isSpace(x[i]) && !isSpace(y[j]) {
                guard x[i] == y[j] else { return false }
                i += 1
                j += 1
            }
            let xEnded = i == x.count || isSpace(x[i])
            let yEnded = j == y.count || isSpace(y[j])
            guard xEnded && yEnded else { return false }
            i = skipSpace(x, i)
            j = skipSpace(y, j)
        }
        return i == x.count && j == y.count
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    private static func skipSpace(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var index = start
        while index < text.count && isSpace(text[index]) { index += 1 }
        return index
    }
}
