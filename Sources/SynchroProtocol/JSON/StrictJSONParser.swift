/// A strict RFC 8259 parser over UTF-8 octets for protocol bytes.
///
/// Unlike Foundation's parser it rejects duplicate member names (compared after unescaping, by
/// exact Unicode scalars), invalid UTF-8, lone surrogate escapes, a byte order mark and trailing
/// content, keeps every number's exact text, and enforces size and depth limits. Every failure
/// is a ``JSONParseError`` with the rule and byte offset. See `spec/wire-protocol.md` §1.4, §2.1.
public struct StrictJSONParser: Sendable {
    /// The size and depth bounds enforced on every document.
    public var limits: JSONLimits

    /// A parser enforcing `limits` (by default the protocol's 64 MiB and depth 128).
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
        var text = text
        return try text.withUTF8 { parse(buffer: $0) }.get()
    }

    private func parse(buffer: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> {
        guard buffer.count <= limits.maxBytes else {
            return .failure(JSONParseError(.sizeLimitExceeded, at: limits.maxBytes))
        }
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            return .failure(JSONParseError(.unexpectedEnd, at: 0))
        }
        var reader = JSONByteReader(
            base: base, count: buffer.count, maxDepth: limits.maxDepth, maxValues: limits.maxValues)
        do throws(JSONParseError) {
            let value = try reader.parseDocument()
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}

/// The parser's cursor over one document.
///
/// It owns scratch stacks shared by every container of the document: elements and members
/// collect there and each finished container moves them into one exactly-sized array, so no
/// array is regrown per container. Noncopyable because it owns that memory.
struct JSONByteReader: ~Copyable {
    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    /// Values the document may still hold (``JSONLimits/maxValues``).
    var valuesLeft: Int
    var position = 0
    var depth = 0
    /// Elements of the arrays being parsed, innermost on top.
    private var elements = ScratchStack<JSONValue>()
    /// Members of the objects being parsed, innermost on top.
    private var members = ScratchStack<JSONMember>()
    /// Where the octets of each pending member name are, for duplicate checks without `String`.
    private var keys = ScratchStack<KeyBytes>()
    /// Unescaped octets of strings that contained escapes; member names stay until their object ends.
    private var decoded = ScratchStack<UInt8>()
    /// Long member names seen before: row-heavy documents repeat them, and sharing one `String`
    /// saves an allocation per occurrence.
    private var keyCache = KeyCache()

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int, maxValues: Int) {
        self.base = base
        self.count = count
        self.maxDepth = maxDepth
        valuesLeft = maxValues
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
            case 0x20, 0x09, 0x0A, 0x0D: position &+= 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        guard valuesLeft > 0 else { throw JSONParseError(.valueLimitExceeded, at: position) }
        valuesLeft &-= 1
        switch base[position] {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        // Not a value in JSON, but clearly meant as a number: name the number rule.
        case UInt8(ascii: "+"), UInt8(ascii: "."): throw JSONParseError(.invalidNumber, at: position)
        default: throw JSONParseError(.unexpectedByte, at: position)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let text = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for expected in text {
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            guard base[position] == expected else { throw JSONParseError(.unexpectedByte, at: position) }
            position &+= 1
        }
    }

    @inline(__always)
    private mutating func enterContainer() throws(JSONParseError) {
        depth &+= 1
        if depth > maxDepth { throw JSONParseError(.depthLimitExceeded, at: position) }
    }

    /// Requires `byte` at the cursor (after whitespace) and steps over it.
    @inline(__always)
    private mutating func expect(_ byte: UInt8) throws(JSONParseError) {
        skipWhitespace()
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        guard base[position] == byte else { throw JSONParseError(.unexpectedByte, at: position) }
        position &+= 1
    }

    /// After an element or member: true at `,`, false at the container's `closer`; both consumed.
    @inline(__always)
    private mutating func continues(closer: UInt8) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        let byte = base[position]
        position &+= 1
        if byte == UInt8(ascii: ",") { return true }
        if byte == closer { return false }
        position &-= 1
        throw JSONParseError(.unexpectedByte, at: position)
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        position &+= 1
        skipWhitespace()
        if position < count && base[position] == UInt8(ascii: "]") {
            position &+= 1
            depth &-= 1
            return .array([])
        }
        let first = elements.count
        repeat {
            skipWhitespace()
            let element = try parseValue()
            elements.push(element)
        } while try continues(closer: UInt8(ascii: "]"))
        depth &-= 1
        return .array(elements.popArray(from: first))
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        position &+= 1
        skipWhitespace()
        if position < count && base[position] == UInt8(ascii: "}") {
            position &+= 1
            depth &-= 1
            return .object(JSONObject([]))
        }
        let firstMember = members.count
        let firstKey = keys.count
        let decodedMark = decoded.count
        var index = KeyIndex()
        repeat {
            skipWhitespace()
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            guard base[position] == UInt8(ascii: "\"") else { throw JSONParseError(.unexpectedByte, at: position) }
            let keyOffset = position
            let (key, bytes) = try parseMemberName()
            if isDuplicate(bytes, firstKey: firstKey, index: &index) {
                throw JSONParseError(.duplicateMember, at: keyOffset)
            }
            keys.push(bytes)
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let value = try parseValue()
            members.push(JSONMember(key, value))
        } while try continues(closer: UInt8(ascii: "}"))
        depth &-= 1
        keys.truncate(to: firstKey)
        decoded.truncate(to: decodedMark)
        return .object(JSONObject(members.popArray(from: firstMember)))
    }

    // MARK: Member names and duplicates

    /// Where a member name's octets are: in the document, or (when it had escapes) in `decoded`.
    struct KeyBytes {
        var offset: Int
        var length: Int
        var isDecoded: Bool
    }

    @inline(__always)
    private func pointer(to key: KeyBytes) -> UnsafePointer<UInt8> {
        key.isDecoded ? UnsafePointer(decoded.storage + key.offset) : base + key.offset
    }

    @inline(__always)
    private func sameBytes(_ a: KeyBytes, _ b: KeyBytes) -> Bool {
        a.length == b.length && ByteRun.equal(pointer(to: a), pointer(to: b), count: a.length)
    }

    /// Up to this many members a linear scan per name is cheaper than hashing.
    private static let linearDuplicateScanLimit = 16

    /// True when `key` repeats a name of the object whose names start at `firstKey`.
    @inline(__always)
    private func isDuplicate(_ key: KeyBytes, firstKey: Int, index: inout KeyIndex) -> Bool {
        let known = keys.count &- firstKey
        if known <= Self.linearDuplicateScanLimit {
            var i = firstKey
            while i < keys.count {
                if sameBytes(keys.storage[i], key) { return true }
                i &+= 1
            }
            return false
        }
        return isDuplicateHashed(key, firstKey: firstKey, index: &index)
    }

    /// Hash lookup for objects too large for linear scans; `key` (pushed next, at `keys.count`)
    /// joins the index when it is new.
    private func isDuplicateHashed(_ key: KeyBytes, firstKey: Int, index: inout KeyIndex) -> Bool {
        let newCount = keys.count &- firstKey &+ 1
        if newCount * 2 > index.slots.count {
            var capacity = Swift.max(index.slots.count * 2, Self.linearDuplicateScanLimit * 4)
            while newCount * 2 > capacity { capacity *= 2 }
            index = KeyIndex(capacity: capacity)
            for i in firstKey..<keys.count { _ = insert(i, into: &index) }
        }
        return !insert(keys.count, key: key, into: &index)
    }

    /// Adds the name at `keyIndex` unless an equal name is present; true when added.
    private func insert(_ keyIndex: Int, key: KeyBytes? = nil, into index: inout KeyIndex) -> Bool {
        let key = key ?? keys.storage[keyIndex]
        let mask = index.slots.count &- 1
        var slot = ByteComparison.hash(pointer(to: key), count: key.length) & mask
        while true {
            let occupant = index.slots[slot]
            if occupant < 0 { break }
            if sameBytes(keys.storage[occupant], key) { return false }
            slot = (slot &+ 1) & mask
        }
        index.slots[slot] = keyIndex
        return true
    }

    /// Open-addressing set of indices into `keys` for one large object; empty until needed.
    struct KeyIndex {
        var slots: [Int] = []

        init() {}

        /// `capacity` must be a power of two.
        init(capacity: Int) {
            slots = Array(repeating: -1, count: capacity)
        }
    }

    /// A member name as a `String` plus where its exact octets are for duplicate checks.
    private mutating func parseMemberName() throws(JSONParseError) -> (String, KeyBytes) {
        position &+= 1
        let start = position
        let nonASCII = skipPlainBytes()
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        switch base[position] {
        case UInt8(ascii: "\""):
            let length = position &- start
            position &+= 1
            let bytes = KeyBytes(offset: start, length: length, isDecoded: false)
            let text = UnsafeBufferPointer(start: base + start, count: length)
            if length > KeyCache.minimumLength && count >= KeyCache.minimumDocumentSize {
                let key = try keyCache.string(for: text) { (octets) throws(JSONParseError) -> String in
                    try Self.makeString(octets, nonASCII: nonASCII, offset: start)
                }
                return (key, bytes)
            }
            return (try Self.makeString(text, nonASCII: nonASCII, offset: start), bytes)
        case UInt8(ascii: "\\"):
            let mark = decoded.count
            let key = try parseEscapedString(from: start, nonASCII: nonASCII)
            return (key, KeyBytes(offset: mark, length: decoded.count &- mark, isDecoded: true))
        default:
            throw JSONParseError(.controlCharacterInString, at: position)
        }
    }

    // MARK: Strings

    private mutating func parseString() throws(JSONParseError) -> String {
        position &+= 1
        let start = position
        let nonASCII = skipPlainBytes()
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        switch base[position] {
        case UInt8(ascii: "\""):
            let text = UnsafeBufferPointer(start: base + start, count: position &- start)
            position &+= 1
            return try Self.makeString(text, nonASCII: nonASCII, offset: start)
        case UInt8(ascii: "\\"):
            let mark = decoded.count
            let value = try parseEscapedString(from: start, nonASCII: nonASCII)
            decoded.truncate(to: mark)
            return value
        default:
            throw JSONParseError(.controlCharacterInString, at: position)
        }
    }

    /// Steps over string content up to the next `"`, `\`, control character or the end of the
    /// document, eight octets at a time where possible; returns whether an octet ≥ 0x80 was seen.
    @inline(__always)
    private mutating func skipPlainBytes() -> Bool {
        var highBits: UInt64 = 0
        let raw = UnsafeRawPointer(base)
        while position &+ 8 <= count {
            let word = raw.loadUnaligned(fromByteOffset: position, as: UInt64.self)
            if SWAR.hasStringDelimiter(word) { break }
            highBits |= word
            position &+= 8
        }
        var nonASCII = highBits & SWAR.highBits != 0
        while position < count {
            let byte = base[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            if byte >= 0x80 { nonASCII = true }
            position &+= 1
        }
        return nonASCII
    }

    @inline(__always)
    private static func makeString(
        _ bytes: UnsafeBufferPointer<UInt8>, nonASCII: Bool, offset: Int
    ) throws(JSONParseError) -> String {
        if !nonASCII { return String(decoding: bytes, as: UTF8.self) }
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        throw JSONParseError(.invalidUTF8, at: offset + (UTF8Validation.firstInvalidOffset(bytes) ?? 0))
    }

    /// The slow path for a string with escapes; the cursor is on the first `\`. The unescaped
    /// octets are appended to `decoded` (the caller decides how long they stay there).
    private mutating func parseEscapedString(from start: Int, nonASCII: Bool) throws(JSONParseError) -> String {
        let mark = decoded.count
        decoded.append(base + start, count: position &- start)
        var sawNonASCII = nonASCII
        while true {
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            let byte = base[position]
            if byte == UInt8(ascii: "\"") { break }
            guard byte == UInt8(ascii: "\\") else { throw JSONParseError(.controlCharacterInString, at: position) }
            try appendEscape(nonASCII: &sawNonASCII)
            let runStart = position
            if skipPlainBytes() { sawNonASCII = true }
            decoded.append(base + runStart, count: position &- runStart)
        }
        position &+= 1
        let text = UnsafeBufferPointer(start: UnsafePointer(decoded.storage + mark), count: decoded.count &- mark)
        guard sawNonASCII else { return String(decoding: text, as: UTF8.self) }
        if let s = String(validating: text, as: UTF8.self) { return s }
        // Escapes are ASCII and decode to whole sequences, so the raw text breaks UTF-8 exactly
        // where the decoded text does; report the first invalid octet of the raw text.
        let raw = UnsafeBufferPointer(start: base + start, count: position &- 1 &- start)
        throw JSONParseError(.invalidUTF8, at: start + (UTF8Validation.firstInvalidOffset(raw) ?? 0))
    }

    private mutating func appendEscape(nonASCII: inout Bool) throws(JSONParseError) {
        let escapeStart = position
        position &+= 1
        guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
        let code = base[position]
        position &+= 1
        switch code {
        case UInt8(ascii: "\""): decoded.push(0x22)
        case UInt8(ascii: "\\"): decoded.push(0x5C)
        case UInt8(ascii: "/"): decoded.push(0x2F)
        case UInt8(ascii: "b"): decoded.push(0x08)
        case UInt8(ascii: "f"): decoded.push(0x0C)
        case UInt8(ascii: "n"): decoded.push(0x0A)
        case UInt8(ascii: "r"): decoded.push(0x0D)
        case UInt8(ascii: "t"): decoded.push(0x09)
        case UInt8(ascii: "u"):
            let unit = try readHex4()
            var scalarValue = UInt32(unit)
            if (0xD800...0xDBFF).contains(unit) {
                guard position + 1 < count, base[position] == UInt8(ascii: "\\"),
                      base[position + 1] == UInt8(ascii: "u")
                else { throw JSONParseError(.loneSurrogate, at: escapeStart) }
                position &+= 2
                let low = try readHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONParseError(.loneSurrogate, at: escapeStart) }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(unit) {
                throw JSONParseError(.loneSurrogate, at: escapeStart)
            }
            // Surrogates were excluded above, so every remaining value is a scalar.
            let scalar = Unicode.Scalar(scalarValue).unsafelyUnwrapped
            if scalarValue >= 0x80 { nonASCII = true }
            for unit in UTF8.encode(scalar).unsafelyUnwrapped { decoded.push(unit) }
        default:
            throw JSONParseError(.invalidEscape, at: escapeStart)
        }
    }

    /// Four hex digits; a non-hex octet is an invalid escape at that octet.
    private mutating func readHex4() throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard position < count else { throw JSONParseError(.unexpectedEnd, at: position) }
            let c = base[position]
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c &- UInt8(ascii: "A") &+ 10
            default: throw JSONParseError(.invalidEscape, at: position)
            }
            value = value << 4 | UInt16(digit)
            position &+= 1
        }
        return value
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = position
        if base[position] == UInt8(ascii: "-") { position &+= 1 }
        guard isDigit(at: position) else { throw JSONParseError(.invalidNumber, at: position) }
        if base[position] == UInt8(ascii: "0") {
            position &+= 1
            if isDigit(at: position) { throw JSONParseError(.invalidNumber, at: position) }
        } else {
            skipDigits()
        }
        if position < count && base[position] == UInt8(ascii: ".") {
            position &+= 1
            guard isDigit(at: position) else { throw JSONParseError(.invalidNumber, at: position) }
            skipDigits()
        }
        if position < count && (base[position] | 0x20) == UInt8(ascii: "e") {
            position &+= 1
            if position < count && (base[position] == UInt8(ascii: "+") || base[position] == UInt8(ascii: "-")) {
                position &+= 1
            }
            guard isDigit(at: position) else { throw JSONParseError(.invalidNumber, at: position) }
            skipDigits()
        }
        // The grammar above admits ASCII only, so decoding cannot repair anything.
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: position &- start), as: UTF8.self)
        return JSONNumber(validatedLiteral: text)
    }

    @inline(__always)
    private func isDigit(at offset: Int) -> Bool {
        offset < count && base[offset] &- 0x30 < 10
    }

    @inline(__always)
    private mutating func skipDigits() {
        while isDigit(at: position) { position &+= 1 }
    }
}

