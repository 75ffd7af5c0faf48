import Testing

@testable import SynchroProtocol

/// 1994-11-06 08:49:37 UTC, the instant of RFC 9110's examples, in Unix epoch milliseconds.
private let example: Int64 = 784_111_777_000

@Suite("Retry-After parsing (wire-protocol §8.3)")
struct RetryAfterTests {
    @Test(
        "delta-seconds and fractional seconds give that delay",
        arguments: [
            ("5", Duration.seconds(5)), ("0", .zero), ("2.5", .milliseconds(2_500)), (" 7\t", .seconds(7)),
            ("0.25", .milliseconds(250)), ("120", .seconds(120)), ("3600", .seconds(3_600)),
        ])
    func deltaSeconds(value: String, expected: Duration) {
        #expect(RetryAfter.delay(parsing: value, nowMilliseconds: example) == expected)
    }

    @Test(
        "malformed values are rejected",
        arguments: [
            "05", ".5", "5.", "-1", "+1", "1e3", "", "  ", "5 s", "0x10", "1,5", "٣",
            "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT trailing", "Sunday, 06-Nov-1994 08:49:37 GMT",
        ])
    func malformed(value: String) {
        #expect(RetryAfter.delay(parsing: value, nowMilliseconds: example) == nil)
    }

    @Test(
        "the three HTTP-date forms give the time left until that date, measured from the given now",
        arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func httpDates(value: String) {
        #expect(RetryAfter.delay(parsing: value, nowMilliseconds: example - 10_000) == .seconds(10))
        #expect(RetryAfter.delay(parsing: value, nowMilliseconds: example - 1_500) == .milliseconds(1_500))
    }

    @Test("a leap day is a valid HTTP-date")
    func leapDay() {
        #expect(
            RetryAfter.delay(parsing: "Thu, 29 Feb 2024 00:00:00 GMT", nowMilliseconds: (1_709_164_800 - 60) * 1000)
                == .seconds(60))
    }

    @Test("a date in the past means no delay")
    func pastDate() {
        let anHourLater = example + 3_600_000
        #expect(RetryAfter.delay(parsing: "Sun, 06 Nov 1994 08:49:37 GMT", nowMilliseconds: anHourLater) == .zero)
    }

    @Test("a two-digit year more than 50 years ahead is read as the past century")
    func rfc850Century() {
        let in2020: Int64 = 1_577_836_800_000  // 2020-01-01
        // "94" would be 2094, 74 years ahead: it is 1994, in the past.
        #expect(RetryAfter.delay(parsing: "Sunday, 06-Nov-94 08:49:37 GMT", nowMilliseconds: in2020) == .zero)
        // "30" is 2030, within 50 years: about ten years ahead.
        let delay = RetryAfter.delay(parsing: "Tuesday, 01-Jan-30 00:00:00 GMT", nowMilliseconds: in2020)
        #expect(delay == .seconds(1_893_456_000 - 1_577_836_800))
    }

    @Test(
        "huge values saturate at 2^31 seconds instead of failing; the parser itself does not cap",
        arguments: [
            ("99999999999999999999999", RetryAfter.maximumDelay), ("2147483647", .seconds(2_147_483_647)),
            ("3601", .seconds(3_601)), ("Fri, 31 Dec 9999 23:59:59 GMT", RetryAfter.maximumDelay),
        ])
    func saturation(value: String, expected: Duration) {
        #expect(RetryAfter.delay(parsing: value, nowMilliseconds: example) == expected)
    }
}

/// The IMF-fixdate a server (the reference server's proxy fault) writes, read back by the one parser.
@Suite("HTTP-date formatting")
struct HTTPDateFormatTests {
    @Test("RFC 9110's example instant formats exactly, and every formatted instant parses back to itself")
    func formatRoundTrips() {
        #expect(HTTPDate.format(secondsSinceEpoch: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(secondsSinceEpoch: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        for seconds: Int64 in [0, 86_399, 951_782_400, 1_798_675_200, 4_102_444_799] {
            let text = HTTPDate.format(secondsSinceEpoch: seconds)
            #expect(HTTPDate.parse(Array(text.utf8), nowMilliseconds: 0) == seconds, "\(text)")
        }
    }
}
