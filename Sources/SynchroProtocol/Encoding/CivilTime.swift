/// Proleptic Gregorian arithmetic on integers only, and the canonical wire text of dates, times
/// and datetimes: one implementation for the server clock, generated data and HTTP dates.
///
/// Datetimes are microseconds since 1970-01-01T00:00:00Z and dates are days since 1970-01-01,
/// so "base + step × index" is exact; the text forms are the canonical wire forms of
/// `spec/wire-protocol.md` §2.3 and §2.7. Conversions follow H. Hinnant's `days_from_civil`.
public enum CivilTime {
    public static let microsPerSecond: Int64 = 1_000_000
    public static let microsPerDay: Int64 = 86_400_000_000

    /// 0000-01-01 and 9999-12-31, the span the `date` and `datetime` wire forms can express.
    public static let firstDay: Int64 = daysFromCivil(year: 0, month: 1, day: 1)
    public static let lastDay: Int64 = daysFromCivil(year: 9999, month: 12, day: 31)

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    public static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day number.
    public static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    // MARK: Parsing canonical text (already validated by `PortableValue`)

    /// Day number of a canonical `YYYY-MM-DD`, nil when the text is not one.
    public static func parseDate(_ text: String) -> Int64? {
        guard WireFormats.isDate(text) else { return nil }
        let u = Array(text.utf8)
        return daysFromCivil(year: number(u, 0, 4), month: number(u, 5, 2), day: number(u, 8, 2))
    }

    /// Microseconds since the epoch of a canonical `YYYY-MM-DDTHH:MM:SS.ffffffZ`, nil otherwise.
    public static func parseDateTime(_ text: String) -> Int64? {
        guard WireFormats.isTimestamp(text) else { return nil }
        let u = Array(text.utf8)
        let days = daysFromCivil(year: number(u, 0, 4), month: number(u, 5, 2), day: number(u, 8, 2))
        return days * microsPerDay + timeMicros(u, from: 11)
    }

    /// Microseconds since midnight of a canonical `HH:MM:SS.ffffff`, nil otherwise.
    public static func parseTime(_ text: String) -> Int64? {
        guard WireFormats.isTime(text) else { return nil }
        return timeMicros(Array(text.utf8), from: 0)
    }

    private static func timeMicros(_ u: [UInt8], from start: Int) -> Int64 {
        let seconds = number(u, start, 2) * 3600 + number(u, start + 3, 2) * 60 + number(u, start + 6, 2)
        return seconds * microsPerSecond + number(u, start + 9, 6)
    }

    private static func number(_ u: [UInt8], _ start: Int, _ count: Int) -> Int64 {
        var value: Int64 = 0
        for i in start..<(start + count) { value = value * 10 + Int64(u[i] &- UInt8(ascii: "0")) }
        return value
    }

    // MARK: Formatting canonical text

    /// `YYYY-MM-DD` of a day number within ``firstDay``...``lastDay``.
    public static func formatDate(_ days: Int64) -> String {
        var out = [UInt8](repeating: 0, count: 10)
        writeDate(days, into: &out, at: 0)
        return String(decoding: out, as: UTF8.self)
    }

    /// `YYYY-MM-DDTHH:MM:SS.ffffffZ` of microseconds since the epoch, within the date span.
    public static func formatDateTime(_ micros: Int64) -> String {
        let days = floorDivide(micros, microsPerDay)
        var out = [UInt8](repeating: 0, count: 27)
        writeDate(days, into: &out, at: 0)
        out[10] = UInt8(ascii: "T")
        writeTime(micros - days * microsPerDay, into: &out, at: 11)
        out[26] = UInt8(ascii: "Z")
        return String(decoding: out, as: UTF8.self)
    }

    /// `HH:MM:SS.ffffff` of microseconds since midnight (`0..<microsPerDay`).
    public static func formatTime(_ micros: Int64) -> String {
        var out = [UInt8](repeating: 0, count: 15)
        writeTime(micros, into: &out, at: 0)
        return String(decoding: out, as: UTF8.self)
    }

    /// `⌊a / b⌋` for positive `b` (Swift's `/` truncates toward zero).
    public static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && a < 0) ? q - 1 : q
    }

    private static func writeDate(_ days: Int64, into out: inout [UInt8], at start: Int) {
        let civil = civilFromDays(days)
        writeDigits(civil.year, count: 4, into: &out, at: start)
        out[start + 4] = UInt8(ascii: "-")
        writeDigits(civil.month, count: 2, into: &out, at: start + 5)
        out[start + 7] = UInt8(ascii: "-")
        writeDigits(civil.day, count: 2, into: &out, at: start + 8)
    }

    private static func writeTime(_ micros: Int64, into out: inout [UInt8], at start: Int) {
        let seconds = micros / microsPerSecond
        writeDigits(seconds / 3600, count: 2, into: &out, at: start)
        out[start + 2] = UInt8(ascii: ":")
        writeDigits(seconds / 60 % 60, count: 2, into: &out, at: start + 3)
        out[start + 5] = UInt8(ascii: ":")
        writeDigits(seconds % 60, count: 2, into: &out, at: start + 6)
        out[start + 8] = UInt8(ascii: ".")
        writeDigits(micros % microsPerSecond, count: 6, into: &out, at: start + 9)
    }

    private static func writeDigits(_ value: Int64, count: Int, into out: inout [UInt8], at start: Int) {
        var v = value
        for i in stride(from: start + count - 1, through: start, by: -1) {
            out[i] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
        }
    }
}
