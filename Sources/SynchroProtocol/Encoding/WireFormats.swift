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
    public static func isTimestamp(_ text: String) -> Bool { withOctets(text, isTimestamp) }

    /// `YYYY-MM-DD`, years 0000–9999, a valid proleptic Gregorian date.
    public static func isDate(_ text: String) -> Bool { withOctets(text, isDate) }

    /// `HH:MM:SS.ffffff`, hour < 24, minute < 60, second < 60, exactly six fraction digits.
    public static func isTime(_ text: String) -> Bool { withOctets(text, isTime) }

    /// Runs `check` on the UTF-8 of `text` without copying it when the string is contiguous.
    private static func withOctets(_ text: String, _ check: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        if let result = text.utf8.withContiguousStorageIfAvailable(check) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(check)
    }

    static func isTimestamp(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        guard u.count == 27, u[10] == UInt8(ascii: "T"), u[26] == UInt8(ascii: "Z") else { return false }
        return isDate(UnsafeBufferPointer(rebasing: u[0..<10])) && isTime(UnsafeBufferPointer(rebasing: u[11..<26]))
    }

    static func isDate(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        guard u.count == 10 else { return false }
        guard u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"),
              let year = digits(u, 0, 4), let month = digits(u, 5, 2), let day = digits(u, 8, 2)
        else { return false }
        guard (1...12).contains(month), day >= 1 else { return false }
        return day <= daysInMonth(year: year, month: month)
    }

    static func isTime(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        guard u.count == 15 else { return false }
        guard u[2] == UInt8(ascii: ":"), u[5] == UInt8(ascii: ":"), u[8] == UInt8(ascii: "."),
              let hour = digits(u, 0, 2), let minute = digits(u, 3, 2), let second = digits(u, 6, 2),
              digits(u, 9, 6) != nil
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

    @inline(__always)
    private static func digits(_ u: UnsafeBufferPointer<UInt8>, _ start: Int, _ count: Int) -> Int? {
        var v = 0
        for i in start..<(start + count) {
            let d = u[i] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            v = v * 10 + Int(d)
        }
        return v
    }
}
