import Foundation
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// Network failures that say what to fix (issue #18 item 3; docs/cli.md "Network failures, retries and timeouts"):
/// each names the URL (no query, no credentials) and its kind as a rule, the same in text and `--json`; transient
/// kinds are retried visibly (one line per retry on standard error, one JSON event), exhausted retries exit 4
/// naming the last kind, DNS and TLS failures fail at once. Retry waits are replaced by the test hook
/// `SEEDKIT_TEST_RETRY_WAIT_MS=0`, so nothing here sleeps.
@Suite("seedkit: network failures, retries and timeouts")
struct NetworkFailureCLITests {
    static let noWait = ["SEEDKIT_TEST_RETRY_WAIT_MS": "0", "SEEDKIT_TOKEN": "t", "SEEDKIT_OPERATOR_TOKEN": "o"]

    static func objects(_ run: SeedkitProcess.Outcome) -> [JSONObject] {
        run.lines.compactMap { try? StrictJSONParser().parse(Array($0.utf8)).objectValue }
    }

    static func retryLines(_ run: SeedkitProcess.Outcome) -> [String] {
        run.stderrText.split(separator: "\n").map(String.init).filter { $0.contains("retrying in") }
    }

    @Test("sync to a refused loopback port: each retry is shown, then exit 4 naming connection_refused and the URL")
    func refusedSync() throws {
        let directory = try TemporaryDirectory()
        let port = try SilentListener.refusedPort()
        let run = try SeedkitProcess.run(
            ["sync", "--server", "http://127.0.0.1:\(port)", "--db", directory.path("app.db"), "--retries", "2",
             "--json"],
            environment: Self.noWait)
        #expect(run.status == 4, "\(run.status): \(run.stderrText)")
        let url = "http://127.0.0.1:\(port)/sync/connect"
        let lines = Self.retryLines(run)
        #expect(lines.count == 2, "\(run.stderrText)")
        #expect(lines.first?.contains("attempt 1 of 3 failed: connection_refused at \(url); retrying in") == true)
        let events = Self.objects(run).filter { $0["event"]?.stringValue == "retry_scheduled" }
        #expect(events.count == 2)
        #expect(events.first?["rule"]?.stringValue == "connection_refused")
        #expect(events.first?["url"]?.stringValue == url)
        #expect(events.first?["attempts"]?.numberValue?.exactInt64 == 3)
        let error = try #require(Self.objects(run).last)
        #expect(error["rule"]?.stringValue == "retries_exhausted")
        #expect(error["last_rule"]?.stringValue == "connection_refused")
        #expect(error["message"]?.stringValue?.contains(url) == true)
        #expect(run.stderrText.contains("connection refused") && run.stderrText.contains("(retries_exhausted)"))
    }

    @Test("sync to a name that cannot resolve (RFC 6761 .invalid) fails at once with dns_failure and the URL")
    func unresolvableName() throws {
        let directory = try TemporaryDirectory()
        let run = try SeedkitProcess.run(
            ["sync", "--server", "http://seedkit-test.invalid", "--db", directory.path("app.db"), "--json"],
            environment: Self.noWait)
        #expect(run.status == 1, "\(run.status): \(run.stderrText)")
        #expect(Self.retryLines(run).isEmpty, "a DNS failure is not retried: \(run.stderrText)")
        let error = try #require(Self.objects(run).last)
        #expect(error["rule"]?.stringValue == "dns_failure")
        #expect(error["message"]?.stringValue?.contains("http://seedkit-test.invalid/sync/connect") == true)
        #expect(run.stderrText.contains("(dns_failure)") && run.stderrText.contains("does not resolve"))
    }

