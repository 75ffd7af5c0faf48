import SynchroProtocol

/// Compiles one generator spec of `dataset.json` (`{"kind": …, …}`, see `docs/datasets.md`) for a
/// manifest field, or for a placeholder inside a `json` template when `field` is nil.
///
/// Every parameter is checked against the field's spec here, so generation cannot fail later:
/// ranges fit the type, decimals fit precision and scale, picked values are valid values.
struct FieldGeneratorParser {
    /// The field the generator fills; nil for a `json` template placeholder.
    let field: ManifestField?
    /// Whether the table is per-user (only there may `owner` and `{user}` appear).
    let perUser: Bool
    /// Location of the spec, for errors.
    let location: String

    /// Largest integer magnitude I-JSON numbers carry exactly (±(2^53−1)).
    static let maxSafeInteger: Int64 = 9_007_199_254_740_991
    /// Longest generated `bytes` value, to keep rows within the protocol's size limits.
    static let maxBytesLength: Int64 = 65_536
    /// The most words one `words` value may hold.
    static let maxWordCount: Int64 = 64

    /// The `kind` names of `docs/datasets.md`.
    private enum Kind: String, CaseIterable {
        case sequence, uuid, words, pick, int, decimal, float, boolean, datetime, date, time, json, bytes
        case owner, reference, null

        /// The kind spelled exactly `name` (octet comparison, as for every identifier).
        init?(name: String) {
            guard let kind = Self.allCases.first(where: { $0.rawValue.exactlyEquals(name) }) else { return nil }
            self = kind
        }

        /// Parameter members besides `kind` and `null_ratio`.
        var members: (required: [String], optional: [String]) {
            switch self {
            case .sequence: ([], ["start", "step", "prefix", "pad"])
            case .uuid, .owner, .null: ([], [])
            case .words: ([], ["min", "max"])
            case .pick: (["values"], [])
            case .int: (["min", "max"], [])
            case .decimal: (["min", "max"], ["scale"])
            case .float: (["min", "max"], ["decimals"])
            case .boolean: ([], ["probability"])
            case .datetime: (["base"], ["step_seconds", "jitter_seconds"])
            case .date: (["base"], ["step_days", "jitter_days"])
            case .time: ([], ["min", "max"])
            case .json: (["template"], [])
            case .bytes: ([], ["min_length", "max_length"])
            case .reference: (["table"], [])
            }
        }

        /// The field types the kind can produce.
        var producibleTypes: Set<PortableType> {
            switch self {
            case .sequence, .reference: [.int, .int64, .string]
            case .uuid, .words, .owner: [.string]
            case .pick, .null: Set(PortableType.allCases)
            case .int: [.int, .int64]
            case .decimal: [.decimal]
            case .float: [.float]
            case .boolean: [.boolean]
            case .datetime: [.datetime]
            case .date: [.date]
            case .time: [.time]
            case .json: [.json]
            case .bytes: [.bytes]
            }
        }

        /// Whether the kind can fill a `json` template placeholder (documents are not nested, and
        /// owners and references only make sense as whole fields).
        var allowedInTemplate: Bool {
            switch self {
            case .json, .owner, .reference: false
            default: true
            }
        }
    }

    func parse(_ value: JSONValue) throws(DatasetError) -> FieldGenerator {
        guard case .object(let object) = value else { throw .dataset(.notAnObject, location) }
        guard let kindValue = object["kind"] else { throw .dataset(.missingMember, path("kind")) }
        guard case .string(let name) = kindValue else { throw .dataset(.memberType, path("kind")) }
        guard let kind = Kind(name: name) else { throw .dataset(.unknownGeneratorKind, path("kind")) }
        let reader = try DatasetJSONReader(
            value, at: location, required: ["kind"] + kind.members.required,
            optional: ["null_ratio"] + kind.members.optional)
        try checkProducible(kind)
        let nullRatio = try reader.ratio("null_ratio") ?? 0
        if nullRatio > 0 || kind == .null, !(field?.nullable ?? true) {
            throw .dataset(.nullRatioOnNonNullable, location)
        }
        return FieldGenerator(kind: try compile(kind, reader), nullRatio: nullRatio)
    }

    private func path(_ member: String) -> String { DatasetJSONReader.join(location, member) }

