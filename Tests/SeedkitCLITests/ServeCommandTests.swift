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

    @Test("two serve --store processes on one PostgreSQL database: a push applied by one is a replay on the other")
    func twoProcessesOnPostgres() throws {
        let cluster = try PostgresCluster.shared()
        let database = try RunningServer.newPostgresDatabaseName()
        let uri = "postgresql://\(PostgresCluster.superuser):\(PostgresCluster.superuserPassword)@127.0.0.1:"
            + "\(cluster.port)/\(database)"
        var processes: [(Process, Pipe, Pipe)] = []
        defer {
            for (process, _, _) in processes where process.isRunning { process.terminate() }
        }
        var transports: [CurlTransport] = []
        let secrets = try TemporaryDirectory(prefix: "serve-store-tokens")
        try "alice=alice-secret\n".write(toFile: secrets.path("tokens"), atomically: true, encoding: .utf8)
        for _ in 0..<2 {
            let process = Process()
            process.executableURL = SeedkitProcess.executable
            process.arguments = [
                "serve", "--verbose", "--dataset", RepositoryLayout.root.appendingPathComponent("seeds/demo").path,
                "--rows", "50", "--store", uri, "--listen", "127.0.0.1:0", "--token-file", secrets.path("tokens"),
            ]
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            processes.append((process, output, errors))
            let line = Self.firstLine(of: output)
            try #require(line.hasPrefix("listening on http://127.0.0.1:"), "serve --store did not start: \(line)")
            transports.append(try CurlTransport(configuration: .init(baseURL: String(line.dropFirst("listening on ".count)))))
        }
        func post(_ transport: CurlTransport, _ path: String, _ body: String) throws -> TransportResponse {
            try transport.send(.protocolPost(
                path: path, body: Array(body.utf8), credential: "alice-secret", appVersion: "1.0.0"))
        }
        let connect = try post(transports[0], "/sync/connect", """
            {"client_id":"cli-pg","platform":"linux","app_version":"1.0.0","protocol_version":3,\
            "schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
            """)
        #expect(connect.status == 200)
        let object = try StrictJSONParser().parse(connect.body).objectValue ?? JSONObject([])
        let generation = object["client_generation"]?.numberValue?.literal ?? "0"
        let schema = try CanonicalJSON.string(.object(JSONObject([
            JSONMember("version", object["schema"]?.objectValue?["version"] ?? .null),
            JSONMember("hash", object["schema"]?.objectValue?["hash"] ?? .null),
        ])))
        let push = """
            {"client_id":"cli-pg","client_generation":\(generation),"batch_id":"\(UUID().uuidString.lowercased())","schema":\(schema),"mutations":[\
            {"mutation_id":"\(UUID().uuidString.lowercased())","table":"tbl_notes","pk":{"fld_note_id":"note-cli-pg"},"authored_schema":\(schema),\
            "op":"insert","client_version":"2026-11-29T10:00:00.000000Z",\
            "columns":{"fld_note_owner":"alice","fld_note_title":"hello","fld_note_pinned":false}}]}
            """
        let applied = try post(transports[0], "/sync/push", push)
        let replayed = try post(transports[1], "/sync/push", push)
        #expect(applied.status == 200)
        #expect(replayed.status == applied.status)
        #expect(replayed.body == applied.body, "the second process applied the push again")
        for (process, output, errors) in processes {
            process.terminate()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile()
                + errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(!printed.contains(PostgresCluster.superuserPassword), "serve printed the password")
            #expect(printed.contains("PostgreSQL"))
        }
    }

    @Test("serve refuses --db with --store, and a --store that is no connection string, with status 2", arguments: [
        ["serve", "--dataset", "seeds/demo", "--db", "x.db", "--store", "postgresql://u@h/d"],
        ["serve", "--dataset", "seeds/demo", "--store", "server.db"],
    ])
    func storeUsage(arguments: [String]) throws {
        let run = try SeedkitProcess.run(arguments, environment: ["SEEDKIT_TOKENS": "a=b"])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("--store"), "\(run.stderrText)")
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
