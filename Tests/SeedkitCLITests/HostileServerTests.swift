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
}
