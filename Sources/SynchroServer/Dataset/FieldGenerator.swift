import SynchroProtocol

/// A validated generator for one field (or one placeholder of a `json` template): what kind of
/// value it makes and how often it makes SQL null instead.
///
/// Built only by ``FieldGeneratorParser``, which checks every parameter against the field's
/// manifest spec, so producing a value never fails.
struct FieldGenerator: Sendable {
    /// The value kind and its parameters.
    let kind: GeneratorKind
    /// Probability of `null` (0 for non-nullable fields).
    let nullRatio: Double
}

/// The generator kinds of `docs/datasets.md`, compiled: ranges in exact integer units.
indirect enum GeneratorKind: Sendable {
    /// `start + step × index`, as a number, an `int64` string or prefixed, zero-padded text.
    case sequence(SequenceFormat)
    /// A random version 4 UUID in canonical lowercase text.
    case uuid
    /// `min...max` words of ``WordList``, separated by spaces.
    case words(min: Int, max: Int)
    /// One of the listed values, each already valid for the field.
    case pick([JSONValue])
    /// An integer in `min...max`, as a JSON number or (for `int64`) a decimal string.
    case integer(min: Int64, max: Int64, asString: Bool)
    /// A decimal in `min...max` units of 10^-scale, as canonical decimal text.
    case decimal(min: Int64, max: Int64, scale: Int)
    /// A float in `min...max` units of 10^-decimals, as its RFC 8785 number.
    case float(min: Int64, max: Int64, decimals: Int)
    /// `true` with the given probability.
    case boolean(probability: Double)
    /// `base + step × index + jitter` microseconds since the epoch, as canonical datetime text.
    case datetime(TemporalProgression)
    /// `base + step × index + jitter` days since the epoch, as canonical date text.
    case date(TemporalProgression)
    /// A time of day in `min...max` microseconds since midnight.
    case time(min: Int64, max: Int64)
    /// A canonical JSON document filled in from a template.
    case json(JSONTemplate)
    /// `min...max` random octets as canonical base64url.
    case bytes(min: Int, max: Int)
    /// The user a per-user row is generated for.
    case owner
    /// The key of a random row of a shared table keyed by a sequence.
    case reference(tableID: String)
    /// Always SQL null.
    case null
}

/// How a sequence position becomes a value.
struct SequenceFormat: Sendable {
    enum Output: Sendable {
        /// A JSON number (`int` fields, template numbers).
        case number
        /// A decimal string (`int64` fields).
        case int64String
        /// `head + {user} + tail + zero-padded number` (`string` fields); `tail` is nil when the
        /// prefix has no `{user}` placeholder, in which case `head` is the whole prefix.
        case text(head: String, tail: String?, pad: Int)
    }

    let start: Int64
    let step: Int64
    let output: Output
    /// The values the output type can carry (int32 for `int`, ±(2^53−1) for template numbers, …).
    let range: ClosedRange<Int64>

    /// The numeric value at `index`, nil when it leaves ``range``.
    func number(at index: Int64) -> Int64? {
        let (offset, overflow1) = step.multipliedReportingOverflow(by: index)
        let (value, overflow2) = start.addingReportingOverflow(offset)
        return overflow1 || overflow2 || !range.contains(value) ? nil : value
    }

    /// True when every index below `count` stays in ``range`` (the step is positive, so the
    /// last index is the largest value).
    func fits(count: Int64) -> Bool {
        count == 0 || number(at: count - 1) != nil
    }
}

/// `base + step × index + uniform(0...jitter)` in some unit (microseconds or days).
struct TemporalProgression: Sendable {
    let base: Int64
    let step: Int64
    let jitter: Int64

    /// The smallest and largest value over `count` indices, nil when the arithmetic overflows.
    func extent(count: Int64) -> (lower: Int64, upper: Int64)? {
        guard count > 0 else { return (base, base) }
        let (span, overflow1) = step.multipliedReportingOverflow(by: count - 1)
        let (last, overflow2) = base.addingReportingOverflow(span)
        guard !overflow1, !overflow2 else { return nil }
        let (top, overflow3) = max(base, last).addingReportingOverflow(jitter)
        return overflow3 ? nil : (min(base, last), top)
    }
}

/// A `json` generator's template, compiled into RFC 8785 order: the canonical text between
/// placeholders, so a document is assembled by appending octets instead of building, sorting and
/// encoding a JSON tree per row (members were sorted by UTF-16 code units once, at load).
struct JSONTemplate: Sendable {
    enum Part: Sendable {
        /// Canonical text of literals, punctuation and member names.
        case text([UInt8])
        /// `{"$generate": {...}}`: a generated scalar (number, string, boolean or null) or picked value.
        case generated(FieldGenerator)
    }

    let parts: [Part]

    /// The placeholders' generators, for range checks that depend on the row count.
    var generators: [FieldGenerator] {
        parts.compactMap { part in
            if case .generated(let generator) = part { return generator }
            return nil
        }
    }
}
