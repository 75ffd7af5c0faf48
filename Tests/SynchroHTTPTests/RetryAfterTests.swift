import Foundation
import SynchroHTTP
import SynchroServer
import Testing

/// 1994-11-06 08:49:37 UTC, the instant of RFC 9110's examples.
private let exampleInstant = Date(timeIntervalSince1970: 784_111_777)

@Suite("Retry-After parsing (wire-protocol §8.3)")
struct RetryAfterTests {
    @Test(
        "delta-seconds and fractional seconds give that delay",
        arguments: [
            ("5", Duration.seconds(5)), ("0", .zero), ("2.5", .milliseconds(2_500)), (" 7\t", .seconds(7)),
            ("0.25", .milliseconds(250)), ("120", .seconds(120)),
        ])
    func deltaSeconds(value: String, expected: Duration) {
        #expect(RetryAfter.delay(parsing: value, now: exampleInstant) == expected)
    }

    @Test(
        "malformed values are rejected",
        arguments: [
            "05", ".5", "5.", "-1", "+1", "1e3", "", "  ", "5 s", "0x10", "1,5", "٣",
            "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
        ])
    func malformed(value: String) {
        #expect(RetryAfter.delay(parsing: value, now: exampleInstant) == nil)
    }

    @Test("the three HTTP-date forms give the time left until that date")
    func httpDates() {
        let tenSecondsBefore = exampleInstant.addingTimeInterval(-10)
        for value in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(RetryAfter.delay(parsing: value, now: tenSecondsBefore) == .seconds(10), "\(value)")
        }
        #expect(
            RetryAfter.delay(
                parsing: "Thu, 29 Feb 2024 00:00:00 GMT", now: Date(timeIntervalSince1970: 1_709_164_800 - 60))
                == .seconds(60))
    }

    @Test("a date in the past means no delay")
    func pastDate() {
        let later = exampleInstant.addingTimeInterval(3_600)
        #expect(RetryAfter.delay(parsing: "Sun, 06 Nov 1994 08:49:37 GMT", now: later) == .zero)
    }

    @Test("a two-digit year more than 50 years ahead is read as the past century")
    func rfc850Century() {
        let in2020 = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01
        // "94" would be 2094, 74 years ahead: it is 1994, in the past.
        #expect(RetryAfter.delay(parsing: "Sunday, 06-Nov-94 08:49:37 GMT", now: in2020) == .zero)
        // "30" is 2030, within 50 years: about ten years ahead.
        let delay = RetryAfter.delay(parsing: "Tuesday, 01-Jan-30 00:00:00 GMT", now: in2020)
        #expect(delay == .seconds(1_893_456_000 - 1_577_836_800))
    }

    @Test("huge delta-seconds saturate at 2^31 seconds instead of failing")
    func saturation() {
        #expect(RetryAfter.delay(parsing: "99999999999999999999999", now: exampleInstant) == RetryAfter.maximumDelay)
        #expect(RetryAfter.delay(parsing: "2147483647", now: exampleInstant) == .seconds(2_147_483_647))
    }

    @Test("a 503 response's single Retry-After is read; a repeated one is ignored")
    func fromResponse() throws {
        let handler = HTTPClosureHandler { request in
            var response = HTTPResponse.jsonError(
                status: 503, code: "capture_pending", message: "capture pending", retryable: true,
                headers: [("Retry-After", "5")])
            if request.path == "/twice" { response.headers.append(name: "Retry-After", value: "6") }
            return response
        }
        try withLoopbackServer(handler: handler) { _, transport in
            let once = try transport.send(.get("/once"))
            #expect(once.status == 503)
            #expect(once.retryAfter(now: exampleInstant) == .seconds(5))
            let twice = try transport.send(.get("/twice"))
            #expect(twice.headers.values(for: "Retry-After") == ["5", "6"])
            #expect(twice.retryAfter(now: exampleInstant) == nil)
        }
    }
}
