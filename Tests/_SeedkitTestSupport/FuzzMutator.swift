import SynchroProtocol

/// SplitMix64: a small deterministic generator, so a fuzz or crash run is reproduced by its printed seed
/// (the standard library's generator is seeded per process).
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    /// The generator of step `index` of a run seeded with `seed`: each step draws from its own stream, so a
    /// failing step is reproduced without replaying the steps before it.
    public init(seed: UInt64, step index: Int) {
        var mixer = SeededRandom(seed: seed ^ (UInt64(truncatingIfNeeded: index) &* 0xD1B5_4A32_D192_ED03))
        state = mixer.next()
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `0..<count` (0 when `count` ≤ 0).
    public mutating func below(_ count: Int) -> Int {
        count <= 0 ? 0 : Int(next(upperBound: UInt64(count)))
    }

    /// A uniform integer in `range`.
    public mutating func inRange(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.count)
    }

    /// True with probability `probability`.
    public mutating func chance(_ probability: Double) -> Bool {
        Double(next() >> 11) / Double(1 << 53) < probability
    }

    /// A uniformly chosen element (nil for an empty collection).
    public mutating func pick<C: RandomAccessCollection>(_ items: C) -> C.Element? where C.Index == Int {
        items.isEmpty ? nil : items[items.startIndex + below(items.count)]
    }
}

/// A seeded mutation engine over octets: bit flips, interesting bytes, insertion, deletion, duplication,
/// splicing with another corpus input, truncation, and — when the input parses as JSON — structure-aware edits
/// (members removed, duplicated or renamed, values replaced by other types or extreme numbers, arrays reordered,
/// deep nesting) written back as JSON text.
public struct FuzzMutator: Sendable {
    /// The ways an input is changed; a mutation stacks one to four of them.
    public enum Strategy: String, Sendable, CaseIterable {
        case bitFlip = "bit_flip"
        case interestingByte = "interesting_byte"
        case insertBytes = "insert_bytes"
        case deleteRange = "delete_range"
        case duplicateRange = "duplicate_range"
        case splice
        case truncate
        case jsonStructure = "json_structure"
    }

    /// Inputs other inputs are spliced with.
    public let corpus: [[UInt8]]
    /// Whether the JSON strategy is tried (it needs the input to parse).
    public let structureAware: Bool

    public init(corpus: [[UInt8]], structureAware: Bool = true) {
        self.corpus = corpus
        self.structureAware = structureAware
    }

    /// `input` changed by one to four stacked strategies, and the strategies used.
    public func mutate(_ input: [UInt8], using random: inout SeededRandom) -> (bytes: [UInt8], strategies: [Strategy]) {
        var bytes = input
        var used: [Strategy] = []
        // Half of the inputs stay well-formed JSON, so that the validators behind the parser are reached.
        if structureAware && random.chance(0.5), (try? StrictJSONParser().parse(input)) != nil {
            for _ in 0..<random.inRange(1...3) {
                bytes = apply(.jsonStructure, to: bytes, using: &random)
                used.append(.jsonStructure)
            }
            return (bytes, used)
        }
        for _ in 0..<random.inRange(1...4) {
            var strategy = random.pick(Strategy.allCases) ?? .bitFlip
            if strategy == .jsonStructure && !structureAware { strategy = .bitFlip }
            bytes = apply(strategy, to: bytes, using: &random)
            used.append(strategy)
        }
        return (bytes, used)
    }

