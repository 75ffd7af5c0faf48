/// `Retry-After` values as the protocol reads them (`spec/wire-protocol.md` §8.3): the one parser of the package,
/// shared by the HTTP transport and the sync engine. Pure: the caller passes `now` (its own clock), which an
/// HTTP-date is measured from.
package enum RetryAfter {
    /// The largest delay returned: 2^31 seconds. Larger delta-seconds saturate, as RFC 9111 §1.2.2 tells
    /// recipients to do, rather than being rejected. How much of it a client waits for in one run is the
    /// client's policy (`SyncRetryPolicy.longestRetryAfter`), not the parser's.
    package static let maximumDelay: Duration = .seconds(2_147_483_648)

    /// The minimum delay that `value` asks for, measured from `nowMilliseconds` (Unix epoch milliseconds), or
    /// `nil` when `value` is malformed.
    ///
    /// Accepted after trimming spaces and tabs: delta-seconds (`5`), a nonnegative decimal with a fractional part
    /// (`2.5`, a compatibility form of the upstream clients), or an HTTP-date in any of the three forms of
    /// RFC 9110 §5.6.7 (a date in the past means no delay). Rejected: signs, exponents, leading zeros (`05`),
    /// `.5` and `5.`.
    package static func delay(parsing value: String, nowMilliseconds: Int64) -> Duration? {
        let bytes = trimmed(Array(value.utf8))
        guard let first = bytes.first else { return nil }
        if isDigit(first) { return seconds(bytes) }
        guard let date = HTTPDate.parse(bytes, nowMilliseconds: nowMilliseconds) else { return nil }
        let (dateMilliseconds, overflow) = date.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return maximumDelay }
        let (delta, deltaOverflow) = dateMilliseconds.subtractingReportingOverflow(nowMilliseconds)
        guard !deltaOverflow else { return maximumDelay }
        return delta > 0 ? min(.milliseconds(delta), maximumDelay) : .zero
    }

    private static func seconds(_ bytes: [UInt8]) -> Duration? {
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let integer = bytes[..<(point ?? bytes.endIndex)]
        guard !integer.isEmpty, integer.allSatisfy(isDigit), integer.count == 1 || integer.first != 0x30 else {
            return nil
        }
        var attoseconds: Int64 = 0
        if let point {
            let fraction = bytes[(point + 1)...]
            guard !fraction.isEmpty, fraction.allSatisfy(isDigit) else { return nil }
            // 18 digits of attoseconds; any further nonzero digit rounds up, as the value is a minimum.
            var scale: Int64 = 100_000_000_000_000_000
            for digit in fraction.prefix(18) {
                attoseconds += Int64(digit - 0x30) * scale
                scale /= 10
            }
            if fraction.dropFirst(18).contains(where: { $0 != 0x30 }) { attoseconds += 1 }
        }
        var whole: Int64 = 0
        for digit in integer {
            whole = whole * 10 + Int64(digit - 0x30)
            if whole >= 2_147_483_648 { return maximumDelay }
        }
        return min(Duration(secondsComponent: whole, attosecondsComponent: attoseconds), maximumDelay)
    }

    private static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return Array(bytes[first...last])
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte)
    }
}