/// A growable stack over manually managed storage, so that a finished container can move its
/// elements out in one step instead of copying and releasing them. Nothing is allocated until the
/// first push: a document of scalars, or one without escapes, never pays for a stack it does not use.
fileprivate struct ScratchStack<Element>: ~Copyable {
    private var base: UnsafeMutablePointer<Element>?
    private(set) var count = 0
    private var capacity = 0

    init() {}

    deinit {
        if let base {
            base.deinitialize(count: count)
            base.deallocate()
        }
    }

    /// The elements' storage; valid only while nothing is pushed or appended.
    @inline(__always)
    var storage: UnsafeMutablePointer<Element> { base.unsafelyUnwrapped }

    @inline(__always)
    mutating func push(_ element: consuming Element) {
        if count == capacity { grow(toHold: count &+ 1) }
        (storage + count).initialize(to: element)
        count &+= 1
    }

    /// Copies `length` elements from `source` onto the stack.
    @inline(__always)
    mutating func append(_ source: UnsafePointer<Element>, count length: Int) {
        guard length > 0 else { return }
        if count &+ length > capacity { grow(toHold: count &+ length) }
        (storage + count).initialize(from: source, count: length)
        count &+= length
    }

    /// Drops everything above the first `newCount` elements.
    @inline(__always)
    mutating func truncate(to newCount: Int) {
        guard newCount < count else { return }
        (storage + newCount).deinitialize(count: count &- newCount)
        count = newCount
    }

    /// Moves the elements from index `start` up into a new array and drops them from the stack.
    mutating func popArray(from start: Int) -> [Element] {
        let length = count &- start
        guard length > 0 else { return [] }
        let source = storage + start
        let array = [Element](unsafeUninitializedCapacity: length) { buffer, initialized in
            buffer.baseAddress.unsafelyUnwrapped.moveInitialize(from: source, count: length)
            initialized = length
        }
        count = start
        return array
    }

    private mutating func grow(toHold needed: Int) {
        var newCapacity = Swift.max(capacity * 2, 16)
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        if let base {
            newBase.moveInitialize(from: base, count: count)
            base.deallocate()
        }
        base = newBase
        capacity = newCapacity
    }
}

