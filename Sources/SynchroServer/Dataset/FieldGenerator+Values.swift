import SynchroProtocol

/// Where a row sits in its table's generation: its position and, for per-user tables, its owner.
struct RowPosition {
    /// The row's index in the table (shared) or among its owner's rows (per-user).
    let index: Int64
    /// The owning user of a per-user row, nil for shared tables.
    let user: String?
}

/// A `reference` generator bound to its target for one generation run: the target's key
/// sequence and how many rows the target has under the same row-count options.
struct ResolvedReference: Sendable {
    let keys: SequenceFormat
    let count: Int64
}

extension FieldGenerator {
    /// The value of this field for the row at `position`, drawn from the field's own stream.
    ///
    /// Every parameter was validated against the field's spec when the dataset loaded, and the
    /// run's counts were checked by ``DatasetGenerator``, so the value is always valid.
    func value(at position: RowPosition, reference: ResolvedReference?, random: inout SplitMix64) -> JSONValue {
        if nullRatio > 0 && random.chance(nullRatio) { return .null }
        return kind.value(at: position, reference: reference, random: &random)
    }
}

extension GeneratorKind {
    func value(at position: RowPosition, reference: ResolvedReference?, random: inout SplitMix64) -> JSONValue {
        switch self {
        case .sequence(let format):
            return format.value(at: position.index, user: position.user)
        case .uuid:
            return .string(Self.uuid(&random))
        case .words(let low, let high):
            return .string(Self.words(Int(random.next(in: Int64(low), Int64(high))), &random))
        case .pick(let values):
            return values[Int(random.next(below: UInt64(values.count)))]
        case .integer(let low, let high, let asString):
            let value = random.next(in: low, high)
            return asString ? .string(String(value)) : .number(JSONNumber(value))
        case .decimal(let low, let high, let scale):
            return .string(DecimalText.canonical(units: random.next(in: low, high), scale: scale))
        case .float(let low, let high, let decimals):
            // Both operands are exact, so the quotient is the binary64 nearest to the decimal.
            let value = Double(random.next(in: low, high)) / Double(DecimalText.powersOfTen[decimals])
            return JSONNumber(value).map(JSONValue.number) ?? .null
        case .boolean(let probability):
            return .bool(random.chance(probability))
        case .datetime(let progression):
            return .string(CivilTime.formatDateTime(progression.value(at: position.index, random: &random)))
        case .date(let progression):
            return .string(CivilTime.formatDate(progression.value(at: position.index, random: &random)))
        case .time(let low, let high):
            return .string(CivilTime.formatTime(random.next(in: low, high)))
        case .json(let template):
            return .string(template.document(at: position, random: &random))
        case .bytes(let low, let high):
            return .string(Base64URL.encode(Self.octets(Int(random.next(in: Int64(low), Int64(high))), &random)))
        case .owner:
            return position.user.map(JSONValue.string) ?? .null
        case .reference:
            guard let reference, reference.count > 0 else { return .null }
            let index = Int64(random.next(below: UInt64(reference.count)))
            return reference.keys.value(at: index, user: nil)
        case .null:
            return .null
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A random version 4 UUID in canonical lowercase hyphenated form (never the nil UUID).
    private static func uuid(_ random: inout SplitMix64) -> String {
        var octets = octets(16, &random)
        octets[6] = octets[6] & 0x0F | 0x40
        octets[8] = octets[8] & 0x3F | 0x80
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (i, octet) in octets.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hexDigits[Int(octet >> 4)])
            text.append(hexDigits[Int(octet & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func words(_ count: Int, _ random: inout SplitMix64) -> String {
        var text = ""
        for i in 0..<count {
            if i > 0 { text += " " }
            text += WordList.words[Int(random.next(below: UInt64(WordList.words.count)))]
        }
        return text
    }

    private static func octets(_ count: Int, _ random: inout SplitMix64) -> [UInt8] {
        var octets: [UInt8] = []
        octets.reserveCapacity(count + 7)
        while octets.count < count {
            var word = random.next()
            for _ in 0..<8 {
                octets.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        octets.removeLast(octets.count - count)
        return octets
    }
}

extension SequenceFormat {
    /// The value at `index`; `user` fills the `{user}` placeholder of a per-user text prefix.
    /// The caller checked ``fits(count:)``, so the number is in range.
    func value(at index: Int64, user: String?) -> JSONValue {
        let number = self.number(at: index) ?? start
        switch output {
        case .number:
            return .number(JSONNumber(number))
        case .int64String:
            return .string(String(number))
        case .text(let head, let tail, let pad):
            let digits = String(number)
            var text = head
            if let tail {
                text += user ?? ""
                text += tail
            }
            if digits.utf8.count < pad { text += String(repeating: "0", count: pad - digits.utf8.count) }
            text += digits
            return .string(text)
        }
    }
}

extension TemporalProgression {
    /// `base + step × index` plus a uniform jitter in `0...jitter`; ``extent(count:)`` was checked.
    func value(at index: Int64, random: inout SplitMix64) -> Int64 {
        let offset = jitter > 0 ? random.next(in: 0, jitter) : 0
        return base &+ step &* index &+ offset
    }
}

extension JSONTemplate {
    /// The RFC 8785 text of the template with every placeholder generated.
    func document(at position: RowPosition, random: inout SplitMix64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        for part in parts {
            switch part {
            case .text(let text):
                out.append(contentsOf: text)
            case .generated(let generator):
                // Placeholders yield I-JSON values (ranges and picks were checked at load), so
                // encoding cannot fail; `null` keeps the function total.
                let value = generator.value(at: position, reference: nil, random: &random)
                do throws(CanonicalJSON.Failure) {
                    try CanonicalJSON.encode(value, into: &out)
                } catch {
                    out.append(contentsOf: Array("null".utf8))
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
