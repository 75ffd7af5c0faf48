import Foundation
import SynchroProtocol
import SynchroServer
import Testing
import _SeedkitTestSupport

/// `seedkit sync` against a server that answers with hostile content (issue #19): what the server chose never
/// reaches the terminal as control characters.
@Suite("seedkit sync against a hostile server")
struct HostileServerTests {
    /// A server answering every request with a 400 whose error code and message carry ESC, BEL and CR.
    static func hostileServer() throws -> (HTTPServer, String) {
        let body = Array(#"{"error":{"code":"evil\u001b[2J\u0007\r","message":"\u001b]0;owned\u0007","retryable":false}}"#.utf8)
        let server = HTTPServer { _ in HTTPResponse.json(status: 400, body: body) }
        let port = try server.start(host: "127.0.0.1", port: 0)
        return (server, "http://127.0.0.1:\(port)")
    }

    @Test("an error code with ESC and BEL bytes is printed escaped, never raw, in text and verbose output")
    func controlCharactersAreEscaped() throws {
        let (server, url) = try Self.hostileServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        for extra: [String] in [[], ["--verbose"]] {
            let run = try SeedkitProcess.run(
                ["sync", "--server", url, "--db", directory.path("app.db"), "--token-file", try directory.secretFile("t-hostile")] + extra)
            #expect(run.status != 0)
            let printed = run.stdout + run.stderr
            for byte: UInt8 in [0x1B, 0x07, 0x0D] {
                #expect(!printed.contains(byte), "raw control byte \(byte) printed: \(run.stderrText)")
            }
            #expect(run.stderrText.contains(#"evil\x1B[2J\x07\x0D"#), "\(run.stderrText)")
        }
    }

    /// `[0,0,…,0]` of about `octets` octets.
    static func zeros(_ octets: Int) -> [UInt8] {
        Array(("[" + String(repeating: "0,", count: octets / 2) + "0]").utf8)
    }

    /// `body` compressed by the system's gzip (a 64 MiB run of `0,` compresses to about 65 KB).
    static func gzipped(_ body: [UInt8], in directory: TemporaryDirectory) throws -> [UInt8] {
        let path = directory.path("body.json")
        try Data(body).write(to: URL(fileURLWithPath: path))
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/bin/gzip")
        gzip.arguments = ["-9", "-n", path]
        try gzip.run()
        gzip.waitUntilExit()
        return Array(try Data(contentsOf: URL(fileURLWithPath: path + ".gz")))
    }

    /// Runs `seedkit sync` against a server answering every request with `body` and `headers` under GNU time,
    /// which reports the child's peak resident memory (`wait4`'s maximum RSS, KiB) on its last line of stderr.
    static func syncPeak(body: [UInt8], headers: HTTPHeaders) throws -> (SeedkitProcess.Outcome, Int) {
        let server = HTTPServer { _ in HTTPResponse.json(status: 200, body: body, headers: headers) }
        let port = try server.start(host: "127.0.0.1", port: 0)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let run = try SeedkitProcess.runMeasured(
            ["sync", "--server", "http://127.0.0.1:\(port)", "--db", directory.path("app.db"), "--token-env",
             "SEEDKIT_HOSTILE_TOKEN"],
            environment: ["SEEDKIT_HOSTILE_TOKEN": "t"])
        return (run.outcome, run.peakKiB)
    }

    @Test("a 65 KB gzip body that decodes to 64 MiB of [0,0,…]: refused while it decodes, peak memory < 200 MB")
    func gzipBomb() throws {
        let directory = try TemporaryDirectory()
        let bomb = try Self.gzipped(Self.zeros(64 << 20), in: directory)
        #expect(bomb.count < 200_000)
        let (run, peakKiB) = try Self.syncPeak(body: bomb, headers: [("Content-Encoding", "gzip")])
        #expect(run.status != 0)
        #expect(run.stderrText.contains("response_too_large"), "\(run.stderrText)")
        #expect(peakKiB > 0 && peakKiB < 200_000, "peak \(peakKiB) KiB")
    }

    @Test("a plain 60 MB body: refused on the wire past the route's budget, peak memory < 200 MB")
    func wideBody() throws {
        let (run, peakKiB) = try Self.syncPeak(body: Self.zeros(60_000_000), headers: [])
        #expect(run.status != 0)
        #expect(run.stderrText.contains("response_too_large"), "\(run.stderrText)")
        #expect(peakKiB > 0 && peakKiB < 200_000, "peak \(peakKiB) KiB")
    }

    @Test("a body within the byte budget but with more values than the route allows: response_too_many_values")
    func tooManyValues() throws {
        // 4 MB of `0,`: 2 million values, under connect's 8 MiB but over its 500,000 values.
        let (run, peakKiB) = try Self.syncPeak(body: Self.zeros(4_000_000), headers: [])
        #expect(run.status != 0)
        #expect(run.stderrText.contains("response_too_many_values"), "\(run.stderrText)")
        #expect(peakKiB > 0 && peakKiB < 200_000, "peak \(peakKiB) KiB")
    }

    @Test("a bearer over http:// to a host that is not this machine: a warning, and --require-tls refuses")
    func plainBearerToAnotherHost() throws {
        let directory = try TemporaryDirectory()
        // `rebuild` of a store that does not exist stops before sending anything, after the warning.
        let base = ["rebuild", "--db", directory.path("missing.db"), "--token-env", "SEEDKIT_HOSTILE_TOKEN"]
        let environment = ["SEEDKIT_HOSTILE_TOKEN": "t-plain-secret"]
        let remote = try SeedkitProcess.run(base + ["--server", "http://192.0.2.7:8080"], environment: environment)
        #expect(remote.stderrText.contains("sent unencrypted over http://"), "\(remote.stderrText)")
        #expect(!remote.stderrText.contains("t-plain-secret"))
        let refused = try SeedkitProcess.run(
            base + ["--server", "http://192.0.2.7:8080", "--require-tls"], environment: environment)
        #expect(refused.status == 2)
        #expect(refused.stderrText.contains("--require-tls"), "\(refused.stderrText)")
        for loopback in ["http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080", "https://192.0.2.7"] {
            let quiet = try SeedkitProcess.run(base + ["--server", loopback, "--require-tls"], environment: environment)
            #expect(!quiet.stderrText.contains("unencrypted"), "\(loopback): \(quiet.stderrText)")
            #expect(!quiet.stderrText.contains("--require-tls"), "\(loopback): \(quiet.stderrText)")
        }
    }
}

