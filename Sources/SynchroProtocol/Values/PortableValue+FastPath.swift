/// Typed encoding straight into a ``RawOctetWriter``: the row digest's hot path.
///
/// Every value first meets a one-pass recognizer for its type's canonical text (no `String`, no
/// array, no parse tree is built). A value the recognizer accepts is valid by construction and
/// written directly; anything else — every invalid value, and the rare valid forms the recognizers
/// do not cover, such as the float `1e+21` — goes through ``PortableValue/validatedPayload(_:spec:)``,
/// the one full statement of the rules, which throws the precise error or yields the payload.
/// So the recognizers can only make a valid value cheaper; they never decide a rejection.
extension PortableValue {
    /// Appends the typed octets of `value`; nothing is written when validation fails.
    static func append(_ value: JSONValue, spec: FieldSpec, into out: inout RawOctetWriter) throws(PortableValueError) {
        if appendCanonical(value, spec: spec, into: &out) { return }
        try appendChecked(value, spec: spec, into: &out)
    }

    /// The full check, for values the recognizers did not vouch for; kept out of line so the
    /// common path stays small.
    @inline(never)
    private static func appendChecked(
        _ value: JSONValue, spec: FieldSpec, into out: inout RawOctetWriter
    ) throws(PortableValueError) {
        guard let payload = try validatedPayload(value, spec: spec) else {
            out.append(spec.type.tag, 0x00)
            return
        }
        out.append(spec.type.tag, 0x01)
        switch payload {
        case .text(let text): out.appendText(text)
        case .octets(let octets): octets.withUnsafeBufferPointer { out.appendBlob($0) }
        case .int32(let v): out.appendU32BE(UInt32(bitPattern: v))
        case .int64(let v): out.appendU64BE(UInt64(bitPattern: v))
        case .binary64(let bits): out.appendU64BE(bits)
        case .boolean(let flag): out.append(flag ? 0x01 : 0x00)
        }
    }

    /// Writes the typed octets of a value already in canonical form and returns true; returns
    /// false, having written nothing, when the fast checks cannot vouch for the value.
    @inline(__always)
    private static func appendCanonical(_ value: JSONValue, spec: FieldSpec, into out: inout RawOctetWriter) -> Bool {
        switch value {
        case .string(let text):
            return text.utf8.withContiguousStorageIfAvailable { appendCanonical(text: $0, spec: spec, into: &out) }
                ?? false
        case .number(let number):
            return number.literal.utf8.withContiguousStorageIfAvailable {
                appendCanonical(number: $0, spec: spec, into: &out)
            } ?? false
        case .bool(let flag):
            guard spec.type == .boolean else { return false }
            out.append(spec.type.tag, 0x01)
            out.append(flag ? 0x01 : 0x00)
            return true
        case .null:
            guard spec.nullable else { return false }
            out.append(spec.type.tag, 0x00)
            return true
        case .array, .object:
            return false
        }
    }

    /// `int` and `float` from the octets of a JSON number literal.
    private static func appendCanonical(
        number literal: UnsafeBufferPointer<UInt8>, spec: FieldSpec, into out: inout RawOctetWriter
    ) -> Bool {
        switch spec.type {
        case .int:
            guard case .value(let wide) = CanonicalInteger.parse(literal), let v = Int32(exactly: wide) else {
                return false
            }
            out.append(spec.type.tag, 0x01)
            out.appendU32BE(UInt32(bitPattern: v))
        case .float:
            guard let bits = CanonicalNumberText.binary64Bits(literal) else { return false }
            out.append(spec.type.tag, 0x01)
            out.appendU64BE(bits)
        default:
            return false
        }
        return true
    }

    /// Every string-carried type from the UTF-8 octets of the JSON string.
    private static func appendCanonical(
        text: UnsafeBufferPointer<UInt8>, spec: FieldSpec, into out: inout RawOctetWriter
    ) -> Bool {
        switch spec.type {
        case .string:
            guard !containsNoncharacter(text) else { return false }
        case .int64:
            guard case .value(let v) = CanonicalInteger.parse(text) else { return false }
            out.append(spec.type.tag, 0x01)
            out.appendU64BE(UInt64(bitPattern: v))
            return true
        case .decimal:
            guard let digits = CanonicalDecimal.digitCounts(text), let precision = spec.precision,
                  let scale = spec.scale, digits.fraction <= scale, digits.integer <= precision - scale,
                  digits.integer + digits.fraction <= precision
            else { return false }
        case .datetime:
            guard WireFormats.isTimestamp(text) else { return false }
        case .date:
            guard WireFormats.isDate(text) else { return false }
        case .time:
            guard WireFormats.isTime(text) else { return false }
        case .json:
            // Canonical content is its own RFC 8785 form, so the payload is the text as is.
            guard CanonicalJSONText.isCanonical(text) else { return false }
        case .bytes:
            // Decoded straight into the output; undone if the text turns out not to be canonical.
            guard let length = Base64URL.decodedCount(text.count) else { return false }
            let mark = out.count
            out.append(spec.type.tag, 0x01)
            out.appendU64BE(UInt64(length))
            let octets = out.appendUninitialized(length)
            guard Base64URL.decode(text, into: octets) else {
                out.truncate(to: mark)
                return false
            }
            return true
        case .int, .float, .boolean:
            return false
        }
        out.append(spec.type.tag, 0x01)
        out.appendBlob(text)
        return true
    }
}
