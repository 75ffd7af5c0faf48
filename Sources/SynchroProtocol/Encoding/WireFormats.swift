/// Lexical checks shared by values and envelopes: UUIDs and the protocol's timestamp forms.
public enum WireFormats {
    /// Canonical lowercase hyphenated UUID (`8-4-4-4-12`), not the nil UUID (`spec/wire-protocol.md` §2.4).
    public static func isCanonicalUUID(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count == 36 else { return false }
        var allZero = true
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return false }
                continue
            }
            switch c {
            case UInt8(ascii: "0"): break
            case UInt8(ascii: "1")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): allZero = false
            default: return false
            }
        }
        return !allZero
    }

    /// `YYYY-MM-DDTHH:MM:SS.ffffffZ`: exactly 27 characters, valid proleptic Gregorian date,
    /// no leap second (the `datetime` type and every wire timestamp).
    public static func isTimestamp(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count == 27, u[10] == UInt8(ascii: "T"), u[26] == UInt8(ascii: "Z") else { return false }
        return isDate(u[0..<10]) && isTime(u[11..<26])
    }

    /// `YYYY-MM-DD`, years 0000–9999, a valid proleptic Gregorian date.
    public static func isDate(_ text: String) -> Bool { isDate(Array(text.utf8)[...]) }

    /// `HH:MM:SS.ffffff`, hour < 24, minute < 60, second < 60, exactly six fraction digits.
    public static func isTime(_ text: String) -> Bool { isTime(Array(text.utf8)[...]) }

    static func isDate(_ u: ArraySlice<UInt8>) -> Bool {
        guard u.count == 10 else { return false }
        let b = u.startIndex
        guard u[b + 4] == UInt8(ascii: "-"), u[b + 7] == UInt8(ascii: "-"),
              let year = digits(u, b, 4), let month = digits(u, b + 5, 2), let day = digits(u, b + 8, 2)
        else { return false }
        guard (1...12).contains(month), day >= 1 else { return false }
        return day <= daysInMonth(year: year, month: month)
    }

    static func isTime(_ u: ArraySlice<UInt8>) -> Bool {
        guard u.count == 15 else { return false }
        let b = u.startIndex
        guard u[b + 2] == UInt8(ascii: ":"), u[b + 5] == UInt8(ascii: ":"), u[b + 8] == UInt8(ascii: "."),
              let hour = digits(u, b, 2), let minute = digits(u, b + 3, 2), let second = digits(u, b + 6, 2),
              digits(u, b + 9, 6) != nil
        else { return false }
        return hour < 24 && minute < 60 && second < 60
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func digits(_ u: ArraySlice<UInt8>, _ start: Int, _ count: Int) -> Int? {
        var v = 0
        for i in start..<(start + count) {
            let d = u[i] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            v = v * 10 + Int(d)
        }
        return v
    }
}
