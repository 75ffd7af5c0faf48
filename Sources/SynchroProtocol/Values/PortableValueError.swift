/// Why a wire value is not the canonical form of its field's portable type (`spec/integrity.md` §1).
///
/// One case per rule. Neither the case nor its description carries the value itself: row values
/// are private data and never appear in errors or logs.
public enum PortableValueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// JSON `null` for a field whose manifest entry is `nullable: false` (always so for a key).
    case nullNotAllowed
    /// The JSON type does not fit the portable type (`1` for `boolean`, a number for `int64`).
    case typeMismatch(expected: PortableType, found: String)
    /// An `int` literal with a fraction, exponent, leading zero or `-0`.
    case intNotCanonical
    /// An `int` outside `-2147483648...2147483647`.
    case intOutOfRange
    /// An `int64` string that does not match `0|-?[1-9][0-9]*`.
    case int64NotCanonical
    /// An `int64` string outside the signed 64-bit range.
    case int64OutOfRange
    /// A `decimal` string outside the canonical grammar (exponent, `+`, trailing zero, `-0`…).
    case decimalNotCanonical
    /// A `decimal` with more integer digits than precision − scale, or more digits than precision.
    case decimalPrecisionExceeded
    /// A `decimal` with more fraction digits than the scale.
    case decimalScaleExceeded
    /// A `float` literal beyond finite binary64 (`1e400`).
    case floatNotFinite
    /// A `float` literal for negative zero, which the wire never carries.
    case floatNegativeZero
    /// A `float` literal that is not the RFC 8785 text of its nearest binary64 (`1.0`, `1E21`).
    case floatNotCanonical
    /// A `datetime` that is not `YYYY-MM-DDTHH:MM:SS.ffffffZ` with a real date and time.
    case datetimeInvalid
    /// A `date` that is not `YYYY-MM-DD` naming a real proleptic Gregorian day.
    case dateInvalid
    /// A `time` that is not `HH:MM:SS.ffffff` within the day.
    case timeInvalid
    /// A `json` string whose content is not exactly one well-formed JSON text.
    case jsonMalformed
    /// A `json` document with a repeated member name.
    case jsonDuplicateMember
    /// A `json` document holding a Unicode noncharacter.
    case jsonNoncharacter
    /// A `json` document with a number outside finite binary64.
    case jsonNonFiniteNumber
    /// A `json` document with an integer-valued number beyond ±(2^53−1).
    case jsonUnsafeInteger
    /// A `json` document that is not already byte-identical to its RFC 8785 form.
    case jsonNotCanonical
    /// A `bytes` string that is not canonical unpadded base64url.
    case bytesNotCanonical
    /// A `string` holding a Unicode noncharacter (decision for `spec/integrity.md` §9 point 3).
    case stringNoncharacter

    /// Stable snake_case name of the broken rule, for reports and conformance results.
    public var rule: String {
        switch self {
        case .nullNotAllowed: "null_not_allowed"
        case .typeMismatch: "type_mismatch"
        case .intNotCanonical: "int_not_canonical"
        case .intOutOfRange: "int_out_of_range"
        case .int64NotCanonical: "int64_not_canonical"
        case .int64OutOfRange: "int64_out_of_range"
        case .decimalNotCanonical: "decimal_not_canonical"
        case .decimalPrecisionExceeded: "decimal_precision_exceeded"
        case .decimalScaleExceeded: "decimal_scale_exceeded"
        case .floatNotFinite: "float_not_finite"
        case .floatNegativeZero: "float_negative_zero"
        case .floatNotCanonical: "float_not_canonical"
        case .datetimeInvalid: "datetime_invalid"
        case .dateInvalid: "date_invalid"
        case .timeInvalid: "time_invalid"
        case .jsonMalformed: "json_malformed"
        case .jsonDuplicateMember: "json_duplicate_member"
        case .jsonNoncharacter: "json_noncharacter"
        case .jsonNonFiniteNumber: "json_non_finite_number"
        case .jsonUnsafeInteger: "json_unsafe_integer"
        case .jsonNotCanonical: "json_not_canonical"
        case .bytesNotCanonical: "bytes_not_canonical"
        case .stringNoncharacter: "string_noncharacter"
        }
    }

    public var description: String {
        switch self {
        case .nullNotAllowed: "null is not allowed for a non-nullable field"
        case .typeMismatch(let expected, let found): "a value of type \(expected.rawValue) cannot be a JSON \(found)"
        case .intNotCanonical: "int value is not a plain integer literal (0|-?[1-9][0-9]*)"
        case .intOutOfRange: "int value is outside the signed 32-bit range"
        case .int64NotCanonical: "int64 string does not match 0|-?[1-9][0-9]*"
        case .int64OutOfRange: "int64 string is outside the signed 64-bit range"
        case .decimalNotCanonical: "decimal string is not in canonical decimal form"
        case .decimalPrecisionExceeded: "decimal value has more digits than the field's precision allows"
        case .decimalScaleExceeded: "decimal value has more fraction digits than the field's scale"
        case .floatNotFinite: "float value is outside finite binary64"
        case .floatNegativeZero: "float value is negative zero"
        case .floatNotCanonical: "float value is not the RFC 8785 form of its nearest binary64"
        case .datetimeInvalid: "datetime value is not YYYY-MM-DDTHH:MM:SS.ffffffZ with a valid date and time"
        case .dateInvalid: "date value is not YYYY-MM-DD with a valid proleptic Gregorian date"
        case .timeInvalid: "time value is not HH:MM:SS.ffffff within the day"
        case .jsonMalformed: "json value does not hold exactly one well-formed JSON text"
        case .jsonDuplicateMember: "json value has a duplicate member name"
        case .jsonNoncharacter: "json value contains a Unicode noncharacter"
        case .jsonNonFiniteNumber: "json value has a number outside finite binary64"
        case .jsonUnsafeInteger: "json value has an integer beyond ±(2^53-1)"
        case .jsonNotCanonical: "json value is not in RFC 8785 canonical form"
        case .bytesNotCanonical: "bytes value is not canonical unpadded base64url"
        case .stringNoncharacter: "string value contains a Unicode noncharacter"
        }
    }
}
