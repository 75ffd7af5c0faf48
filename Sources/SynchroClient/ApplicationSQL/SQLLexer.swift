import SynchroStore
/// A small SQLite tokenizer for classifying application SQL before SQLite compiles it: whitespace and
/// comments are skipped, literals and parameters become opaque tokens, quoted identifiers are unquoted.
/// It never evaluates anything; SQLite remains the parser of record.
struct SQLLexer {
    enum Token: Equatable {
        /// A bare word (keyword or identifier), as written.
        case word(String)
        /// A `"…"`, `` `…` `` or `[…]` identifier, unquoted.
        case quotedIdentifier(String)
        /// A string or blob literal, a number or a parameter: never inspected.
        case literal
        /// Any other single character.
        case symbol(UInt8)

        /// The keyword this token spells (upper-cased ASCII), when it is a bare word.
        var keyword: String? {
            guard case .word(let text) = self else { return nil }
            return String(decoding: text.utf8.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
        }

        /// The identifier this token names, bare or quoted.
        var identifier: String? {
            switch self {
            case .word(let text), .quotedIdentifier(let text): text
            default: nil
            }
        }

        func isSymbol(_ character: Character) -> Bool {
            guard case .symbol(let byte) = self, let ascii = character.asciiValue else { return false }
            return byte == ascii
        }
    }

    struct Failure: Error {}

    /// The tokens of `sql`; an unterminated literal, quoted identifier or block comment is a failure.
    static func tokens(_ sql: String) throws(Failure) -> [Token] {
        let bytes = Array(sql.utf8)
        var tokens: [Token] = []
        var index = 0
        func at(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0C, 0x0D:
                index += 1
            case UInt8(ascii: "-") where at(1) == UInt8(ascii: "-"):
                while index < bytes.count && bytes[index] != 0x0A { index += 1 }
            case UInt8(ascii: "/") where at(1) == UInt8(ascii: "*"):
                index += 2
                while index + 1 < bytes.count && !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == 0x2F) {
                    index += 1
                }
                guard index + 1 < bytes.count else { throw Failure() }
                index += 2
            case UInt8(ascii: "'"):
                _ = try quoted(bytes, &index, closing: UInt8(ascii: "'"), doubled: true)
                tokens.append(.literal)
            case UInt8(ascii: "\""), UInt8(ascii: "`"):
                tokens.append(.quotedIdentifier(try quoted(bytes, &index, closing: byte, doubled: true)))
            case UInt8(ascii: "["):
                tokens.append(.quotedIdentifier(try quoted(bytes, &index, closing: UInt8(ascii: "]"), doubled: false)))
            case UInt8(ascii: "?"), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "$"):
                index += 1
                while index < bytes.count && isIdentifierPart(bytes[index]) { index += 1 }
                tokens.append(.literal)
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                index = numberEnd(bytes, from: index)
                tokens.append(.literal)
            case UInt8(ascii: ".") where at(1).map { (0x30...0x39).contains($0) } == true:
                index = numberEnd(bytes, from: index)
                tokens.append(.literal)
            default:
                if isIdentifierStart(byte) {
                    let start = index
                    while index < bytes.count && isIdentifierPart(bytes[index]) { index += 1 }
                    tokens.append(.word(String(decoding: bytes[start..<index], as: UTF8.self)))
                } else {
                    tokens.append(.symbol(byte))
                    index += 1
                }
            }
        }
        return tokens
    }

    /// Reads a quoted run starting at `index` (on the opening character) and returns its unescaped content.
    private static func quoted(
        _ bytes: [UInt8], _ index: inout Int, closing: UInt8, doubled: Bool
    ) throws(Failure) -> String {
        index += 1
        var content: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == closing {
                if doubled && index < bytes.count && bytes[index] == closing {
                    content.append(closing)
                    index += 1
                } else {
                    return String(decoding: content, as: UTF8.self)
                }
            } else {
                content.append(byte)
            }
        }
        throw Failure()
    }

    private static func numberEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            let isExponentSign = (byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")) && index > start
                && (bytes[index - 1] | 0x20) == UInt8(ascii: "e")
            guard isIdentifierPart(byte) || byte == UInt8(ascii: ".") || isExponentSign else { break }
            index += 1
        }
        return index
    }

    /// SQLite identifier characters: ASCII letters, `_`, and every non-ASCII octet.
    private static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    private static func isIdentifierPart(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || (0x30...0x39).contains(byte) || byte == UInt8(ascii: "$")
    }
}
