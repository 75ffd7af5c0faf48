/// SQL identifier quoting, for table, column, trigger and savepoint names built into SQL text.
public enum SQLiteIdentifier {
    /// `name` in double quotes with every embedded `"` doubled, so any name is one identifier token.
    public static func quote(_ name: String) -> String {
        var quoted = "\""
        quoted.reserveCapacity(name.utf8.count + 2)
        for character in name.unicodeScalars {
            if character == "\"" {
                quoted.unicodeScalars.append("\"")
            }
            quoted.unicodeScalars.append(character)
        }
        quoted.unicodeScalars.append("\"")
        return quoted
    }
}