    private func checkProducible(_ kind: Kind) throws(DatasetError) {
        if let field {
            guard kind.producibleTypes.contains(field.type) else { throw .dataset(.generatorTypeMismatch, location) }
        } else if !kind.allowedInTemplate {
            throw .dataset(.generatorTypeMismatch, location)
        }
        if kind == .owner && !perUser { throw .dataset(.ownerFieldGenerator, location) }
    }

    private func compile(_ kind: Kind, _ reader: DatasetJSONReader) throws(DatasetError) -> GeneratorKind {
        switch kind {
        case .sequence: .sequence(try sequence(reader))
        case .uuid: .uuid
        case .words: try words(reader)
        case .pick: .pick(try pick(reader))
        case .int: try integer(reader)
        case .decimal: try decimal(reader)
        case .float: try float(reader)
        case .boolean: .boolean(probability: try reader.ratio("probability") ?? 0.5)
        case .datetime: .datetime(try datetime(reader))
        case .date: .date(try date(reader))
        case .time: try time(reader)
        case .json: .json(try template(reader.value("template")!, at: path("template")))
        case .bytes: try bytes(reader)
        case .owner: .owner
        case .reference: .reference(tableID: try reader.string("table")!)
        case .null: .null
        }
    }

    // MARK: Kinds

