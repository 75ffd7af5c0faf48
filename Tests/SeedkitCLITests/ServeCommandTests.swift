import Foundation
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit serve` run as a user runs it: first line, a real request, clean shutdown on SIGTERM.
@Suite("seedkit serve")
struct ServeCommandTests {
    /// Reads standard output up to the first newline (blocking reads; no sleeps).
    static func firstLine(of pipe: Pipe) -> String {
        var bytes: [UInt8] = []
        let handle = pipe.fileHandleForReading
        while !bytes.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            bytes += chunk
        }
        return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    @Test("serve prints its address first, answers connect, and exits 0 on SIGTERM")
    func serveAndStop() throws {
        let directory = try TemporaryDirectory()
        let process = Process()
        process.executableURL = SeedkitProcess.executable
        process.arguments = [
            "serve", "--dataset", RepositoryLayout.root.appendingPathComponent("seeds/demo").path, "--rows", "50",
            "--db", directory.path("server.db"), "--listen", "127.0.0.1:0", "--token-file", try directory.secretFile("alice=alice-secret"),
        ]
        process.environment = ["SEEDKIT_TOKENS": "bob=bob-secret"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try process.run()
        let line = Self.firstLine(of: output)
        let prefix = "listening on http://127.0.0.1:"
        #expect(line.hasPrefix(prefix))
        let transport = try CurlTransport(configuration: .init(baseURL: String(line.dropFirst("listening on ".count))))
        let body = Array("""
            {"client_id":"cli-1","platform":"linux","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """.utf8)
        for (secret, status) in [("alice-secret", 200), ("bob-secret", 200), ("nobody", 401)] {
            var headers = HTTPHeaders()
            headers.append(name: "Authorization", value: "Bearer \(secret)")
            headers.append(name: "Content-Type", value: "application/json")
            let reply = try transport.send(TransportRequest(
                method: .post, path: "/sync/connect", headers: headers,
                body: secret == "bob-secret" ? Array(String(decoding: body, as: UTF8.self)
                    .replacingOccurrences(of: "cli-1", with: "cli-2").utf8) : body))
            #expect(reply.status == status)
        }
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
    }

    @Test("serve refuses a missing dataset, a bad token and a bad listen address with status 2", arguments: [
        ["serve"],
        ["serve", "--dataset", "seeds/demo", "--token-file", "/nonexistent/tokens"],
        ["serve", "--dataset", "seeds/demo", "--listen", "localhost"],
        ["serve", "--dataset", "/nonexistent"],
    ])
    func usage(arguments: [String]) throws {
        let run = try SeedkitProcess.run(arguments, environment: ["SEEDKIT_TOKENS": "a=b"])
        #expect(run.status == 2)
        #expect(!run.stderrText.contains("=b"))
    }

    @Test("serve refuses no credentials and a malformed one with status 2, never echoing it")
    func credentialUsage() throws {
        let directory = try TemporaryDirectory()
        let empty = try SeedkitProcess.run(["serve", "--dataset", "seeds/demo"], environment: ["SEEDKIT_TOKENS": ""])
        #expect(empty.status == 2)
        #expect(empty.stderrText.contains("--token-file FILE"))
        let malformed = try SeedkitProcess.run(
            ["serve", "--dataset", "seeds/demo", "--token-file", try directory.secretFile("nouser-secret-9")])
        #expect(malformed.status == 2)
        #expect(!malformed.stderrText.contains("nouser-secret-9"))
    }

    @Test("a port in use is named with the OS reason, not an errno number")
    func portInUse() throws {
        let directory = try TemporaryDirectory()
        let first = Process()
        first.executableURL = SeedkitProcess.executable
        first.arguments = ["serve", "--dataset", RepositoryLayout.root.appendingPathComponent("seeds/demo").path,
                           "--rows", "10", "--db", directory.path("server.db"), "--listen", "127.0.0.1:0"]
        first.environment = ["SEEDKIT_TOKENS": "a=b"]
        let output = Pipe()
        first.standardOutput = output
        first.standardError = Pipe()
        try first.run()
        defer {
            first.terminate()
            first.waitUntilExit()
        }
        let address = String(Self.firstLine(of: output).dropFirst("listening on http://".count))
        let second = try SeedkitProcess.run(
            ["serve", "--dataset", "seeds/demo", "--rows", "10", "--listen", address],
            environment: ["SEEDKIT_TOKENS": "a=b"])
        #expect(second.status == 1)
        #expect(second.stderrText.contains("cannot listen on \(address): HTTP server could not bind its address: "
            + "Address already in use (listen_failed)"), "\(second.stderrText)")
    }

    @Test("serve refuses two sources for the operator token")
    func operatorTokenFromOneSource() throws {
        let run = try SeedkitProcess.run(
            ["serve", "--dataset", "seeds/demo", "--operator-token-env", "X", "--operator-token-file", "/dev/null"],
            environment: ["SEEDKIT_TOKENS": "a=b"])
        #expect(run.status == 2)
        #expect(!run.stderrText.contains("=b"))
    }
}
