import Foundation
import Synchronization
import SynchroClient
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// A transport that answers the next requests of a path with scripted replies (a proxy's page, a server's
/// envelope) and forwards everything else to the reference server.
final class ScriptedTransport: SyncTransport, Sendable {
    let base: CycleTransport
    private let script = Mutex<[String: [SyncReply]]>([:])
    private let scripted = Mutex<[String]>([])
    private let rewrite = Mutex<(@Sendable (String, JSONValue) -> JSONValue)?>(nil)

    init(base: CycleTransport) {
        self.base = base
    }

    /// Answers the next `replies.count` requests of `path` with `replies`, in order.
    func answer(_ path: String, with replies: [SyncReply]) {
        script.withLock { $0[path, default: []] += replies }
    }

    /// Rewrites every 200 body of the reference server before the engine sees it.
    func rewriting(_ body: @escaping @Sendable (String, JSONValue) -> JSONValue) {
        rewrite.withLock { $0 = body }
    }

    /// Paths answered from the script, in order.
    var scriptedPaths: [String] { scripted.withLock { $0 } }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        let next = script.withLock { script -> SyncReply? in
            guard var queue = script[path], !queue.isEmpty else { return nil }
            let reply = queue.removeFirst()
            script[path] = queue
            return reply
        }
        guard let next else {
            let reply = try base.post(path: path, body: body)
            guard reply.status == 200, let rewrite = rewrite.withLock({ $0 }),
                let json = try? StrictJSONParser().parse(reply.body)
            else { return reply }
            return SyncReply(
                status: 200, headers: reply.headers, body: try CanonicalJSON.encode(rewrite(path, json)))
        }
        scripted.withLock { $0.append(path) }
        return next
    }

    /// A proxy's error page: HTML, no protocol envelope.
    static func proxyPage(_ status: Int, retryAfter: String? = nil) -> SyncReply {
        SyncReply(
            status: status, headers: retryAfter.map { [("Retry-After", $0)] } ?? [("Content-Type", "text/html")],
            body: Array("<html><body><h1>\(status) Bad Gateway</h1></body></html>".utf8))
    }

    /// A protocol error envelope with the given `retryable` flag.
    static func envelope(_ status: Int, code: String, retryable: Bool, retryAfter: String? = nil) -> SyncReply {
        SyncReply(
            status: status, headers: retryAfter.map { [("Retry-After", $0)] } ?? [],
            body: Array(#"{"error":{"code":"\#(code)","message":"m","retryable":\#(retryable)}}"#.utf8))
    }
}

/// Transport as a real network behaves (issue 16 item 3, issue 19 "Retry-After capped"): the envelope's
/// `retryable` decides, a proxy's 502/503/504 page is retried, `Retry-After` is read in both forms from the
/// store's clock, and a wait longer than a run sleeps is stored instead of slept. Waits advance a manual clock.
@Suite("Transport faults")
struct TransportFaultTests {
    let clock = ManualClientClock()
    let fixture: SyncFixture
    let transport: ScriptedTransport
    let waits = WaitLog()

    init() throws {
        fixture = try SyncFixture(rows: 20, pageLimit: 40, clock: clock.clock)
        transport = ScriptedTransport(base: CycleTransport(server: fixture.server))
    }

    func cycle(maxAttempts: Int = 5, maxPages: Int = 100_000) -> SyncCycle {
        let (store, clock, waits, base) = (fixture.store, clock, waits, transport.base)
        return SyncCycle(
            context: fixture.context(over: transport),
            configuration: .init(retry: SyncRetryPolicy(maxAttempts: maxAttempts), maxPages: maxPages),
            delay: { delay in
                waits.append(Wait(delay: delay, record: (try? store.backoff()) ?? nil, requests: base.paths.count))
                clock.advance(by: delay)
            },
            random: RandomSource { 0 })
    }

    @Test("a proxy's 502, 503 and 504 pages without an envelope are retried with backoff as network failures")
    func proxyPagesRetried() throws {
        _ = try cycle().run()
        transport.answer("/sync/pull", with: [502, 503, 504].map { ScriptedTransport.proxyPage($0) })

        let summary = try cycle().run()

        #expect(transport.scriptedPaths == ["/sync/pull", "/sync/pull", "/sync/pull"])
        #expect(summary.retries == 3)
        #expect(waits.all.map(\.delay) == [.seconds(1), .seconds(2), .seconds(4)])
        #expect(waits.all.first?.record?.classification == .network)
        #expect(try fixture.store.backoff() == nil)
    }

    @Test("the envelope's retryable flag decides: false is not retried even on 503, true is retried even on 500")
    func envelopeFlagDecides() throws {
        _ = try cycle().run()
        transport.answer("/sync/pull", with: [
            ScriptedTransport.envelope(500, code: "temporary_overload", retryable: true, retryAfter: "2"),
        ])
        #expect(try cycle().run().retries == 1)
        #expect(waits.all.map(\.delay) == [.seconds(2)])

        transport.answer("/sync/pull", with: [
            ScriptedTransport.envelope(503, code: "temporary_unavailable", retryable: false),
        ])
        #expect(throws: SyncCycleError.sync(phase: .pull, .http(status: 503, code: "temporary_unavailable"))) {
            try cycle().run()
        }
        #expect(waits.all.count == 1)
    }

    @Test("an HTTP-date Retry-After is the time left until that date on the store's clock")
    func httpDateRetryAfter() throws {
        _ = try cycle().run()
        let date = Self.imfFixdate(milliseconds: (clock.milliseconds / 1000 + 30) * 1000)
        let left = Duration.milliseconds((clock.milliseconds / 1000 + 30) * 1000 - clock.milliseconds)
        transport.answer("/sync/pull", with: [
            ScriptedTransport.envelope(503, code: "temporary_unavailable", retryable: true, retryAfter: date),
        ])

        _ = try cycle().run()

        #expect(waits.all.map(\.delay) == [left])
    }

    @Test("a Retry-After longer than an hour is stored as the deadline; the run and the next end without sleeping")
    func hugeRetryAfterStoredNotSlept() throws {
        _ = try cycle().run()
        transport.answer("/sync/pull", with: [
            ScriptedTransport.envelope(429, code: "retry_later", retryable: true, retryAfter: "2147483647"),
        ])
        let failedAt = clock.milliseconds

        #expect(throws: SyncCycleError.retriesExhausted(phase: .pull, attempts: 1, status: 429)) {
            try cycle().run()
        }
        #expect(waits.all.isEmpty)
        let stored = try #require(try fixture.store.backoff())
        #expect(stored.nextRetryAtMilliseconds == failedAt + 2_147_483_647_000)
        #expect(stored.classification == .http429 && stored.resumeState == .pulling)

        // The next run sends nothing and sleeps nothing: the stored deadline is still far ahead.
        transport.base.reset()
        #expect(throws: SyncCycleError.retriesExhausted(phase: .pull, attempts: 1, status: 429)) {
            try cycle().run()
        }
        #expect(transport.base.paths.isEmpty)
        #expect(waits.all.isEmpty)
        #expect(try fixture.store.backoff() == stored)
    }

    @Test("a Retry-After of exactly the longest wait is slept through")
    func longestWaitSlept() throws {
        _ = try cycle().run()
        transport.answer("/sync/pull", with: [
            ScriptedTransport.envelope(503, code: "temporary_unavailable", retryable: true, retryAfter: "3600"),
        ])
        _ = try cycle().run()
        #expect(waits.all.map(\.delay) == [.seconds(3_600)])
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for Unix epoch milliseconds.
    static func imfFixdate(milliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    @Test(
        "scope_set_version lower than presented, or changed without a delta, is a contract error; nothing committed",
        arguments: [-1, 1])
    func scopeSetVersionChecked(shift: Int64) throws {
        _ = try cycle().run()
        let stored = try fixture.store.inspect().scopeSetVersion
        let cursorsBefore = try fixture.store.inspect().scopes
        transport.rewriting { path, json in
            guard path == "/sync/pull", let object = json.objectValue else { return json }
            return .object(JSONObject(object.members.map { member in
                member.key == "scope_set_version"
                    ? JSONMember("scope_set_version", .number(JSONNumber(stored + shift))) : member
            }))
        }
        let rule = shift < 0 ? "scope_set_version_lower" : "scope_set_version_change_without_delta"
        #expect(throws: SyncCycleError.sync(phase: .pull, .contract(rule: rule, member: "scope_set_version"))) {
            try cycle().run()
        }
        #expect(try fixture.store.inspect().scopeSetVersion == stored)
        #expect(try fixture.store.inspect().scopes == cursorsBefore)
    }

    @Test("a pull delta whose scope_set_version did not move is a contract error")
    func deltaWithoutVersionChange() throws {
        _ = try cycle().run()
        transport.rewriting { path, json in
            guard path == "/sync/pull", let object = json.objectValue else { return json }
            // A non-terminal page, so no checksum of the added scope is owed.
            return .object(JSONObject(object.members.filter { $0.key != "checksums" }.map { member in
                if member.key == "has_more" { return JSONMember("has_more", .bool(true)) }
                guard member.key == "scope_updates" else { return member }
                let add: JSONValue = .array([.object(JSONObject(["id": .string("extra"), "cursor": .null]))])
                return JSONMember("scope_updates", .object(JSONObject(["add": add, "remove": .array([])])))
            }))
        }
        #expect(throws: SyncCycleError.sync(
            phase: .pull, .contract(rule: "scope_set_delta_without_version_change", member: "scope_set_version"))
        ) {
            try cycle().run()
        }
    }

    @Test("a server that always answers has_more: the pull stops at the page cap with page_limit")
    func endlessPull() throws {
        _ = try cycle().run()
        transport.rewriting { path, json in
            guard path == "/sync/pull", let object = json.objectValue else { return json }
            // A non-terminal page carries no checksums.
            return .object(JSONObject(object.members.filter { $0.key != "checksums" }.map { member in
                member.key == "has_more" ? JSONMember("has_more", .bool(true)) : member
            }))
        }
        let pullsBefore = transport.base.paths.filter { $0 == "/sync/pull" }.count
        #expect(throws: SyncCycleError.pageLimit(phase: .pull, pages: 7)) {
            try cycle(maxPages: 7).run()
        }
        #expect(transport.base.paths.filter { $0 == "/sync/pull" }.count - pullsBefore == 7)
        #expect(SyncCycleError.pageLimit(phase: .pull, pages: 7).code == "page_limit")
    }

    @Test("a server that always answers another rebuild page: the attempt stops at the page cap with page_limit")
    func endlessRebuild() throws {
        let endless = EndlessRebuildTransport(base: transport.base)
        let (store, clock) = (fixture.store, clock)
        let cycle = SyncCycle(
            context: fixture.context(over: endless),
            configuration: .init(retry: SyncRetryPolicy(maxAttempts: 1), maxPages: 7),
            delay: { delay in clock.advance(by: delay) },
            random: RandomSource { 0 })
        #expect(throws: SyncCycleError.pageLimit(phase: .rebuild, pages: 7)) {
            try cycle.run()
        }
        // The page after the cap may be requested ahead while the seventh applies, never more.
        #expect((7...8).contains(endless.pagesSent))
        #expect(try store.inspect().scopes.allSatisfy { !$0.hasCursor })
    }
}

/// A server whose every rebuild page says there is more: an intermediate page without records under a new
/// continuation each time (connect and everything else go to the reference server).
final class EndlessRebuildTransport: SyncTransport, Sendable {
    let base: CycleTransport
    private let sent = Mutex(0)

    init(base: CycleTransport) {
        self.base = base
    }

    /// Rebuild requests answered so far.
    var pagesSent: Int { sent.withLock { $0 } }

    func post(path: String, body: [UInt8]) throws -> SyncReply {
        guard path == "/sync/rebuild" else { return try base.post(path: path, body: body) }
        let request = try StrictJSONParser().parse(body)
        let scope = request.objectValue?["scope"] ?? .null
        let page = sent.withLock { sent in
            sent += 1
            return sent
        }
        let reply: JSONValue = .object(JSONObject([
            "scope": scope, "records": .array([]), "cursor": .string("more-\(page)"), "has_more": .bool(true),
        ]))
        return SyncReply(status: 200, headers: [], body: try CanonicalJSON.encode(reply))
    }
}