/// A direct-mapped cache from member-name octets to the `String` made for them earlier in the
/// same document. Only names too long for Swift's inline small-string form are worth caching.
fileprivate struct KeyCache {
    /// Names of at most this many octets are stored inline by `String` and need no allocation.
    static let minimumLength = 15
    /// Smaller documents repeat too few names to repay setting up the cache.
    static let minimumDocumentSize = 16 * 1024
    private static let slotCount = 256

    private struct Entry {
        var bytes: UnsafeBufferPointer<UInt8>
        var string: String
    }

    private var entries: [Entry?] = []

    /// The cached string for `bytes` (which must outlive the cache), or a new one from `make`.
    @inline(__always)
    mutating func string(
        for bytes: UnsafeBufferPointer<UInt8>,
        make: (UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> String
    ) throws(JSONParseError) -> String {
        if entries.isEmpty { entries = Array(repeating: nil, count: Self.slotCount) }
        let slot = ByteComparison.hash(bytes.baseAddress!, count: bytes.count) & (Self.slotCount - 1)
        if let entry = entries[slot], entry.bytes.count == bytes.count,
           ByteRun.equal(entry.bytes.baseAddress!, bytes.baseAddress!, count: bytes.count) {
            return entry.string
        }
        let string = try make(bytes)
        entries[slot] = Entry(bytes: bytes, string: string)
        return string
    }
}

/// Word-at-a-time helpers over raw octets.
fileprivate enum ByteComparison {
    /// A fast non-cryptographic hash (FNV-1a over words, then mixed) for in-document tables.
    @inline(__always)
    static func hash(_ bytes: UnsafePointer<UInt8>, count: Int) -> Int {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(truncatingIfNeeded: count)
        let raw = UnsafeRawPointer(bytes)
        var i = 0
        while i &+ 8 <= count {
            h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x0000_0100_0000_01B3
            i &+= 8
        }
        while i < count {
            h = (h ^ UInt64(bytes[i])) &* 0x0000_0100_0000_01B3
            i &+= 1
        }
        h ^= h >> 29
        h &*= 0xBF58_476D_1CE4_E5B9
        h ^= h >> 32
        return Int(truncatingIfNeeded: h & 0x7FFF_FFFF_FFFF_FFFF)
    }
}

/// SIMD-within-a-register tests on eight octets at once.
fileprivate enum SWAR {
    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// True when some octet is `"`, `\` or below 0x20. (Borrows can only flag octets above a
    /// genuine match, so there are no false positives in a word without one.)
    @inline(__always)
    static func hasStringDelimiter(_ word: UInt64) -> Bool {
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let zeroQuote = (quote &- ones) & ~quote
        let zeroBackslash = (backslash &- ones) & ~backslash
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & highBits != 0
    }
}

extension String {
    /// Equality of the exact Unicode scalar sequences (Swift's `==` treats canonically equivalent
    /// strings as equal, so `"é"` would equal `"e\u{301}"`; the protocol says they differ).
    public func exactlyEquals(_ other: String) -> Bool {
        var a = self, b = other
        guard a.utf8.count == b.utf8.count else { return false }
        return a.withUTF8 { x in
            b.withUTF8 { y in
                x.count == 0 || ByteRun.equal(x.baseAddress!, y.baseAddress!, count: x.count)
            }
        }
    }

    /// Unsigned comparison of UTF-8 octets: the manifest and row-body order of the protocol.
    public func utf8Precedes(_ other: String) -> Bool {
        var a = self, b = other
        return a.withUTF8 { x in b.withUTF8 { y in x.lexicographicallyPrecedes(y) } }
    }

    /// Unsigned comparison of UTF-16 code units: the RFC 8785 member order.
    ///
    /// Computed on the UTF-8 octets: both orders agree except that a character above U+FFFF
    /// (a surrogate pair, D800–DFFF) sorts before U+E000–U+FFFF in UTF-16 but after it in UTF-8.
    public func utf16Precedes(_ other: String) -> Bool {
        var a = self, b = other
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let shared = Swift.min(x.count, y.count)
                var i = 0
                while i < shared && x[i] == y[i] { i &+= 1 }
                if i == shared { return x.count < y.count }
                let p = x[i], q = y[i]
                // Equal prefixes end on the same character boundary, so p and q are either both
                // continuation octets (< 0xC0) or both lead octets; only leads EE/EF vs F0–F4 flip.
                if p >= 0xEE && q >= 0xEE && (p >= 0xF0) != (q >= 0xF0) { return p >= 0xF0 }
                return p < q
            }
        }
    }
}