    @Test("export over https to a plain HTTP loopback server is tls_failure, at once, naming the URL")
    func tlsFailure() throws {
        let server = HTTPServer(handler: HTTPClosureHandler { _ in HTTPResponse(status: 200) })
        let port = try server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let run = try SeedkitProcess.run(
            ["export", "--source", "https://127.0.0.1:\(port)", "--out", directory.path("seed.db"), "--json"],
            environment: Self.noWait)
        #expect(run.status == 1, "\(run.status): \(run.stderrText)")
        #expect(Self.retryLines(run).isEmpty, "\(run.stderrText)")
        let error = try #require(Self.objects(run).last?["error"]?.objectValue)
        #expect(error["rule"]?.stringValue == "tls_failure")
        #expect(error["message"]?.stringValue?.contains("https://127.0.0.1:\(port)/sync/schema") == true)
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))
        // The same rule in text mode, with the URL.
        let text = try SeedkitProcess.run(
            ["export", "--source", "https://127.0.0.1:\(port)", "--out", directory.path("seed.db")],
            environment: Self.noWait)
        #expect(text.status == 1)
        #expect(text.stderrText.contains("(tls_failure)"), "\(text.stderrText)")
        #expect(text.stderrText.contains("https://127.0.0.1:\(port)/sync/schema"), "\(text.stderrText)")
    }

    @Test("a server that accepts and never answers: --timeout ends each attempt, the retries are shown, exit 4")
    func silentServer() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let directory = try TemporaryDirectory()
        let run = try SeedkitProcess.run(
            ["export", "--source", "http://127.0.0.1:\(listener.port)", "--out", directory.path("seed.db"),
             "--timeout", "1", "--retries", "1", "--json"],
            environment: Self.noWait)
        #expect(run.status == 4, "\(run.status): \(run.stderrText)")
        let url = "http://127.0.0.1:\(listener.port)/sync/schema"
        #expect(Self.retryLines(run).count == 1)
        #expect(run.stderrText.contains("attempt 1 of 2 failed: timeout at \(url)"), "\(run.stderrText)")
        // The JSON retry event goes to standard error: standard output stays the one error document.
        #expect(run.stderrText.contains("\"event\":\"retry\""))
        #expect(run.lines.count == 1)
        let error = try #require(Self.objects(run).last?["error"]?.objectValue)
        #expect(error["rule"]?.stringValue == "timeout")
        #expect(error["exit_status"]?.numberValue?.exactInt64 == 4)
        #expect(error["message"]?.stringValue?.contains("after 2 attempts") == true)
    }

    @Test("a delta export from a server that never answers ends at --timeout with the timeout rule, nothing published")
    func silentDeltaSource() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let directory = try TemporaryDirectory()
        let definition = directory.path("source.json")
        try Data("""
            {"format": "seedkit-delta-source/1", "base_url": "http://127.0.0.1:\(listener.port)",
             "entities": [{"name": "rows", "table": "rows", "primary_key": "id",
               "columns": [{"name": "id", "type": "string"}],
               "paging": {"shape": "changes", "path": "/v1/sync/rows", "limit": 100}}]}
            """.utf8).write(to: URL(fileURLWithPath: definition))
        let started = ContinuousClock.now
        let run = try SeedkitProcess.run(
            ["export", "--source", "delta:" + definition, "--out", directory.path("seed.db"), "--timeout", "1",
             "--json"],
            environment: Self.noWait)
        // Without --timeout the request would wait the default 60 s; a generous bound, not a timing assertion.
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(run.status == 1, "\(run.status): \(run.stderrText)")
        let error = try #require(Self.objects(run).last?["error"]?.objectValue)
        #expect(error["rule"]?.stringValue == "timeout", "\(run.stdoutText)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("seed.db")))
    }

    @Test("pipeline run against a refused server source: retry events in the stream, exit 4 with connection_refused")
    func refusedPipelineSource() throws {
        let directory = try TemporaryDirectory()
        let port = try SilentListener.refusedPort()
        let file = directory.path("pipeline.json")
        try Data("""
            {"source": {"server": {"url": "http://127.0.0.1:\(port)", "operator_token_env": "SEEDKIT_OPERATOR_TOKEN"}},
             "steps": ["export"], "publish": {"directory": "out"}}
            """.utf8).write(to: URL(fileURLWithPath: file))
        let run = try SeedkitProcess.run(
            ["pipeline", "run", file, "--retries", "1", "--json"], environment: Self.noWait)
        #expect(run.status == 4, "\(run.status): \(run.stderrText)")
        let objects = Self.objects(run)
        let retry = try #require(objects.first { $0["event"]?.stringValue == "retry" })
        #expect(retry["rule"]?.stringValue == "connection_refused")
        #expect(retry["url"]?.stringValue == "http://127.0.0.1:\(port)/sync/schema")
        #expect(objects.last?["rule"]?.stringValue == "connection_refused")
        #expect(Self.retryLines(run).count == 1)
    }

    @Test("a step whose requests outlast --retries (the rehearsal's connect answered 503) exits 4 with the step's rule")
    func exhaustedRetriesInAStep() throws {
        let server = try RunningServer(rows: 20)
        // The export's operator routes answer; every connect of the rehearsal meets a proxy's 503.
        try server.engine.inject(.proxyError(route: "/sync/connect", count: 100, status: 503, retryAfter: .none))
        let directory = try TemporaryDirectory()
        let file = directory.path("pipeline.json")
        try Data("""
            {"source": {"server": {"url": "\(server.baseURL)", "operator_token_env": "TEST_OPERATOR",
                                   "user_token_env": "TEST_USER"}},
             "steps": ["export", "verify", "pack", "install", "rehearse"], "publish": {"directory": "out"}}
            """.utf8).write(to: URL(fileURLWithPath: file))
        let environment = Self.noWait.merging(
            ["TEST_OPERATOR": RunningServer.operatorToken, "TEST_USER": "secret-alice"]) { $1 }
        let run = try SeedkitProcess.run(["pipeline", "run", file, "--retries", "1", "--json"], environment: environment)
        #expect(run.status == 4, "\(run.status): \(run.stderrText)")
        let last = try #require(Self.objects(run).last)
        #expect(last["event"]?.stringValue == "error", "\(run.stdoutText)")
        #expect(last["exit_status"]?.numberValue?.exactInt64 == 4)
        #expect(run.stderrText.contains("failed at rehearse"), "\(run.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("out")))
    }

    @Test(
        "--timeout and --retries are checked as usage",
        arguments: [["--timeout", "0"], ["--retries", "11"], ["--timeout", "x"]])
    func usage(option: [String]) throws {
        let directory = try TemporaryDirectory()
        let run = try SeedkitProcess.run(
            ["sync", "--server", "http://127.0.0.1:9", "--db", directory.path("app.db"), "--json"] + option,
            environment: Self.noWait)
        #expect(run.status == 2, "\(run.stderrText)")
        #expect(run.stderrText.contains(option[0]))
    }
}