    /// One strategy applied once.
    public func apply(_ strategy: Strategy, to input: [UInt8], using random: inout SeededRandom) -> [UInt8] {
        var bytes = input
        switch strategy {
        case .bitFlip:
            guard !bytes.isEmpty else { return [UInt8(truncatingIfNeeded: random.next())] }
            for _ in 0..<random.inRange(1...3) {
                bytes[random.below(bytes.count)] ^= 1 << UInt8(random.below(8))
            }
        case .interestingByte:
            guard !bytes.isEmpty else { return Self.interestingBytes }
            bytes[random.below(bytes.count)] = random.pick(Self.interestingBytes) ?? 0
        case .insertBytes:
            let position = random.below(bytes.count + 1)
            let inserted: [UInt8] =
                random.chance(0.5)
                ? (0..<random.inRange(1...8)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                : Array((random.pick(Self.interestingTokens) ?? "null").utf8)
            bytes.insert(contentsOf: inserted, at: position)
        case .deleteRange:
            guard !bytes.isEmpty else { return bytes }
            let start = random.below(bytes.count)
            let length = min(bytes.count - start, random.inRange(1...max(1, min(64, bytes.count / 4 + 1))))
            bytes.removeSubrange(start..<(start + length))
        case .duplicateRange:
            guard !bytes.isEmpty else { return bytes }
            let start = random.below(bytes.count)
            let length = min(bytes.count - start, random.inRange(1...64))
            let chunk = Array(bytes[start..<(start + length)])
            bytes.insert(contentsOf: chunk, at: random.below(bytes.count + 1))
        case .splice:
            guard let other = random.pick(corpus), !other.isEmpty, !bytes.isEmpty else { return bytes }
            let cut = random.below(bytes.count + 1)
            let from = random.below(other.count)
            bytes = Array(bytes[..<cut]) + Array(other[from...])
        case .truncate:
            guard !bytes.isEmpty else { return bytes }
            bytes = Array(bytes[..<random.below(bytes.count)])
        case .jsonStructure:
            guard let value = try? StrictJSONParser().parse(bytes) else {
                return apply(.insertBytes, to: bytes, using: &random)
            }
            let mutated = Self.mutateStructure(value, using: &random)
            bytes = FuzzJSONText.bytes(mutated, spacing: random.chance(0.1))
        }
        return bytes
    }

    /// Octets that often sit on a boundary of a parser's or decoder's logic.
    static let interestingBytes: [UInt8] = [
        0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC0, 0xC1, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xBF, 0xBB,
        UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "["),
        UInt8(ascii: "]"), UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "."), UInt8(ascii: "-"),
        UInt8(ascii: "e"), UInt8(ascii: "0"), UInt8(ascii: "9"), UInt8(ascii: " "), UInt8(ascii: "\n"),
    ]

    /// JSON fragments inserted as text.
    static let interestingTokens = [
        "null", "true", "false", "0", "-0", "1e999999", "-1e-999999", "18446744073709551616", "1.0", "0.5e+1",
        "\"\"", "\"\\u0000\"", "\"\\ud800\"", "\"\\udc00\\ud800\"", "\"\\uD83D\\uDE00\"", "{}", "[]",
        "[[[[[[[[", "]]]]", "{\"a\":1,\"a\":2}", "\u{FEFF}", "\\", "\"\\x\"", "01", "+1", ".5", "1.", "NaN",
    ]

    /// `value` with one structural edit at a random node.
    static func mutateStructure(_ value: JSONValue, using random: inout SeededRandom) -> JSONValue {
        var nodes: [[PathStep]] = []
        collectPaths(value, prefix: [], into: &nodes, limit: 4096)
        let path = random.pick(nodes) ?? []
        let donors = nodes.isEmpty ? [value] : (0..<3).map { _ in node(value, at: random.pick(nodes) ?? []) }
        return replacing(value, at: path[...]) { target in edit(target, donors: donors, using: &random) }
    }

    enum PathStep {
        case member(Int)
        case element(Int)
    }

    private static func collectPaths(
        _ value: JSONValue, prefix: [PathStep], into paths: inout [[PathStep]], limit: Int
    ) {
        guard paths.count < limit else { return }
        paths.append(prefix)
        switch value {
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                collectPaths(element, prefix: prefix + [.element(index)], into: &paths, limit: limit)
            }
        case .object(let object):
            for (index, member) in object.members.enumerated() {
                collectPaths(member.value, prefix: prefix + [.member(index)], into: &paths, limit: limit)
            }
        default:
            break
        }
    }

    private static func node(_ value: JSONValue, at path: [PathStep]) -> JSONValue {
        var current = value
        for step in path {
            switch (step, current) {
            case (.element(let index), .array(let elements)) where index < elements.count: current = elements[index]
            case (.member(let index), .object(let object)) where index < object.count:
                current = object.members[index].value
            default: return current
            }
        }
        return current
    }

    private static func replacing(
        _ value: JSONValue, at path: ArraySlice<PathStep>, _ change: (JSONValue) -> JSONValue
    ) -> JSONValue {
        guard let step = path.first else { return change(value) }
        switch (step, value) {
        case (.element(let index), .array(var elements)) where index < elements.count:
            elements[index] = replacing(elements[index], at: path.dropFirst(), change)
            return .array(elements)
        case (.member(let index), .object(let object)) where index < object.count:
            var members = object.members
            let changed = replacing(members[index].value, at: path.dropFirst(), change)
            members[index] = JSONMember(members[index].key, changed)
            return .object(JSONObject(members))
        default:
            return change(value)
        }
    }

    private static func edit(_ value: JSONValue, donors: [JSONValue], using random: inout SeededRandom) -> JSONValue {
        switch value {
        case .object(let object) where !object.members.isEmpty && random.chance(0.6):
            var members = object.members
            let index = random.below(members.count)
            switch random.below(5) {
            case 0: members.remove(at: index)
            case 1: members.insert(JSONMember(members[index].key, replacementValue(using: &random, donors: donors)),
                                   at: random.below(members.count + 1))
            case 2: members[index] = JSONMember(
                random.pick(renamedKeys(members[index].key)) ?? "x", members[index].value)
            case 3: members.append(JSONMember("unexpected_member", replacementValue(using: &random, donors: donors)))
            default: members.shuffle(using: &random)
            }
            return .object(JSONObject(members))
        case .array(let elements) where !elements.isEmpty && random.chance(0.6):
            var elements = elements
            let index = random.below(elements.count)
            switch random.below(4) {
            case 0: elements.remove(at: index)
            case 1: elements.insert(elements[index], at: index)
            case 2: elements.swapAt(index, random.below(elements.count))
            default: elements.append(replacementValue(using: &random, donors: donors))
            }
            return .array(elements)
        case .number(let number) where random.chance(0.5):
            return .number(JSONNumber(literal: random.pick(extremeNumbers(near: number)) ?? "0") ?? number)
        case .string(let text) where random.chance(0.5):
            return .string(random.pick(stringVariants(of: text)) ?? "")
        default:
            return replacementValue(using: &random, donors: donors)
        }
    }

    private static func replacementValue(using random: inout SeededRandom, donors: [JSONValue]) -> JSONValue {
        switch random.below(9) {
        case 0: return .null
        case 1: return .bool(random.chance(0.5))
        case 2: return .number(JSONNumber(literal: random.pick(extremeNumbers(near: nil)) ?? "0") ?? JSONNumber(0))
        case 3: return .string(random.pick(stringVariants(of: "")) ?? "")
        case 4: return .array([])
        case 5: return .object(JSONObject([]))
        case 6:
            var nested = JSONValue.null
            for _ in 0..<random.inRange(1...300) { nested = .array([nested]) }
            return nested
        default: return random.pick(donors) ?? .null
        }
    }

    private static func extremeNumbers(near number: JSONNumber?) -> [String] {
        var numbers = [
            "0", "-0", "1", "-1", "2147483647", "2147483648", "-2147483649", "9007199254740991", "9007199254740993",
            "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
            "1e308", "1e309", "-1e309", "5e-324", "1e-400", "0.1", "1.5", "1E2", "100000000000000000000000000000",
        ]
        if let number {
            numbers.append(number.literal + "0")
            numbers.append(number.literal + ".0")
            numbers.append("-" + number.literal)
            numbers.append(number.literal + "e1")
        }
        return numbers
    }

    private static func stringVariants(of text: String) -> [String] {
        [
            "", " ", text + text, String(text.reversed()), String(text.dropLast()), text.uppercased(),
            String(repeating: "a", count: 4096), "\u{0}", "\u{1F}", "\u{7F}", "é", "e\u{301}",
            noncharacter(0xFFFF), noncharacter(0xFDD0),
            "\u{1F600}", "sp1.", "sc1.a.b", "v-1", "user:alice", "catalog", "../../etc/passwd", "%s%n",
            "2026-02-30T25:61:61.000000Z", "9999-12-31", "0000-00-00", "NaN", "Infinity", "-9223372036854775809",
        ]
    }

    /// A string of one Unicode noncharacter (valid scalars that I-JSON identity strings must not hold).
    private static func noncharacter(_ value: UInt32) -> String {
        Unicode.Scalar(value).map { String(Character($0)) } ?? ""
    }

    private static func renamedKeys(_ key: String) -> [String] {
        [key.uppercased(), key + "_", String(key.dropLast()), " " + key, key + "\u{0}", "", key.replacingOccurrences(
            of: "_", with: "")]
    }
}

/// Writes any ``JSONValue`` as JSON text, duplicate member names and member order included (the canonical
/// encoder refuses what the fuzzer needs to produce).
public enum FuzzJSONText {
    public static func bytes(_ value: JSONValue, spacing: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        write(value, spacing: spacing, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, spacing: Bool, into out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .number(let number): out += Array(number.literal.utf8)
        case .string(let text): writeString(text, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out += spacing ? Array(", ".utf8) : [UInt8(ascii: ",")] }
                write(element, spacing: spacing, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { out += spacing ? Array(",\n ".utf8) : [UInt8(ascii: ",")] }
                writeString(member.key, into: &out)
                out += spacing ? Array(" : ".utf8) : [UInt8(ascii: ":")]
                write(member.value, spacing: spacing, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += Array("\\\"".utf8)
            case UInt8(ascii: "\\"): out += Array("\\\\".utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