    private func sequence(_ reader: DatasetJSONReader) throws(DatasetError) -> SequenceFormat {
        let start = try reader.integer("start") ?? 1
        let step = try reader.integer("step") ?? 1
        guard step >= 1 else { throw .dataset(.invalidGenerator, reader.path("step")) }
        let prefix = try reader.text("prefix")
        let pad = try reader.integer("pad", in: 0...32)
        let isText = field.map { $0.type == .string } ?? (prefix != nil || pad != nil)
        guard isText else {
            guard prefix == nil, pad == nil else { throw .dataset(.invalidGenerator, location) }
            let asString = field?.type == .int64
            let range: ClosedRange<Int64> = switch field?.type {
            case .int?: Int64(Int32.min)...Int64(Int32.max)
            case .int64?: Int64.min...Int64.max
            default: -Self.maxSafeInteger...Self.maxSafeInteger
            }
            guard range.contains(start) else { throw .dataset(.generatorOutOfRange, reader.path("start")) }
            return SequenceFormat(start: start, step: step, output: asString ? .int64String : .number, range: range)
        }
        guard start >= 0 else { throw .dataset(.invalidGenerator, reader.path("start")) }
        let parts = (prefix ?? "").split(separator: "{user}", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2 else { throw .dataset(.invalidGenerator, reader.path("prefix")) }
        if parts.count == 2 && (!perUser || field == nil) { throw .dataset(.invalidGenerator, reader.path("prefix")) }
        let output = SequenceFormat.Output.text(
            head: parts[0], tail: parts.count == 2 ? parts[1] : nil, pad: Int(pad ?? 0))
        return SequenceFormat(start: start, step: step, output: output, range: 0...Int64.max)
    }

    private func words(_ reader: DatasetJSONReader) throws(DatasetError) -> GeneratorKind {
        let low = try reader.integer("min", in: 1...Self.maxWordCount) ?? 1
        let high = try reader.integer("max", in: 1...Self.maxWordCount) ?? max(low, 3)
        guard low <= high else { throw .dataset(.invalidGenerator, location) }
        return .words(min: Int(low), max: Int(high))
    }

    private func pick(_ reader: DatasetJSONReader) throws(DatasetError) -> [JSONValue] {
        let values = try reader.array("values")!
        guard !values.isEmpty else { throw .dataset(.invalidGenerator, reader.path("values")) }
        for (i, value) in values.enumerated() {
            let valid = if let field { Self.isValid(value, spec: field.spec) } else { Self.isIJSON(value) }
            guard valid else { throw .dataset(.pickValueInvalid, "\(reader.path("values"))[\(i)]") }
        }
        return values
    }

    private func integer(_ reader: DatasetJSONReader) throws(DatasetError) -> GeneratorKind {
        let low = try reader.integer("min")!, high = try reader.integer("max")!
        guard low <= high else { throw .dataset(.invalidGenerator, location) }
        let range: ClosedRange<Int64> = switch field?.type {
        case .int?: Int64(Int32.min)...Int64(Int32.max)
        case .int64?: Int64.min...Int64.max
        default: -Self.maxSafeInteger...Self.maxSafeInteger
        }
        guard range.contains(low), range.contains(high) else { throw .dataset(.generatorOutOfRange, location) }
        return .integer(min: low, max: high, asString: field?.type == .int64)
    }

    private func decimal(_ reader: DatasetJSONReader) throws(DatasetError) -> GeneratorKind {
        let fieldScale = field?.spec.scale
        guard let scale = try reader.integer("scale", in: 0...18) ?? fieldScale.map(Int64.init) else {
            throw .dataset(.missingMember, reader.path("scale"))
        }
        let scaleLimit = min(fieldScale ?? 18, 18)
        guard scale <= scaleLimit else { throw .dataset(.generatorOutOfRange, reader.path("scale")) }
        guard let low = DecimalText.units(try reader.literal("min")!, scale: Int(scale)),
              let high = DecimalText.units(try reader.literal("max")!, scale: Int(scale)), low <= high
        else { throw .dataset(.invalidGenerator, location) }
        // Magnitudes stay below 10^18 units so negation and formatting never overflow.
        let limit = DecimalText.powersOfTen[18]
        guard low > -limit, high < limit else { throw .dataset(.generatorOutOfRange, location) }
        if let spec = field?.spec, let precision = spec.precision, let fieldScale {
            let digits = max(DecimalText.integerDigits(units: low, scale: Int(scale)),
                             DecimalText.integerDigits(units: high, scale: Int(scale)))
            guard digits <= precision - fieldScale else { throw .dataset(.generatorOutOfRange, location) }
        }
        return .decimal(min: low, max: high, scale: Int(scale))
    }

    private func float(_ reader: DatasetJSONReader) throws(DatasetError) -> GeneratorKind {
        let decimals = Int(try reader.integer("decimals", in: 0...15) ?? 2)
        guard let low = DecimalText.units(try reader.literal("min")!, scale: decimals),
              let high = DecimalText.units(try reader.literal("max")!, scale: decimals), low <= high
        else { throw .dataset(.invalidGenerator, location) }
        // Units below 10^15 are exact in binary64, so units / 10^decimals is one correctly rounded
        // division giving the binary64 nearest to the decimal; and a decimal of at most 15
        // significant digits is the shortest text of that binary64, so the RFC 8785 number is it.
        let limit = DecimalText.powersOfTen[15]
        guard low > -limit, high < limit else { throw .dataset(.generatorOutOfRange, location) }
        return .float(min: low, max: high, decimals: decimals)
    }

    private func datetime(_ reader: DatasetJSONReader) throws(DatasetError) -> TemporalProgression {
        guard let base = CivilTime.parseDateTime(try reader.text("base")!) else {
            throw .dataset(.invalidGenerator, reader.path("base"))
        }
        return try progression(
            reader, base: base, unit: CivilTime.microsPerSecond, step: "step_seconds", jitter: "jitter_seconds")
    }

    private func date(_ reader: DatasetJSONReader) throws(DatasetError) -> TemporalProgression {
        guard let base = CivilTime.parseDate(try reader.text("base")!) else {
            throw .dataset(.invalidGenerator, reader.path("base"))
        }
        return try progression(reader, base: base, unit: 1, step: "step_days", jitter: "jitter_days")
    }

    private func progression(
        _ reader: DatasetJSONReader, base: Int64, unit: Int64, step: String, jitter: String
    ) throws(DatasetError) -> TemporalProgression {
        // ±10^10 seconds (about 317 years) per step is already far beyond any useful dataset.
        let bound: Int64 = 10_000_000_000
        let stepValue = try reader.integer(step, in: -bound...bound) ?? 0
        let jitterValue = try reader.integer(jitter, in: 0...bound) ?? 0
        return TemporalProgression(base: base, step: stepValue * unit, jitter: jitterValue * unit)
    }

    private func time(_ reader: DatasetJSONReader) throws(DatasetError) -> GeneratorKind {
        guard let low = CivilTime.parseTime(try reader.text("min") ?? "00:00:00.000000"),
              let high = CivilTime.parseTime(try reader.text("max") ?? "23:59:59.999999"), low <= high
        else { throw .dataset(.invalidGenerator, location) }
        return .time(min: low, max: high)
    }

    private func bytes(_ reader: DatasetJSONReader) throws(DatasetError) -> GeneratorKind {
        let low = try reader.integer("min_length", in: 0...Self.maxBytesLength) ?? 0
        let high = try reader.integer("max_length", in: 0...Self.maxBytesLength) ?? max(low, 16)
        guard low <= high else { throw .dataset(.invalidGenerator, location) }
        return .bytes(min: Int(low), max: Int(high))
    }

    // MARK: JSON templates

    /// A template as written: literals, containers and placeholders.
    private indirect enum TemplateNode {
        case literal(JSONValue)
        case array([TemplateNode])
        case object([(key: String, value: TemplateNode)])
        case generated(FieldGenerator)
    }

    private func template(_ value: JSONValue, at location: String) throws(DatasetError) -> JSONTemplate {
        let node = try templateNode(value, at: location)
        // Placeholders yield I-JSON values, so checking the skeleton (placeholders as null) proves
        // every generated document has an RFC 8785 form and passes the `json` type's rules.
        guard Self.isIJSON(Self.skeleton(node)) else { throw .dataset(.invalidGenerator, location) }
        var parts: [JSONTemplate.Part] = []
        var text: [UInt8] = []
        Self.compile(node, parts: &parts, text: &text)
        if !text.isEmpty { parts.append(.text(text)) }
        return JSONTemplate(parts: parts)
    }

    private func templateNode(_ value: JSONValue, at location: String) throws(DatasetError) -> TemplateNode {
        switch value {
        case .array(let elements):
            var nodes: [TemplateNode] = []
            for (i, element) in elements.enumerated() {
                nodes.append(try templateNode(element, at: "\(location)[\(i)]"))
            }
            return .array(nodes)
        case .object(let object):
            if object.count == 1, let spec = object["$generate"] {
                let parser = FieldGeneratorParser(
                    field: nil, perUser: perUser, location: DatasetJSONReader.join(location, "$generate"))
                return .generated(try parser.parse(spec))
            }
            var members: [(key: String, value: TemplateNode)] = []
            for member in object.members {
                members.append((member.key, try templateNode(member.value, at: "\(location).\(member.key)")))
            }
            return .object(members)
        default:
            return .literal(value)
        }
    }

    private static func skeleton(_ node: TemplateNode) -> JSONValue {
        switch node {
        case .literal(let value): value
        case .array(let nodes): .array(nodes.map(skeleton))
        case .object(let members): .object(JSONObject(members.map { JSONMember($0.key, skeleton($0.value)) }))
        case .generated: .null
        }
    }

    /// Appends the canonical text of `node` to `text`, closing a text part before each placeholder.
    /// Only called on a template whose skeleton encoded, so every literal encodes.
    private static func compile(_ node: TemplateNode, parts: inout [JSONTemplate.Part], text: inout [UInt8]) {
        switch node {
        case .literal(let value):
            try? CanonicalJSON.encode(value, into: &text)
        case .array(let nodes):
            text.append(UInt8(ascii: "["))
            for (i, element) in nodes.enumerated() {
                if i > 0 { text.append(UInt8(ascii: ",")) }
                compile(element, parts: &parts, text: &text)
            }
            text.append(UInt8(ascii: "]"))
        case .object(let members):
            text.append(UInt8(ascii: "{"))
            for (i, member) in members.sorted(by: { $0.key.utf16Precedes($1.key) }).enumerated() {
                if i > 0 { text.append(UInt8(ascii: ",")) }
                try? CanonicalJSON.appendString(member.key, to: &text)
                text.append(UInt8(ascii: ":"))
                compile(member.value, parts: &parts, text: &text)
            }
            text.append(UInt8(ascii: "}"))
        case .generated(let generator):
            if !text.isEmpty { parts.append(.text(text)) }
            text = []
            parts.append(.generated(generator))
        }
    }

    // MARK: Value checks

    static func isValid(_ value: JSONValue, spec: FieldSpec) -> Bool {
        do throws(PortableValueError) {
            try PortableValue.validate(value, spec: spec)
            return true
        } catch {
            return false
        }
    }

    /// True when `value` can be the content of a `json` field: it has an RFC 8785 form and that
    /// form passes the type's I-JSON rules (integers within ±(2^53−1), no noncharacters).
    static func isIJSON(_ value: JSONValue) -> Bool {
        guard let text = try? CanonicalJSON.string(value),
              let spec = try? FieldSpec(type: .json, nullable: false)
        else { return false }
        return isValid(.string(text), spec: spec)
    }
}
