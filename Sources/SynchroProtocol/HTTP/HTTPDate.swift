/// The three HTTP-date forms of RFC 9110 §5.6.7, parsed by hand: the grammar is fixed-width ASCII in
/// English and GMT, which locale-dependent date formatters get wrong.
package enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    private struct Fields {
        var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
    }

    /// The instant `bytes` names, in seconds since the Unix epoch, or `nil`. `nowMilliseconds` resolves the
    /// two-digit years of the RFC 850 form.
    static func parse(_ bytes: [UInt8], nowMilliseconds: Int64) -> Int64? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let fields = imfFixdate(text) ?? rfc850(text, nowMilliseconds: nowMilliseconds) ?? asctime(text),
            isValid(fields)
        else { return nil }
        let days = daysFromCivil(year: fields.year, month: fields.month, day: fields.day)
        return Int64(days) * 86_400 + Int64(fields.hour * 3_600 + fields.minute * 60 + fields.second)
    }

    /// The IMF-fixdate of `seconds` since the Unix epoch (`Sun, 06 Nov 1994 08:49:37 GMT`), the form a server
    /// sends; ``parse(_:nowMilliseconds:)`` reads it back to the same second.
    package static func format(secondsSinceEpoch seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = seconds - days * 86_400
        let (year, month, day) = CivilTime.civilFromDays(days)
        // 1970-01-01 was a Thursday (index 3 with Monday first).
        let weekday = Int(((days % 7) + 7 + 3) % 7)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(Self.days[weekday]), \(two(day)) \(months[Int(month) - 1]) \(year) "
            + "\(two(second / 3_600)):\(two(second / 60 % 60)):\(two(second % 60)) GMT"
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ text: String) -> Fields? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","),
            days.contains(String(parts[0].dropLast())),
            parts[1].count == 2, let day = number(parts[1]), let month = month(parts[2]),
            parts[3].count == 4, let year = number(parts[3]), parts[5] == "GMT", let time = time(parts[4])
        else { return nil }
        return Fields(year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private static func rfc850(_ text: String, nowMilliseconds: Int64) -> Fields? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].hasSuffix(","), longDays.contains(String(parts[0].dropLast())),
            parts[3] == "GMT", let time = time(parts[2])
        else { return nil }
        let date = parts[1].split(separator: "-", omittingEmptySubsequences: false)
        guard date.count == 3, date[0].count == 2, let day = number(date[0]), let month = month(date[1]),
            date[2].count == 2, let shortYear = number(date[2])
        else { return nil }
        // RFC 9110: a two-digit year more than 50 years in the future is the latest past year with
        // those digits.
        let currentYear = civilYear(ofMilliseconds: nowMilliseconds)
        var year = currentYear - currentYear % 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return Fields(year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2)
    }

    /// `Sun Nov  6 08:49:37 1994`
    private static func asctime(_ text: String) -> Fields? {
        let bytes = Array(text.utf8)
        guard bytes.count == 24, bytes[3] == 0x20, bytes[7] == 0x20, bytes[10] == 0x20, bytes[19] == 0x20 else {
            return nil
        }
        let slice = { (range: Range<Int>) in Substring(String(decoding: bytes[range], as: UTF8.self)) }
        let dayText = bytes[8] == 0x20 ? slice(9..<10) : slice(8..<10)
        guard days.contains(String(slice(0..<3))), let month = month(slice(4..<7)), let day = number(dayText),
            let time = time(slice(11..<19)), let year = number(slice(20..<24))
        else { return nil }
        return Fields(year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2)
    }

    private static func month(_ text: Substring) -> Int? {
        months.firstIndex(of: String(text)).map { $0 + 1 }
    }

    /// `HH:MM:SS`
    private static func time(_ text: Substring) -> (Int, Int, Int)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }), let hour = number(parts[0]),
            let minute = number(parts[1]), let second = number(parts[2])
        else { return nil }
        return (hour, minute, second)
    }

    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy(RetryAfter.isDigit) else { return nil }
        return Int(text)
    }

    private static func isValid(_ fields: Fields) -> Bool {
        let monthLengths = [31, isLeapYear(fields.year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return (1...12).contains(fields.month) && (1...monthLengths[fields.month - 1]).contains(fields.day)
            && fields.hour < 24 && fields.minute < 60 && fields.second <= 60
    }

    private static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar.
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        Int(CivilTime.daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day)))
    }

    /// The Gregorian year in UTC of an instant in Unix epoch milliseconds.
    private static func civilYear(ofMilliseconds milliseconds: Int64) -> Int {
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds + 1) / 86_400_000 - 1
        return Int(CivilTime.civilFromDays(days).year)
    }
}
