/// A strict RFC 8259 parser over UTF-8 octets for protocol bytes.
///
/// Unlike Foundation's parser it rejects duplicate member names (compared after unescaping, by
/// exact Unicode scalars), invalid UTF-8, lone surrogate escapes, a byte order mark and trailing
/// content, keeps every number's exact text, and enforces size and depth limits. Every failure
/// is a ``JSONParseError`` with the rule and byte offset.
public struct StrictJSONParser: Sendable {
    public var limits: JSONLimits

    public init(limits: JSONLimits = .protocolDefault) {
        self.limits = limits
    }

    /// Parses exactly one JSON value (surrounded by optional whitespace).
    public func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = bytes.withUnsafeBufferPointer { buffer in
            parse(buffer: buffer)
        }
        return try result.get()
    }

    /// Parses exactly one JSON value from any contiguous or non-contiguous octet collection.
    public func parse<Bytes: Collection>(_ bytes: Bytes) throws(JSONParseError) -> JSONValue
    where Bytes.Element == UInt8 {
        if let result = bytes.withContiguousStorageIfAvailable({ parse(buffer: $0) }) {
            return try result.get()
        }
        return try parse(Array(bytes))
    }

    /// Parses the UTF-8 of a Swift string (convenience for tests and embedded JSON text).
    public func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private func parse(buffer: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> {
        guard buffer.count <= limits.maxBytes else {
            return .failure(JSONParseError(.sizeLimitExceeded, at: limits.maxBytes))
        }
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            return .failure(JSONParseError(.unexpectedEnd, at: 0))
        }
        var reader = JSONByteReader(base: base, count: buffer.count, maxDepth: limits.maxDepth)
        do throws(JSONParseError) {
            let value = try reader.parseDocument()
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}

/// The parser's cursor over one document. Kept separate so the hot loops work on a raw pointer.
struct JSONByteReader {
    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    var position = 0
    var depth = 0

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.base = base
        self.count = count
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if position != count { throw JSONParseError(.trailingContent, at: position) }
        return value
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < count {
            switch base[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        switch base[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw JSONParseError(.unexpectedByte, at: position)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let text = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for expected in text {
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            guard base[position] == expected else { throw JSONParseError(.unexpectedByte, at: position) }
            position += 1
        }
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw JSONParseError(.depthLimitExceeded, at: position) }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < count && base[position] == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            switch base[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                depth -= 1
                return .array(elements)
            default: throw JSONParseError(.unexpectedByte, at: position)
            }
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        let objectStart = position
        position += 1
        var members: [JSONMember] = []
        skipWhitespace()
        if position < count && base[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            guard base[position] == UInt8(ascii: "\"") else { throw JSONParseError(.unexpectedByte, at: position) }
            let keyOffset = position
            let key = try parseString()
            skipWhitespace()
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            guard base[position] == UInt8(ascii: ":") else { throw JSONParseError(.unexpectedByte, at: position) }
            position += 1
            skipWhitespace()
            let value = try parseValue()
            if Self.containsKey(key, in: members) { throw JSONParseError(.duplicateMember, at: keyOffset) }
            members.append(JSONMember(key, value))
            skipWhitespace()
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            switch base[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                depth -= 1
                if members.count > Self.linearDuplicateScanLimit {
                    try Self.rejectDuplicatesBySorting(members, objectStart: objectStart)
                }
                return .object(JSONObject(members))
            default: throw JSONParseError(.unexpectedByte, at: position)
            }
        }
    }

    /// Up to this many members a linear scan per key is cheaper than sorting.
    private static let linearDuplicateScanLimit = 16

    @inline(__always)
    private static func containsKey(_ key: String, in members: [JSONMember]) -> Bool {
        guard members.count <= linearDuplicateScanLimit else { return false }
        for member in members where member.key.exactlyEquals(key) { return true }
        return false
    }

    private static func rejectDuplicatesBySorting(_ members: [JSONMember], objectStart: Int) throws(JSONParseError) {
        let keys = members.map(\.key).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for i in 1..<keys.count where keys[i - 1].exactlyEquals(keys[i]) {
            throw JSONParseError(.duplicateMember, at: objectStart)
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = position
        @inline(__always) func isDigit(_ p: Int) -> Bool { p < count && base[p] &- 0x30 < 10 }
        if base[position] == UInt8(ascii: "-") { position += 1 }
        guard isDigit(position) else { throw JSONParseError(.invalidNumber, at: position) }
        if base[position] == UInt8(ascii: "0") {
            position += 1
            if isDigit(position) { throw JSONParseError(.invalidNumber, at: position) }
        } else {
            while isDigit(position) { position += 1 }
        }
        if position < count && base[position] == UInt8(ascii: ".") {
            position += 1
            guard isDigit(position) else { throw JSONParseError(.invalidNumber, at: position) }
            while isDigit(position) { position += 1 }
        }
        if position < count && (base[position] | 0x20) == UInt8(ascii: "e") {
            position += 1
            if position < count && (base[position] == UInt8(ascii: "+") || base[position] == UInt8(ascii: "-")) {
                position += 1
            }
            guard isDigit(position) else { throw JSONParseError(.invalidNumber, at: position) }
            while isDigit(position) { position += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: position - start), as: UTF8.self)
        return JSONNumber(validatedLiteral: text)
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        position += 1
        let start = position
        var sawNonASCII = false
        while position < count {
            let byte = base[position]
            if byte == UInt8(ascii: "\"") {
                let bytes = UnsafeBufferPointer(start: base + start, count: position - start)
                position += 1
                return try Self.makeString(bytes, nonASCII: sawNonASCII, offset: start)
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start, nonASCII: sawNonASCII) }
            if byte < 0x20 { throw JSONParseError(.controlCharacterInString, at: position) }
            sawNonASCII = sawNonASCII || byte >= 0x80
            position += 1
        }
        throw JSONParseError(.unexpectedEnd, at: position)
    }

    @inline(__always)
    private static func makeString(
        _ bytes: UnsafeBufferPointer<UInt8>, nonASCII: Bool, offset: Int
    ) throws(JSONParseError) -> String {
        if !nonASCII { return String(decoding: bytes, as: UTF8.self) }
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        throw JSONParseError(.invalidUTF8, at: offset + (UTF8Validation.firstInvalidOffset(bytes) ?? 0))
    }

    /// The slow path for a string with escapes: decode into a scratch buffer.
    private mutating func parseEscapedString(from start: Int, nonASCII: Bool) throws(JSONParseError) -> String {
        var scratch: [UInt8] = []
        scratch.reserveCapacity(position - start + 16)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + start, count: position - start))
        var sawNonASCII = nonASCII
        while position < count {
            let byte = base[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard sawNonASCII else { return String(decoding: scratch, as: UTF8.self) }
                if let s = String(validating: scratch, as: UTF8.self) { return s }
                // Escapes are ASCII, so the first invalid octet of the raw text is the one to report.
                let raw = UnsafeBufferPointer(start: base + start, count: position - 1 - start)
                throw JSONParseError(.invalidUTF8, at: start + (UTF8Validation.firstInvalidOffset(raw) ?? 0))
            case UInt8(ascii: "\\"):
                try appendEscape(into: &scratch, nonASCII: &sawNonASCII)
            case 0x00..<0x20:
                throw JSONParseError(.controlCharacterInString, at: position)
            default:
                sawNonASCII = sawNonASCII || byte >= 0x80
                scratch.append(byte)
                position += 1
            }
        }
        throw JSONParseError(.unexpectedEnd, at: position)
    }

    private mutating func appendEscape(into scratch: inout [UInt8], nonASCII: inout Bool) throws(JSONParseError) {
        let escapeStart = position
        position += 1
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        let code = base[position]
        position += 1
        switch code {
        case UInt8(ascii: "\""): scratch.append(0x22)
        case UInt8(ascii: "\\"): scratch.append(0x5C)
        case UInt8(ascii: "/"): scratch.append(0x2F)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try readHex4()
            var scalarValue = UInt32(unit)
            if (0xD800...0xDBFF).contains(unit) {
                guard position + 1 < count, base[position] == UInt8(ascii: "\\"), base[position + 1] == UInt8(ascii: "u")
                else { throw JSONParseError(.loneSurrogate, at: escapeStart) }
                position += 2
                let low = try readHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONParseError(.loneSurrogate, at: escapeStart) }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(unit) {
                throw JSONParseError(.loneSurrogate, at: escapeStart)
            }
            guard let scalar = Unicode.Scalar(scalarValue) else { throw JSONParseError(.loneSurrogate, at: escapeStart) }
            if scalarValue >= 0x80 { nonASCII = true }
            UTF8.encode(scalar) { scratch.append($0) }
        default:
            throw JSONParseError(.invalidEscape, at: escapeStart)
        }
    }

    private mutating func readHex4() throws(JSONParseError) -> UInt16 {
        guard position + 4 <= count else { throw JSONParseError(.unexpectedEnd, at: count) }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let c = base[position]
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: throw JSONParseError(.invalidEscape, at: position)
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }
}

extension String {
    /// Equality of the exact Unicode scalar sequences (Swift's `==` treats canonically equivalent
    /// strings as equal, so `"é"` would equal `"e\u{301}"`; the protocol says they differ).
    @inlinable
    public func exactlyEquals(_ other: String) -> Bool {
        utf8.count == other.utf8.count && utf8.elementsEqual(other.utf8)
    }

    /// Unsigned comparison of UTF-8 octets: the manifest and row-body order of the protocol.
    @inlinable
    public func utf8Precedes(_ other: String) -> Bool {
        utf8.lexicographicallyPrecedes(other.utf8)
    }

    /// Unsigned comparison of UTF-16 code units: the RFC 8785 member order.
    @inlinable
    public func utf16Precedes(_ other: String) -> Bool {
        utf16.lexicographicallyPrecedes(other.utf16)
    }
}
