/// The `SHA256SUMS` file of a publication, in the format `sha256sum` writes and `sha256sum -c` checks:
/// one `<64 lowercase hex>  <name>` line per file, sorted by name.
public struct SHA256Sums: Sendable, Equatable {
    /// File name → lowercase hex SHA-256.
    public let digests: [String: String]

    public init(digests: [String: String]) {
        self.digests = digests
    }

    /// Parses the text; nil when a line is not in the format or a name repeats.
    public init?(text: String) {
        var digests: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            let characters = Array(line)
            guard characters.count > 66, characters[64] == " ", characters[65] == " " || characters[65] == "*" else {
                return nil
            }
            let digest = String(characters[0..<64])
            let name = String(characters[66...])
            guard digest.allSatisfy({ $0.isHexDigit && !$0.isUppercase }), !name.contains("/"),
                  digests[name] == nil
            else { return nil }
            digests[name] = digest
        }
        guard text.isEmpty || text.hasSuffix("\n") else { return nil }
        self.digests = digests
    }

    public var text: String {
        digests.keys.sorted().map { "\(digests[$0]!)  \($0)\n" }.joined()
    }
}
