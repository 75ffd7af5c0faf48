/// Finds the exact octet span of every element of the top-level `mutations` array in a body that
/// the strict parser has already accepted, so E.body can be measured without re-serializing.
struct PushBodyScanner {
    private let bytes: [UInt8]
    private var position = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The octet length of each `mutations` element, or nil when the body has no such array.
    static func mutationElementLengths(in body: [UInt8]) -> [Int]? {
        var scanner = PushBodyScanner(body)
        return scanner.scanEnvelope()
    }

    private mutating func scanEnvelope() -> [Int]? {
        skipWhitespace()
        guard peek == UInt8(ascii: "{") else { return nil }
        position += 1
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else { return nil }
            let keyStart = position
            skipString()
            let key = decodeKey(bytes[keyStart..<position])
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { return nil }
            position += 1
            skipWhitespace()
            if let key, key.exactlyEquals("mutations") { return scanElements() }
            skipValue()
            skipWhitespace()
            guard peek == UInt8(ascii: ",") else { return nil }
            position += 1
        }
    }

    private mutating func scanElements() -> [Int]? {
        guard peek == UInt8(ascii: "[") else { return nil }
        position += 1
        var lengths: [Int] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") { return lengths }
        while position < bytes.count {
            let start = position
            skipValue()
            lengths.append(position - start)
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): position += 1; skipWhitespace()
            case UInt8(ascii: "]"): return lengths
            default: return nil
            }
        }
        return nil
    }

    private var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let c = peek, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { position += 1 }
    }

    /// From an opening quote to just past the closing one.
    private mutating func skipString() {
        position += 1
        while let c = peek {
            position += 1
            if c == UInt8(ascii: "\\") {
                position += 1
            } else if c == UInt8(ascii: "\"") {
                return
            }
        }
    }

    /// Skips one value; containers are skipped by bracket depth, strings by their quotes.
    private mutating func skipValue() {
        guard let first = peek else { return }
        switch first {
        case UInt8(ascii: "\""):
            skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while let c = peek {
                switch c {
                case UInt8(ascii: "\""):
                    skipString()
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                default:
                    break
                }
                position += 1
                if depth == 0 { return }
            }
        default:
            while let c = peek, !Self.endsScalar(c) { position += 1 }
        }
    }

    private static func endsScalar(_ c: UInt8) -> Bool {
        c == UInt8(ascii: ",") || c == UInt8(ascii: "]") || c == UInt8(ascii: "}")
            || c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D
    }

    /// Member names may be escaped (`"\u006dutations"`), so decode them with the strict parser.
    private func decodeKey(_ token: ArraySlice<UInt8>) -> String? {
        if !token.contains(UInt8(ascii: "\\")) {
            return String(decoding: token.dropFirst().dropLast(), as: UTF8.self)
        }
        return (try? StrictJSONParser().parse(Array(token)))?.stringValue
    }
}
